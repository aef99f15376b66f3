package train

import (
	"context"
	"fmt"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/workloads/data"
	"github.com/distbench/distbench/workloads/nn"
)

// paramServer trains the parameter server's way: the servers hold the
// parameters and run the optimizer; each step a worker pushes its gradient
// and pulls the parameters back. With the strategy's staleness option at 0
// (mode ps-sync) a pull waits for every worker's gradient of that step, so
// the replicas stay identical; with staleness s > 0 (ps-async) a worker may
// run up to s steps ahead of the slowest, and replicas may differ. Each
// push carries the step's learning rate, so the servers follow the
// schedule.
type paramServer struct {
	comm   collective.Comm
	server collective.ParamServer
	opt    collective.SGD
	steps  int
	inited bool
}

const paramsKey = "params"

func newParamServer(cfg Config, comm collective.Comm) (*paramServer, error) {
	server, ok := comm.(collective.ParamServer)
	if !ok {
		return nil, fmt.Errorf("mode %s needs the ps strategy (its servers hold the parameters), not %s", cfg.Mode, comm.Strategy())
	}
	return &paramServer{comm: comm, server: server, opt: collective.SGD{Momentum: float32(cfg.Momentum)}}, nil
}

func (p *paramServer) step(ctx context.Context, net *nn.Net, b *data.Batch, lr float64) (*stepStats, error) {
	if !p.inited {
		// Rank 0's weights become every replica's, on the servers too.
		if err := p.server.InitParams(ctx, paramsKey, net.Data, p.opt); err != nil {
			return nil, err
		}
		p.inited = true
	}
	st := &stepStats{start: time.Now()}
	net.ZeroGrad()
	st.loss, _ = net.ForwardBackward(&nn.Tensor{Shape: b.Shape[:], Data: b.X}, b.Labels)
	st.computeMs = msSince(st.start)
	commStart := time.Now()
	if err := p.server.PushGrad(ctx, paramsKey, net.Grad, p.steps, float32(lr)); err != nil {
		return nil, err
	}
	if err := p.server.PullParams(ctx, paramsKey, net.Data, p.steps); err != nil {
		return nil, err
	}
	p.steps++
	st.commMs = msSince(commStart)
	st.exposedMs = st.commMs
	st.updateStart = time.Now()
	return st, nil
}

// updatesLocally: the servers run the optimizer, not the workers.
func (p *paramServer) updatesLocally() bool { return false }

package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/distbench/distbench/collective"
	"github.com/distbench/distbench/collective/driver"
	"github.com/distbench/distbench/internal/core"
	"github.com/distbench/distbench/internal/transport"
)

// waitThenCancel's broadcast posts a receive, waits for it (it fails: the
// peer never sends), then cancels it, as an algorithm that gives up does.
type waitThenCancel struct{ core.Simple }

func (waitThenCancel) Broadcast(c *core.Call, t collective.Tensor, root int) error {
	reduce := c.Rank() == 1
	var rv *core.Posted
	if reduce {
		rv = c.PostRecvReduce(0, 0, t.Data, t.DType, collective.Sum)
	} else {
		rv = c.PostRecv(1, 0, t.Data)
	}
	err := rv.Wait()
	rv.Cancel()
	rv.Cancel()
	rv.Wait()
	return err
}

// A posted receive that failed can be cancelled (twice) and waited for
// again without hanging.
func TestPostedCancelAfterFailedWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(driver.Transport) driver.Transport
	}{
		{"poster", func(tr driver.Transport) driver.Transport { return tr }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trs := transport.NewMemWorld(2, transport.MemOptions{})
			errs := make(chan error, 2)
			for r := range 2 {
				g, err := core.New("test", collective.Config{Rank: r, Size: 2, Transport: tc.wrap(trs[r]), Timeout: 100 * time.Millisecond},
					func(*core.Group) (core.Algorithms, error) { return waitThenCancel{}, nil })
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				go func() {
					errs <- g.Broadcast(context.Background(), collective.NewTensor(collective.Float32, 8), 0)
				}()
			}
			for range 2 {
				select {
				case err := <-errs:
					if err == nil {
						t.Error("a receive nobody sent to succeeded")
					}
				case <-time.After(20 * time.Second):
					t.Fatal("Cancel after a failed Wait hangs")
				}
			}
		})
	}
}

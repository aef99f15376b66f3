// Package costmodel predicts how long distbench's collectives take at sizes and
// world sizes it cannot run here, and says how far to trust the answer.
//
// It has three parts that share one parameter set per network shape
// ([Params]: α per message, latency per hop, β per byte on the wire, γ per
// byte reduced):
//
//   - closed forms for every algorithm the strategies run ([Algorithms];
//     derivations in docs/design/costmodel.md);
//   - an event-graph simulator ([Simulate]) driven by the message schedules
//     the strategies compile, generated here by the same rules as the
//     strategies' code and checked message for message against the real
//     code's recorded schedules at small np (schedule_test.go), over a
//     topology of hosts × ranks per host, an oversubscribed spine and
//     stragglers;
//   - calibration ([Fit]): robust least squares of the closed forms against
//     a sweep's results, with bootstrap intervals from its rounds.
//
// # Usage
//
//	p := model.Params{Alpha: 20e-6, Latency: 25e-6, Beta: 8e-9, Gamma: 0.3e-9}
//	a, _ := model.Lookup("ring/rsag")
//	t := a.Closed(p, 8, 1<<20)             // seconds, flat network
//	r, _ := model.Simulate(a.Program(8, 1<<20), model.Flat(8, p))
//	fmt.Println(t, r.Time)
package costmodel

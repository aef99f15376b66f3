// Package train runs synchronous data-parallel SGD through any strategy, on
// real models and real data, and reports what communication cost.
//
// Each rank trains a replica of the same model on its shard of every epoch
// (data.DistributedSampler); gradients are averaged across ranks through the
// collective API, so every rank applies the same update and the replicas stay
// bit-identical. Modes:
//
//   - "tutorial": the classic distributed-SGD tutorial's average_gradients:
//     after backward, allreduce every parameter's gradient one by one, then
//     average. All of its communication is exposed.
//   - "ddp": PyTorch DistributedDataParallel's way: gradients grouped into
//     buckets (25 MiB by default, the first 1 MiB, in the order backward
//     produces them); each bucket's asynchronous allreduce starts the moment
//     its last gradient is ready, so communication overlaps the rest of
//     backward and only its tail is exposed.
//   - "dp": torch.nn.DataParallel's way, one rank for each device and rank
//     0 for the master: every step the master broadcasts its parameters
//     and buffers, scatters the global batch, gathers the outputs,
//     computes the loss of the whole batch and scatters its gradient back,
//     and takes the gradients summed by a reduce; only the master steps
//     the optimizer. It learns exactly what ddp learns (the gradient of the
//     same global batch, up to float rounding), but nothing overlaps and
//     every byte goes through the master. Any strategy.
//   - "ps-sync", "ps-async" (strategy ps): the parameter servers hold the
//     parameters and run the optimizer; workers push gradients and pull
//     parameters (collective.ParamServer), synchronously or with bounded staleness.
//
// The learning rate follows Config.LRSchedule (step, multistep, cosine),
// optionally after a linear warm-up (Config.LRWarmup), stepped once per
// epoch as torch's schedulers are: the workers' optimizer takes it at the
// start of each epoch, and in the ps modes every gradient push carries it
// to the servers.
//
// Per step it records the loss, the learning rate, compute time (forward +
// backward + update), communication time (from each bucket's start to its
// completion, serialised as the strategy runs them), exposed communication
// (what the step waited for after backward), and images/s, and, in dp, each
// transfer's time (results.Record.TransferMs); per epoch, test loss and
// accuracy, every rank's median time blocked on communication (in dp, the
// other ranks' wait for the master) and, where the strategy counts them,
// every rank's bytes sent and received per step.
package train

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
// (what the step waited for after backward), and images/s; per epoch, test
// loss and accuracy.
package train

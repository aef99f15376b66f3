// Package linkspec is the vocabulary of the network a job runs on: link
// shapes as --link and plans write them ("10Gbit,25us", presets, per-rank
// overrides "10g;rank3=1Gbit") and the transports --transport names (auto,
// tcp, shm). It parses, checks and prints them, and nothing else: the TCP
// transport (internal/transport) shapes its traffic by a Link, while
// reports, plans and job specs read and compare links without importing
// the transport.
package linkspec

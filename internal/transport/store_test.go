package transport

import "github.com/distbench/distbench/internal/rendezvous"

// newMemStore is the rendezvous store the in-process meshes of these tests share.
func newMemStore() *rendezvous.MemStore { return rendezvous.NewMemStore() }

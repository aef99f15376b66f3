// Package driver is the contract between the collective API and what
// implements it, as database/sql/driver is for database/sql: the interfaces
// a transport, a rendezvous store and a strategy's server processes
// implement, and the optional interfaces an implementation may add.
//
// Users of the API need none of it beyond passing a Transport and a Store
// in collective.Config; strategies and transports import it. It imports
// nothing of distbench, so that the API can name its types: where the
// contract needs a reduction (a transport that reduces as it receives), it
// takes a [Reduction] the engine builds from the API's dtype and op.
package driver

// Package softfabric is an in-process software RDMA fabric: a
// verbs.Provider (Fabric, NewFabric) with the semantics of an RC queue
// pair on a real device, fault injection (SetFaults: disconnects, slow
// completions, late acknowledgements, lost Sends, bad rkeys;
// DisableWindows) and
// counters of live objects and moved bytes (Stats, Moved, WindowOps), so
// that the RPC-over-RDMA transports, the NFS client and the daemon are
// tested over RDMA with plain go test. It is for tests only: no
// production binary links it. It passes the same conformance suite as a
// real device (verbs/verbstest).
//
// It reaches no verbs internals: MRs and Windows are made with
// verbs.NewMR and verbs.NewWindow, and the fabric keeps its own state of
// each (keys, bounds, bindings, invalidation) in per-Conn tables guarded
// by the link's mutex.
//
// # Buffer ownership
//
// As in verbs: a buffer named by a posted WR belongs to the fabric until
// its Completion is polled (or Close returns); a region whose rkey the
// peer holds may be read or written by the peer's RDMA operations, which
// run on the peer Conn's worker goroutine under the link's mutex.
// Registered memory is anonymous mmap outside the Go heap (Go heap where
// mmap is missing) and is freed by Deregister; a RegisterRange
// registration shares its parent's memory and frees none. Private data
// passed to Dial, Accept and Reject is copied.
package softfabric

// Package client is the RPC-over-RDMA version 1 client transport: an
// oncrpc.Caller over the verbs API (real RDMA or the software fabric)
// that marshals calls the way the Linux client's rpcrdma_marshal_req
// does, for gonfsrdma's own client (nfsclient), the conformance suite and
// tests, plus raw round trips for hand-built headers. The protocol is
// package rpcrdma/proto, shared with the server (package rpcrdma); this
// package knows nothing of the server's internals.
//
// # Files
//
//   - client.go: Dial, Call and CallWith, marshaling, reply decoding, raw
//     round trips, registered Buffers for hand-built chunks.
//   - client_keys.go: per-call memory keys (memory windows, or per-call
//     registrations where windows do not bound access).
//   - credits.go: calls in flight bounded by the server's grant.
//
// # Buffer ownership
//
//   - The client registers one Receive and one Send buffer per credit and,
//     lazily per call slot, an "out" region the server RDMA-Reads Read
//     chunks from and an "in" region it RDMA-Writes Write and Reply chunks
//     into. A slot belongs to one call from credit acquisition until the
//     reply has been consumed, the Send has completed and its keys are
//     invalidated.
//   - A slot's regions have no remote access of their own; a call exposes
//     what it advertises through memory windows bound with fresh rkeys
//     before its Send and invalidated (Send-With-Invalidate from the
//     server, else a local invalidate whose completion is awaited) before
//     its reply is decoded and before the slot is reused. A call whose
//     context ends first leaves its slot to the completion loop, which
//     invalidates and frees it when the reply comes. On a device without
//     usable windows (none, or windows that do not bound access to their
//     range, as rxe's) the call registers exactly the advertised bytes
//     instead (verbs.RegisterRange) and deregisters them at the same
//     points; chosen once per connection (probeWindows).
//   - Results are copied out (or appended to ClientCall.ReplyBuf), so
//     callers own what Call returns. A Write-chunk payload that a
//     call's ReplySink accepts is written into its file from the "in"
//     region, after the call's keys are invalidated and before the slot
//     is freed, and copied nowhere else. Close frees every region and window
//     after the queue pair is closed and no call is still running.
package client

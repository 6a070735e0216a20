// Package rpcrdma is RPC-over-RDMA version 1 (RFC 8166) for gonfsrdma: the
// server transport that the Linux NFS client mounts with proto=rdma, and a
// client transport (an oncrpc.Caller) for tests and tools, both over the
// verbs API (real RDMA or the in-process software fabric). It speaks the
// RFC 8797 connection private data and places NFSv3 data per RFC 8267
// (WRITE data by Read chunk, READ data by Write chunk).
//
// # Roles (one file each, as in the kernel's svcrdma)
//
//   - header.go: rdma_msg marshal/unmarshal, RDMA_ERROR, private data.
//   - chunks.go: validation of a decoded header (positions, counts,
//     totals) before any chunk is used; failures become ERR_CHUNK.
//   - transport.go: listen, accept (Receives posted before Accept), the
//     per-connection completion loop, drain and teardown.
//   - recv.go: per-call decode, Read-chunk pull and call assembly, dispatch.
//   - send.go: reply shape (inline, Write chunk, Reply chunk, error) and
//     the final Send.
//   - rw.go: RDMA Read/Write work-request chains, the registered buffer pool.
//   - credits.go: the credit grant and send-queue accounting.
//   - client.go: Dial, Call, raw round trips.
//
// # Concurrency
//
// Per connection: one goroutine polls the completion queues (Receives,
// RDMA Read completions, Send completions); a bounded pool of workers (at
// most Credits) decodes, pulls Read chunks, dispatches and posts the
// reply; replies leave in completion order. A chunk-less RDMA_MSG call to
// a procedure marked oncrpc.Procedure.Quick runs on the polling goroutine
// itself, saving the hand-off, once its reply's Send has room reserved in
// the send queue (conn.runsInline): nothing it does waits for a
// completion. Contexts nest server ->
// connection -> call; Shutdown drains calls in progress, then disconnects.
//
// # Credits
//
// Each connection has 2*Credits slots, each with one Receive buffer and
// one Send buffer. Credits Receives are posted before Accept; when a
// Receive completes the completion loop posts a free slot's Receive
// before the call is even decoded, so Credits Receives stay posted and
// every reply (RDMA_ERROR included) grants Credits. A client that ignores
// its grant exhausts the free slots: the server logs it, and the client's
// next Send finds no Receive and the connection dies (as on hardware with
// rnr_retry 0); teardown then frees everything.
//
// # The path of a READ (NFS READ with a Write chunk)
//
// Receive completes into slot S's Receive buffer -> worker decodes and
// validates the header -> Dispatch; the READ handler calls
// Reply.AllocPayload, which lends S a registered pool buffer, reads the
// file straight into it and attaches it as Reply.Payload -> send.go posts
// RDMA Writes of exactly len(Payload) bytes from that buffer into the
// Write chunk's segments (ERR_CHUNK if they do not fit), then, on the same
// queue pair, the Send of an RDMA_MSG header echoing the Write chunk with
// the lengths written, followed by Reply.Head (ending with the opaque
// length word) and Reply.Tail, pulled up into S's registered Send buffer.
// No byte of READ data is copied by the transport. The Send's completion
// releases S and its pool buffer.
//
// # The path of a WRITE (Read chunk at position P)
//
// The inline message runs up to P and continues after the data without
// its pad. The worker borrows a pool buffer, copies inline[0:P) into it,
// posts RDMA Reads of the chunk's segments straight into place, writes the
// XDR pad, copies the inline remainder, and waits for the last (signaled)
// Read before dispatching: Call.Args is a slice of that registered buffer.
// An RDMA_NOMSG call's position-zero chunk is read the same way and is the
// whole call. Replies too large to go inline go into the Reply chunk
// (RDMA_NOMSG reply) after being staged in a pool buffer.
//
// # Buffer ownership
//
//   - Receive buffers: the provider's while posted; slot S's from its
//     Receive completion until the reply's Send completes (they back
//     Call.Args for inline calls).
//   - Send buffers: S's worker builds the reply in place; the provider's
//     from PostSend until the Send completion; then free.
//   - Pool buffers (call assembly, READ payload, Reply-chunk staging):
//     lent to S, returned when S is released. The pool grows lazily up to
//     a bound and keeps its buffers for later calls.
//   - Every MR of a connection is deregistered by teardown after Conn.Close
//     has returned every posted buffer, so the fabric's Stats return to
//     zero after each connection.
//   - Client: a slot's regions have no remote access of their own; a call
//     exposes what it advertises through memory windows bound with fresh
//     rkeys before its Send and invalidated (Send-With-Invalidate from the
//     server, else a local invalidate whose completion is awaited) before
//     its reply is decoded and before the slot is reused (client_keys.go).
//     A call whose context ends first leaves its slot to the completion
//     loop, which invalidates and frees it when the reply comes. On a
//     device without usable windows (none, or windows that do not bound
//     access to their range, as rxe's) the call registers exactly the
//     advertised bytes instead (verbs.RegisterRange) and deregisters them
//     at the same points; chosen once per connection (probeWindows).
package rpcrdma

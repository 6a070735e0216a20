// Package rpcrdma is the RPC-over-RDMA version 1 (RFC 8166) server
// transport of gonfsrdma, the one the Linux NFS client mounts with
// proto=rdma, over the verbs API (real RDMA or the in-process software
// fabric). It speaks the RFC 8797 connection private data and places NFSv3
// data per RFC 8267 (WRITE data by Read chunk, READ data by Write chunk).
// The protocol it shares with the client transport is package
// rpcrdma/proto; the client transport (an oncrpc.Caller for tests and
// tools) is package rpcrdma/client; the work request IDs and completion
// loop both drive are rpcrdma/internal/wr. Each call is handed to the
// oncrpc.Dispatcher as an oncrpc.Exchange (the slot), and the server's
// listeners and connections live in an oncrpc.Lifecycle, as TCP's do.
//
// # Roles (one file each, as in the kernel's svcrdma)
//
//   - transport.go: listen, accept (Receives posted before Accept), the
//     per-connection completion loop, drain and teardown.
//   - slot.go: the per-call slot (the call's oncrpc.Exchange): borrowing
//     and releasing pool buffers, the registered buffer pool, release of
//     the slot to the free list.
//   - recv.go: per-call decode, validation (proto.Validate; failures are
//     ERR_CHUNK), Read-chunk pull and call assembly, dispatch.
//   - send.go: reply shape (inline, Write chunk, Reply chunk, error), the
//     reply header (proto), the final Send, and what a shortage of the
//     server's own buffers does (drop the connection, never ERR_CHUNK).
//   - rw.go: RDMA Read/Write work-request chains.
//   - credits.go: re-posting Receives, the credit grant, send-queue
//     accounting.
//   - limits.go, failure.go: connection and pinned-memory caps, the idle
//     sweeper; how a connection's death is logged.
//   - device.go: the device going away (every connection on it torn
//     down, the listener closed, one WARN) and listening again, with a
//     backoff (Config.RelistenMin, RelistenMax), until it is back.
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
// The queue pair is made with verbs.Config.LazySend: while the loop waits
// only a Receive (or the connection's death) wakes it, and the Send
// completions of the replies posted meanwhile are taken with the next
// call, so a call one at a time costs one completion event, not two.
// Whatever waits on a send-queue completion holds a WatchSend while it
// waits: a worker's RDMA Reads (pullReads), a wait for send-queue room
// (sqBudget) or for a pool buffer (bigPool), a draining connection, and
// the idle sweep, which takes the Send completions of a connection that
// went quiet so that its slots count free.
//
// # Credits
//
// Each connection has 2*Credits slots, each with one Receive buffer and
// one Send buffer. Credits Receives are posted before Accept; when a
// Receive completes the completion loop posts a free slot's Receive
// before the call is even decoded, so Credits Receives stay posted and
// every reply (RDMA_ERROR included) grants Credits. A Receive that could
// not be posted is owed: replies grant Credits less what is owed (at
// least 1) until it is, and a failed post tears the connection down. A client that ignores
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
// its pad. The worker first waits for its turn in the connection's read
// window (Config.ReadWindow bytes of Read chunks pulled at once, first
// come first served; a burst of large WRITEs is answered in arrival order
// and borrows buffers a window at a time), then borrows a pool buffer, copies inline[0:P) into it,
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
//     from PostSend until the Send completion is polled (with LazySend,
//     when the next Receive or a watch wakes the loop); then free.
//   - Pool buffers (call assembly, READ payload, Reply-chunk staging):
//     lent to S, returned when S is released. The pool grows lazily up to
//     a bound and keeps its buffers for later calls; once it holds a few
//     (eager: twice the read window's worth, and two), a call waits for a
//     buffer lent to a call whose reply is posted (it comes back with that
//     Send's completion; the wait holds a WatchSend) rather than register
//     another.
//   - Every MR of a connection is deregistered by teardown after Conn.Close
//     has returned every posted buffer, so the fabric's Stats return to
//     zero after each connection. A removed device is the same: each
//     connection on it tears down so, and the listener is closed at once;
//     while the device is gone the server holds no object on it.
//   - A pool buffer the server cannot register is a shortage: the call
//     is dropped with its connection (logged once, counted in
//     Stats.Shortages), never answered ERR_CHUNK.
package rpcrdma

// Package oncrpc is the transport-neutral ONC RPC core (RFC 5531): the call
// and reply codec, AUTH_NONE and AUTH_SYS, a dispatcher fed by static
// program tables, the duplicate request cache, TCP record marking and the
// TCP and UDP server transports, and a client.
//
// # Layers
//
// A transport (TCP and UDP here, RPC-over-RDMA in package rpcrdma) receives
// a whole RPC message and hands Dispatcher.Dispatch an Exchange, the one
// contract between transport and dispatcher: the message, the Peer it came
// from, the largest reply the call can carry, payload buffers and, where
// offered, splicing. It sends the Reply it gets back. Dispatch decodes the
// header, checks the credential, finds the procedure in the program table,
// consults the duplicate request cache for non-idempotent procedures and
// runs the handler. Handlers never see a net.Conn or a transport type:
// they see a Call (Call.Conn is the Peer, Call.MaxReply the limit) and a
// Reply (AllocPayload, CanSplice, SpliceFile), which reach the exchange.
//
// Every server transport shares one Lifecycle: Listen/Unlisten around a
// serve loop, Add/Remove around a connection, Go for goroutines Shutdown
// waits for, and Shutdown, which closes listeners, drains connections
// (ServedConn.Drain) and aborts them when its context ends.
//
// # Replies: head, payload, tail
//
// A handler appends its results to Reply.Head. A procedure with bulk data
// (NFS READ, READLINK) gets a buffer from Reply.AllocPayload, fills it, ends
// Head with the opaque's length word and attaches the buffer with
// SetPayload. A handler reading a kernel file may instead call
// Reply.SpliceFile when Reply.CanSplice says the transport can move file
// pages without a copy (TCP with ServerConfig.SpliceReads, by splice(2)). TCP writes mark, head,
// payload, padding and tail with one writev; RDMA writes the payload into the client's Write chunk and sends
// the rest. The handler does not know which.
//
// # Buffer ownership
//
//   - The record buffer a transport reads a call into owns Call.Args and the
//     credential bytes; it stays untouched until the reply has been sent,
//     then the transport reuses it for a later call.
//   - Reply.Head (and Tail) are transport-owned reusable buffers; handlers
//     only append to them.
//   - A payload from AllocPayload belongs to the transport and is released
//     after the send completes; handlers must not keep it.
//   - A spliced payload (Reply.SpliceFile, TCP on Linux) lives in a pipe
//     from the server's pool that the call slot holds until its reply is
//     written; a pipe still holding bytes afterwards is closed, never
//     reused. The file descriptor passed to SpliceFile is not kept.
//   - The DRC copies the flattened reply; it never holds transport buffers.
//   - A TCP call slot keeps its buffers for the next call while the
//     buffer budget allows; over it, they are dropped when the slot comes
//     back (never while a call or its reply uses them), and the sweeper
//     drops those of quiet connections' free slots under the free list's
//     lock.
//   - Client results are owned by the caller: freshly allocated, or, when
//     the call lent a ClientCall.ReplyBuf that holds the reply (TCP only),
//     aliasing it. A lent buffer belongs to the transport until Call
//     returns, also on failure or cancellation.
//   - A ClientCall.ReplySink's file (client side only, TCP) is written by
//     the connection's reader, only inside [Off, Off+ReplyPayloadMax) and
//     only until Call returns (client_sink.go): splice(2) through a pipe
//     the reader owns, pwrite for what it had buffered.
//
// # Limits
//
// A Limits, shared by every server of a process (ServerConfig.Limits, and
// rpcrdma.Config.Conns), caps connections in total and per client
// address; a connection over a cap is closed at once with a rate-limited
// log line. Temporary accept failures (EMFILE, ENFILE, ENOBUFS, ...) are
// logged and waited out with a back-off of 5 ms doubling to 1 s; they
// never end the listener. A sweeper closes connections idle for
// ServerConfig.IdleTimeout (default 6 minutes, as knfsd), and those whose
// replies made no progress that long. The bytes of every call slot's
// buffers are charged to the Limits' buffer budget: within it nothing
// changes; over it, connections above their share drop buffers as slots
// come back and stop taking calls while replies are pending, and a
// payload buffer grows only within the budget or for one
// exempt call per connection, so a client that stops reading stalls only
// itself (budget.go).
//
// # Concurrency
//
// Per TCP connection: one reader, up to ServerConfig.MaxInFlight handler
// goroutines, one writer; replies may leave out of order. Server.Shutdown
// drains calls in progress before closing connections.
package oncrpc

// stats.go: the server transport's counters for the metrics. Each is an
// atomic the code that owns the event adds to (one add per chunk list,
// Send, RDMA Read or Write chain), read by Counts at scrape time.
//
// Buffer ownership: none; counters only.

package rpcrdma

import "sync/atomic"

// serverCounters are a Server's counters across its connections.
type serverCounters struct {
	// Chunks offered by calls, by kind (RFC 8166 section 3.4.3).
	readChunks, writeChunks, replyChunks atomic.Uint64
	// Bytes moved: pulled by RDMA Read (Read chunks), pushed by RDMA
	// Write (Write and Reply chunks), received and sent inline (whole
	// Receive and Send messages, transport header included).
	rdmaRead, rdmaWrite, inlineIn, inlineOut atomic.Uint64
	// replyChunkReplies counts replies sent through a Reply chunk
	// (RDMA_NOMSG).
	replyChunkReplies atomic.Uint64
	// qpErrors counts completions in error other than flushes (the
	// queue pair failed); disconnects counts connections ended.
	qpErrors, disconnects atomic.Uint64
	// granted is the credits of the connections open (each grants
	// Config.Credits); inUse the calls received and not yet released.
	granted, inUse atomic.Int64
}

// Counts are the server transport's counters, read at one time.
type Counts struct {
	ReadChunks, WriteChunks, ReplyChunks        uint64
	RDMAReadBytes, RDMAWriteBytes               uint64
	InlineRecvBytes, InlineSendBytes            uint64
	ReplyChunkReplies                           uint64
	QPErrors, Disconnects                       uint64
	CreditsGranted, CreditsInUse                int64
	RegisteredBytes                             int64
	CopiedBytes, CompletionLoopCalls, Shortages int64
}

// Counts reads the counters (for the metrics, at scrape time).
func (s *Server) Counts() Counts {
	k := &s.counters
	return Counts{
		ReadChunks: k.readChunks.Load(), WriteChunks: k.writeChunks.Load(), ReplyChunks: k.replyChunks.Load(),
		RDMAReadBytes: k.rdmaRead.Load(), RDMAWriteBytes: k.rdmaWrite.Load(),
		InlineRecvBytes: k.inlineIn.Load(), InlineSendBytes: k.inlineOut.Load(),
		ReplyChunkReplies: k.replyChunkReplies.Load(),
		QPErrors:          k.qpErrors.Load(), Disconnects: k.disconnects.Load(),
		CreditsGranted: k.granted.Load(), CreditsInUse: k.inUse.Load(),
		RegisteredBytes: s.Pinned(),
		CopiedBytes:     s.copied.Load(), CompletionLoopCalls: s.inline.Load(), Shortages: s.shortages.Load(),
	}
}

// stats.go: the server transport's counters for the metrics. What is
// counted per call (inline bytes in and out, bytes copied, calls run on
// the completion goroutine) is counted in the connection's own
// connCounters, so calls on different connections never add to one
// cache line; a connection's counts fold into the server's when it
// ends. Rarer events (chunks, RDMA Read and Write chains, Reply chunks,
// QP errors, disconnects) add to the server's counters directly. Counts
// and Stats add them up at scrape time; the calls in use are the
// connections' own busy counts less their replies posted (a reply's slot
// is released when its Send completes, which with verbs.Config.LazySend
// is counted when the next call arrives).
//
// Buffer ownership: none; counters only.

package rpcrdma

import "sync/atomic"

// connCounters are one connection's per-call counters, padded so that
// they share no cache line with the connection's other fields.
type connCounters struct {
	_                   [64]byte
	inlineIn, inlineOut atomic.Uint64 // whole Receive and Send messages
	copied              atomic.Int64  // bytes copied (pull-up, staging)
	inline              atomic.Int64  // calls run on the completion goroutine
	_                   [64]byte
}

// liveCounts are the per-call counters of the server: those of ended
// connections (folded into the server's) plus those of the connections
// open, and the calls in use (received, not yet answered).
type liveCounts struct {
	inlineIn, inlineOut uint64
	copied, inline      int64
	inUse               int64
}

func (s *Server) liveCounts() liveCounts {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	k := &s.counters
	l := liveCounts{inlineIn: k.inlineIn.Load(), inlineOut: k.inlineOut.Load(), copied: s.copied.Load(), inline: s.inline.Load()}
	for _, c := range s.life.Conns(nil) {
		if c.countsFolded {
			continue
		}
		l.add(&c.counts)
		c.mu.Lock()
		l.inUse += int64(c.busy)
		c.mu.Unlock()
		// Read after busy: a release lowers replied before busy, so a
		// scrape between counts a call more, never fewer.
		l.inUse -= c.replied.Load()
	}
	return l
}

func (l *liveCounts) add(cc *connCounters) {
	l.inlineIn += cc.inlineIn.Load()
	l.inlineOut += cc.inlineOut.Load()
	l.copied += cc.copied.Load()
	l.inline += cc.inline.Load()
}

// foldCounts adds the counters of connection c, which has ended, to the
// server's, before c leaves the lifecycle's set.
func (s *Server) foldCounts(c *conn) {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	k := &s.counters
	k.inlineIn.Add(c.counts.inlineIn.Load())
	k.inlineOut.Add(c.counts.inlineOut.Load())
	s.copied.Add(c.counts.copied.Load())
	s.inline.Add(c.counts.inline.Load())
	c.countsFolded = true
}

// serverCounters are a Server's counters across its connections.
type serverCounters struct {
	// Chunks offered by calls, by kind (RFC 8166 section 3.4.3).
	readChunks, writeChunks, replyChunks atomic.Uint64
	// Bytes moved: pulled by RDMA Read (Read chunks), pushed by RDMA
	// Write (Write and Reply chunks), received and sent inline (whole
	// Receive and Send messages, transport header included: the ended
	// connections' here, the open ones' in their connCounters).
	rdmaRead, rdmaWrite, inlineIn, inlineOut atomic.Uint64
	// replyChunkReplies counts replies sent through a Reply chunk
	// (RDMA_NOMSG).
	replyChunkReplies atomic.Uint64
	// qpErrors counts completions in error other than flushes (the
	// queue pair failed); disconnects counts connections ended.
	qpErrors, disconnects atomic.Uint64
	// granted is the credits of the connections open (each grants
	// Config.Credits).
	granted atomic.Int64
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
	l := s.liveCounts()
	return Counts{
		ReadChunks: k.readChunks.Load(), WriteChunks: k.writeChunks.Load(), ReplyChunks: k.replyChunks.Load(),
		RDMAReadBytes: k.rdmaRead.Load(), RDMAWriteBytes: k.rdmaWrite.Load(),
		InlineRecvBytes: l.inlineIn, InlineSendBytes: l.inlineOut,
		ReplyChunkReplies: k.replyChunkReplies.Load(),
		QPErrors:          k.qpErrors.Load(), Disconnects: k.disconnects.Load(),
		CreditsGranted: k.granted.Load(), CreditsInUse: l.inUse,
		RegisteredBytes: s.Pinned(),
		CopiedBytes:     l.copied, CompletionLoopCalls: l.inline, Shortages: s.shortages.Load(),
	}
}

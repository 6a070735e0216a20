// failure.go: what a server connection learns about its own death, and the
// one log line it becomes. A queue pair that fails completes its first
// failing work request with the real status (retry exceeded, remote
// access, length, RNR ...) and flushes every other one; calls whose RDMA
// Reads or reply were flushed are dropped without a reply (the client
// retransmits them on its next connection, where the duplicate request
// cache answers those that had completed). Instead of a line per flushed
// request, the connection records the first error (status, kind of work
// request, slot) and counts the flushed requests and the calls dropped,
// and teardown logs them once: a WARN for a failure or a peer that went
// away with calls in progress, debug for an orderly close.
//
// Buffer ownership: none; counters only.

package rpcrdma

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// connFailure accumulates a connection's error completions.
type connFailure struct {
	mu sync.Mutex
	// first is the first error: a completion in error that is not a
	// flush (a *verbs.WCError), or a Receive that could not be posted;
	// kind names its work request.
	first error
	kind  string
	// flushed counts work requests completed with IBV_WC_WR_FLUSH_ERR,
	// dropped the calls received that got no reply because the
	// connection died.
	flushed atomic.Int64
	dropped atomic.Int64
	// here is why this side disconnected (the first reason), "" when it
	// did not: then the peer did.
	here string
}

// closedHere records that this side disconnects the queue pair, and why.
func (f *connFailure) closedHere(why string) {
	f.mu.Lock()
	if f.here == "" {
		f.here = why
	}
	f.mu.Unlock()
}

// wrKindName names a work request kind for the log.
func wrKindName(kind wr.Kind) string {
	switch kind {
	case wr.Recv:
		return "receive"
	case wr.Read, wr.ReadChain:
		return "RDMA Read"
	case wr.Send:
		return "send"
	case wr.Write:
		return "RDMA Write"
	}
	return "other"
}

// completedInError records a completion whose status is not success.
// Called by the completion loop only.
func (f *connFailure) completedInError(wc *verbs.Completion, kind wr.Kind) {
	if wc.Status == verbs.WCWRFlushErr {
		f.flushed.Add(1)
		return
	}
	f.record(&verbs.WCError{Status: wc.Status, WRID: wc.WRID, Recv: wc.Recv, VendorErr: wc.VendorErr}, wrKindName(kind))
}

// record keeps err as the first error unless there is one.
func (f *connFailure) record(err error, kind string) {
	f.mu.Lock()
	if f.first == nil {
		f.first, f.kind = err, kind
	}
	f.mu.Unlock()
}

// log writes the connection's one line about how it ended; err is what
// Poll reported.
func (f *connFailure) log(log *zap.Logger, err error) {
	f.mu.Lock()
	first, kind, here := f.first, f.kind, f.here
	f.mu.Unlock()
	flushed, dropped := f.flushed.Load(), f.dropped.Load()
	orderly := errors.Is(err, verbs.ErrDisconnected) || errors.Is(err, verbs.ErrClosed)
	switch {
	case errors.Is(err, verbs.ErrDeviceRemoved):
		// The server's one WARN for the device covers it (device.go).
		log.Info("connection closed: RDMA device removed", zap.Error(err),
			zap.Int64("flushed_requests", flushed), zap.Int64("calls_dropped", dropped))
	case first != nil:
		log.Warn("connection failed", zap.NamedError("first_error", first), zap.String("work_request", kind),
			zap.Int64("flushed_requests", flushed), zap.Int64("calls_dropped", dropped), zap.NamedError("cause", err))
	case !orderly:
		log.Warn("connection lost", zap.Error(err), zap.Int64("flushed_requests", flushed), zap.Int64("calls_dropped", dropped))
	case dropped > 0 && here != "":
		// This server disconnected with calls in progress (a shutdown
		// that timed out).
		log.Warn("connection closed by this server with calls in progress", zap.String("reason", here),
			zap.Int64("flushed_requests", flushed), zap.Int64("calls_dropped", dropped))
	case dropped > 0:
		// The client disconnected while calls were in progress: the
		// Linux client does so when a call times out (timeo).
		log.Warn("connection closed by the peer with calls in progress", zap.Int64("flushed_requests", flushed),
			zap.Int64("calls_dropped", dropped))
	default:
		if ce := log.Check(zap.DebugLevel, "connection closed"); ce != nil {
			by := "peer"
			if here != "" {
				by = "this server: " + here
			}
			ce.Write(zap.Error(err), zap.String("closed_by", by), zap.Int64("flushed_requests", flushed))
		}
	}
}

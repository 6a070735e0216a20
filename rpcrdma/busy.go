// busy.go: what each call in progress is waiting for, so that a
// connection that does not drain (a shutdown that times out) can say
// where its calls are stuck: queued for a worker, waiting for a pool
// buffer or for room in the send queue, for its RDMA Reads, in the
// procedure's handler, or for the completion of its reply.
//
// Buffer ownership: none; each slot's state is two atomics written by
// whoever runs the call and read by the logger.

package rpcrdma

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// slotWait is what a busy slot waits for.
type slotWait int32

const (
	waitNone       slotWait = iota // free, or its Receive is posted
	waitWorker                     // queued for a worker
	waitReadWindow                 // its turn to pull its Read chunks (Config.ReadWindow)
	waitBuffer                     // a registered pool buffer (bigPool.get)
	waitSQ                         // room in the send queue (sqBudget.acquire)
	waitRead                       // the completion of its RDMA Reads
	waitHandler                    // the procedure's handler
	waitSend                       // the completion of its reply's Send
)

func (w slotWait) String() string {
	switch w {
	case waitWorker:
		return "a worker"
	case waitReadWindow:
		return "its turn to pull its Read chunks"
	case waitBuffer:
		return "a pool buffer"
	case waitSQ:
		return "room in the send queue"
	case waitRead:
		return "its RDMA Reads"
	case waitHandler:
		return "its handler"
	case waitSend:
		return "its reply's Send completion"
	}
	return "nothing"
}

// setWait records what the slot waits for from now on and returns what
// it waited for before.
func (s *slot) setWait(w slotWait) slotWait {
	s.waitSince.Store(time.Now().UnixNano())
	return slotWait(s.wait.Swap(int32(w)))
}

// maxBusyListed bounds the calls one log line lists.
const maxBusyListed = 16

// busyCalls describes the slots that are waiting for something, at most
// maxBusyListed of them, and counts all of them by what they wait for.
func (c *conn) busyCalls(now time.Time) (listed []string, counts map[string]int) {
	counts = map[string]int{}
	for _, s := range c.slots {
		w := slotWait(s.wait.Load())
		if w == waitNone {
			continue
		}
		counts[w.String()]++
		if len(listed) < maxBusyListed {
			since := now.Sub(time.Unix(0, s.waitSince.Load())).Round(time.Millisecond)
			listed = append(listed, fmt.Sprintf("xid %#x waits for %s since %v", s.xid.Load(), w, since))
		}
	}
	return listed, counts
}

// logBusy logs, once, the calls that keep the connection from draining.
func (c *conn) logBusy(why string) {
	listed, counts := c.busyCalls(time.Now())
	if len(listed) == 0 {
		return
	}
	c.log.Warn(why, zap.Strings("calls", listed), zap.Any("waiting_for", counts))
}

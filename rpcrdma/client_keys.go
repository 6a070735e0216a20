// client_keys.go: per-call memory keys of the client transport.
//
// Each call slot has up to two memory windows (verbs.Window, type 2): "in"
// over the region the server RDMA-Writes Write and Reply chunks into, with
// remote write access only, and "out" over the region it RDMA-Reads Read
// chunks from, with remote read access only. The regions themselves are
// registered without remote access, so their own rkeys grant nothing.
//
// Life of a key, as the Linux client's FRWR does with its MRs
// (net/sunrpc/xprtrdma/frwr_ops.c):
//
//  1. marshal picks a fresh rkey (Window.NextRKey) and arms the window
//     with exactly the bytes the call advertises;
//  2. roundTrip posts the bind unsignaled, chained before the Send that
//     names the rkey (send-queue order makes it effective first);
//  3. when the reply arrives, a Send-With-Invalidate may already have
//     invalidated one window (RFC 8797 section 4.3: the server may use it
//     only when our private data offered it); every window still bound is
//     invalidated locally, and the caller waits for that completion before
//     the reply is decoded;
//  4. only then is the slot freed for the next call.
//
// A call whose context ended before its reply keeps the slot in the
// completion loop; when the reply comes, the loop posts the local
// invalidates and frees the slot on their completion. When the connection
// dies the queue pair is in the error state and no remote access can
// happen any more, so the slot is freed without invalidation.

package rpcrdma

import (
	"fmt"
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// wrLocalInv is the WR kind of a slot's signaled local invalidate.
const wrLocalInv = 5

// ClientStats counts the client's memory-key operations since Dial.
type ClientStats struct {
	// Registrations counts chunk regions registered (ibv_reg_mr): once per
	// slot and kind, again only when a larger region is needed.
	Registrations int64
	// Windows counts memory windows allocated (one per slot and kind).
	Windows int64
	// Binds counts window bindings: one per call and region kind it
	// exposes.
	Binds int64
	// RemoteInvalidations counts bindings the server ended with
	// Send-With-Invalidate, LocalInvalidations those this side ended.
	RemoteInvalidations int64
	LocalInvalidations  int64
	// PayloadCopies and PayloadBytes count Write-chunk payloads (READ
	// data) copied from the registered region the server placed them in
	// into the caller's memory: the region is the bounce buffer, since
	// caller (Go heap) memory is never registered.
	PayloadCopies, PayloadBytes int64
}

type clientCounters struct {
	registrations, windows, binds, remoteInv, localInv atomic.Int64
	payloadCopies, payloadBytes                        atomic.Int64
}

// Stats returns the memory-key counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{
		Registrations:       c.stats.registrations.Load(),
		Windows:             c.stats.windows.Load(),
		Binds:               c.stats.binds.Load(),
		RemoteInvalidations: c.stats.remoteInv.Load(),
		LocalInvalidations:  c.stats.localInv.Load(),
		PayloadCopies:       c.stats.payloadCopies.Load(),
		PayloadBytes:        c.stats.payloadBytes.Load(),
	}
}

// slotWindow is one window of a slot and its state in the current call.
// It is owned by whoever owns the slot.
type slotWindow struct {
	w      *verbs.Window
	armed  bool // to be bound with the call's Send
	bound  bool // bind posted and not yet known to be invalidated
	mr     *verbs.MR
	rkey   uint32
	n      int
	access verbs.Access
}

type slotKeys struct {
	in, out slotWindow
	invDone chan verbs.WCStatus
	// asyncRelease: the completion loop frees the slot when the local
	// invalidate completes (an abandoned call). Completion loop only.
	asyncRelease bool
}

// prepareWindow allocates the window on first use and returns the rkey
// its next binding will have.
func (c *Client) prepareWindow(sw *slotWindow) (uint32, error) {
	if sw.w == nil {
		w, err := c.vc.AllocWindow()
		if err != nil {
			return 0, fmt.Errorf("rpcrdma: allocating a memory window: %w", err)
		}
		sw.w = w
		c.stats.windows.Add(1)
	}
	return sw.w.NextRKey(), nil
}

// arm records that this call exposes n bytes at the start of mr through
// rkey with the given remote access.
func (sw *slotWindow) arm(mr *verbs.MR, rkey uint32, n int, access verbs.Access) {
	sw.armed, sw.mr, sw.rkey, sw.n, sw.access = true, mr, rkey, n, access
}

func (k *slotKeys) disarm() { k.in.armed, k.out.armed = false, false }

// unbindAll forgets every binding: only for a dead queue pair.
func (k *slotKeys) unbindAll() {
	k.disarm()
	k.in.bound, k.out.bound = false, false
}

func (k *slotKeys) free() {
	for _, sw := range []*slotWindow{&k.in, &k.out} {
		if sw.w != nil {
			sw.w.Free()
			sw.w = nil
		}
	}
}

// segsEnd is the end offset in m of the segments that lie in m.
func segsEnd(m *verbs.MR, segs []Segment) int {
	end := 0
	for _, sg := range segs {
		if e := int(sg.Offset-m.Addr()) + int(sg.Length); e > end {
			end = e
		}
	}
	return end
}

// appendBinds appends the bind WRs of the slot's armed windows.
func (c *Client) appendBinds(s *cslot, wrs []verbs.SendWR) []verbs.SendWR {
	for _, sw := range []*slotWindow{&s.keys.in, &s.keys.out} {
		if !sw.armed {
			continue
		}
		sw.armed, sw.bound = false, true
		c.stats.binds.Add(1)
		wrs = append(wrs, verbs.SendWR{
			ID: sendWRID(wrOther, s.idx), Opcode: verbs.OpBindMW,
			Bind: verbs.WindowBind{Window: sw.w, MR: sw.mr, Offset: 0, Length: sw.n, Access: sw.access, RKey: sw.rkey},
		})
	}
	return wrs
}

// noteRemoteInvalidate records a Send-With-Invalidate of one of the
// slot's window rkeys.
func (c *Client) noteRemoteInvalidate(s *cslot, invalidated bool, rkey uint32) {
	if !invalidated {
		return
	}
	for _, sw := range []*slotWindow{&s.keys.in, &s.keys.out} {
		if sw.bound && sw.rkey == rkey {
			sw.bound = false
			c.stats.remoteInv.Add(1)
		}
	}
}

// localInvWRs builds the local invalidates of the windows still bound,
// the last one signaled.
func (c *Client) localInvWRs(s *cslot) []verbs.SendWR {
	var wrs []verbs.SendWR
	for _, sw := range []*slotWindow{&s.keys.in, &s.keys.out} {
		if sw.bound {
			wrs = append(wrs, verbs.SendWR{ID: sendWRID(wrOther, s.idx), Opcode: verbs.OpLocalInv, InvalidateRKey: sw.rkey})
		}
	}
	if len(wrs) > 0 {
		last := &wrs[len(wrs)-1]
		last.ID, last.Signaled = sendWRID(wrLocalInv, s.idx), true
	}
	return wrs
}

// postLocalInv posts wrs; false when the connection is dead (or the post
// failed, which kills it), in which case nothing can reach the windows.
func (c *Client) postLocalInv(s *cslot, wrs []verbs.SendWR) bool {
	c.postMu.Lock()
	defer c.postMu.Unlock()
	if c.dead {
		return false
	}
	if err := c.vc.PostSend(wrs); err != nil {
		// A binding we cannot end is not acceptable on a live connection.
		c.vc.Disconnect()
		return false
	}
	return true
}

// invalidateWindows ends every binding of the call that the reply r
// answered and returns once they are invalid (or the connection is dead).
// The slot's owner calls it.
func (c *Client) invalidateWindows(s *cslot, r creply) {
	c.noteRemoteInvalidate(s, r.invalidated, r.invRKey)
	wrs := c.localInvWRs(s)
	if len(wrs) == 0 {
		return
	}
	select {
	case <-s.keys.invDone:
	default:
	}
	if c.postLocalInv(s, wrs) {
		select {
		case <-s.keys.invDone:
			c.stats.localInv.Add(int64(len(wrs)))
		case <-c.done:
		}
	}
	s.keys.unbindAll()
}

// releaseAbandoned frees the slot of a call whose caller left, once its
// windows are invalid. Completion loop only.
func (c *Client) releaseAbandoned(s *cslot) {
	wrs := c.localInvWRs(s)
	if len(wrs) == 0 {
		c.freeSlot(s)
		return
	}
	s.keys.asyncRelease = true
	if !c.postLocalInv(s, wrs) {
		s.keys.asyncRelease = false
		c.freeDeadSlot(s)
		return
	}
	c.stats.localInv.Add(int64(len(wrs)))
}

// localInvDone handles the completion of a slot's signaled local
// invalidate. Completion loop only.
func (c *Client) localInvDone(s *cslot, st verbs.WCStatus) {
	if s.keys.asyncRelease {
		s.keys.asyncRelease = false
		s.keys.unbindAll()
		c.freeSlot(s)
		return
	}
	select {
	case s.keys.invDone <- st:
	default:
	}
}

// freeDeadSlot frees a slot after the connection died: the queue pair is
// in the error state, so the windows can no longer be reached.
func (c *Client) freeDeadSlot(s *cslot) {
	s.keys.unbindAll()
	c.freeSlot(s)
}

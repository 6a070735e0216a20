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
//
// Without usable windows (probeWindows: the device has none, or, as rxe,
// does not confine a window's rkey to the bound range) the connection is
// windowless: step 1 registers exactly the advertised bytes with the
// remote access the chunk needs (verbs.RegisterRange, its own rkey), step
// 2 posts nothing, and step 3 deregisters that registration (synchronous:
// the rkey is dead when ibv_dereg_mr returns) before the reply is decoded.

package client

import (
	"fmt"
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Stats counts the client's memory-key operations since Dial.
type Stats struct {
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
	// PayloadsPlaced counts Write-chunk payloads written from that region
	// straight into a ReplySink's file (oncrpc.ReplySink.Place), copied
	// into no Go memory.
	PayloadsPlaced int64
	// Windowless is set when the connection exposes chunks through
	// per-call registrations instead of windows (probeWindows);
	// CallRegistrations and CallDeregistrations count those.
	Windowless                             bool
	CallRegistrations, CallDeregistrations int64
}

type clientCounters struct {
	registrations, windows, binds, remoteInv, localInv atomic.Int64
	payloadCopies, payloadBytes, payloadPlaced         atomic.Int64
	callRegs, callDeregs                               atomic.Int64
}

// Stats returns the memory-key counters.
func (c *Client) Stats() Stats {
	return Stats{
		Registrations:       c.stats.registrations.Load(),
		Windows:             c.stats.windows.Load(),
		Binds:               c.stats.binds.Load(),
		RemoteInvalidations: c.stats.remoteInv.Load(),
		LocalInvalidations:  c.stats.localInv.Load(),
		PayloadCopies:       c.stats.payloadCopies.Load(),
		PayloadBytes:        c.stats.payloadBytes.Load(),
		PayloadsPlaced:      c.stats.payloadPlaced.Load(),
		Windowless:          c.windowless,
		CallRegistrations:   c.stats.callRegs.Load(),
		CallDeregistrations: c.stats.callDeregs.Load(),
	}
}

// slotWindow is one window of a slot and its state in the current call.
// It is owned by whoever owns the slot.
type slotWindow struct {
	w      *verbs.Window
	sub    *verbs.MR // windowless: this call's registration of the range
	armed  bool      // to be bound with the call's Send
	bound  bool      // bind posted and not yet known to be invalidated
	mr     *verbs.MR
	rkey   uint32
	n      int
	access verbs.Access
}

type slotKeys struct {
	in, out slotWindow
	invWRs  [2]verbs.SendWR // localInvWRs' buffer
	invDone chan verbs.WCStatus
	// asyncRelease: the completion loop frees the slot when the local
	// invalidate completes (an abandoned call). Completion loop only.
	asyncRelease bool
}

// probeWindows decides once per connection how calls expose their
// chunks: through memory windows, unless the device has none or its
// windows do not bound remote access to the bound range (rxe: see
// verbs.WindowBoundsEnforced). It returns why windows are not used, or "".
func probeWindows(vc verbs.Conn) string {
	if !verbs.WindowBoundsEnforced(vc) {
		return "the device does not enforce memory-window bounds"
	}
	w, err := vc.AllocWindow()
	if err != nil {
		return err.Error()
	}
	w.Free()
	return ""
}

// expose gives the peer this call's access to the n bytes at the start of
// mr and returns the rkey to advertise. With windows it allocates the
// slot's window on first use and arms it with a fresh rkey (bound with
// the call's Send). Without, it registers exactly those bytes with the
// access the chunk needs (verbs.RegisterRange): that registration and its
// rkey exist for this call only and are deregistered before the slot is
// reused.
func (c *Client) expose(sw *slotWindow, mr *verbs.MR, n int, access verbs.Access) (uint32, error) {
	if c.windowless {
		if n == 0 {
			return 0, nil // nothing to reach
		}
		if access&verbs.AccessRemoteWrite != 0 {
			access |= verbs.AccessLocalWrite
		}
		sub, err := verbs.RegisterRange(c.vc, mr, 0, n, access)
		if err != nil {
			return 0, fmt.Errorf("rpcrdma: registering a call's chunk: %w", err)
		}
		c.stats.callRegs.Add(1)
		sw.sub, sw.armed, sw.mr, sw.rkey, sw.n, sw.access = sub, true, mr, sub.RKey(), n, access
		return sw.rkey, nil
	}
	if sw.w == nil {
		w, err := c.vc.AllocWindow()
		if err != nil {
			return 0, fmt.Errorf("rpcrdma: allocating a memory window: %w", err)
		}
		sw.w = w
		c.stats.windows.Add(1)
	}
	rkey := sw.w.NextRKey()
	sw.armed, sw.mr, sw.rkey, sw.n, sw.access = true, mr, rkey, n, access
	return rkey, nil
}

// dropCallMRs deregisters the slot's per-call registrations (windowless
// connections): once it returns their rkeys grant nothing.
func (c *Client) dropCallMRs(k *slotKeys) {
	for _, sw := range [2]*slotWindow{&k.in, &k.out} {
		if sw.sub != nil {
			sw.sub.Deregister()
			sw.sub, sw.armed, sw.bound = nil, false, false
			c.stats.callDeregs.Add(1)
		}
	}
}

// disarm forgets the armed windows of a call that was not sent and
// deregisters its per-call registrations.
func (c *Client) disarm(k *slotKeys) {
	c.dropCallMRs(k)
	k.in.armed, k.out.armed = false, false
}

// unbindAll forgets every binding: only for a dead queue pair.
func (c *Client) unbindAll(k *slotKeys) {
	c.disarm(k)
	k.in.bound, k.out.bound = false, false
}

func (c *Client) freeKeys(k *slotKeys) {
	c.dropCallMRs(k)
	for _, sw := range [2]*slotWindow{&k.in, &k.out} {
		if sw.w != nil {
			sw.w.Free()
			sw.w = nil
		}
	}
}

// segsEnd is the end offset in m of the segments that lie in m.
func segsEnd(m *verbs.MR, segs []proto.Segment) int {
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
	for _, sw := range [2]*slotWindow{&s.keys.in, &s.keys.out} {
		if !sw.armed {
			continue
		}
		sw.armed, sw.bound = false, true
		if sw.sub != nil {
			continue // registered, nothing to post
		}
		c.stats.binds.Add(1)
		wrs = append(wrs, verbs.SendWR{
			ID: wr.ID(wr.Other, s.idx), Opcode: verbs.OpBindMW,
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
	for _, sw := range [2]*slotWindow{&s.keys.in, &s.keys.out} {
		if sw.bound && sw.sub == nil && sw.rkey == rkey {
			sw.bound = false
			c.stats.remoteInv.Add(1)
		}
	}
}

// localInvWRs builds the local invalidates of the windows still bound,
// the last one signaled.
func (c *Client) localInvWRs(s *cslot) []verbs.SendWR {
	wrs := s.keys.invWRs[:0]
	for _, sw := range [2]*slotWindow{&s.keys.in, &s.keys.out} {
		if sw.bound && sw.sub == nil {
			wrs = append(wrs, verbs.SendWR{ID: wr.ID(wr.Other, s.idx), Opcode: verbs.OpLocalInv, InvalidateRKey: sw.rkey})
		}
	}
	if len(wrs) > 0 {
		last := &wrs[len(wrs)-1]
		last.ID, last.Signaled = wr.ID(wr.LocalInv, s.idx), true
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
	c.dropCallMRs(&s.keys)
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
	c.unbindAll(&s.keys)
}

// releaseAbandoned frees the slot of a call whose caller left, once its
// windows are invalid. Completion loop only.
func (c *Client) releaseAbandoned(s *cslot) {
	c.dropCallMRs(&s.keys)
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
		c.unbindAll(&s.keys)
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
	c.unbindAll(&s.keys)
	c.freeSlot(s)
}

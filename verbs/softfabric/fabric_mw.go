package softfabric

import "github.com/gonfsrdma/gonfsrdma/verbs"

// Memory windows on the software fabric. A window is found by the index
// part of an rkey (key>>8, shared with MRs) in its Conn's table; it grants
// access only while bound, with exactly the rkey of the binding, inside
// the bound range and as the binding's access allows.

// fabWindow is the fabric's record of an allocated window and its
// binding, found by the index part of its rkey (key>>8). Guarded by
// link.mu.
type fabWindow struct {
	*verbs.Window
	id     uint32
	bound  bool
	key    uint32 // the rkey of the current binding
	mr     *fabMR
	addr   uint64
	length uint64
	access verbs.Access
}

// AllocWindow implements Conn.
func (c *fabConn) AllocWindow() (*verbs.Window, error) {
	if c.fab.noWindows.Load() {
		return nil, verbs.ErrWindowsUnsupported
	}
	id := c.fab.mrSeq.Add(1) & 0xffffff
	w := verbs.NewWindow(id<<8|0x3c, c)
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		return nil, verbs.ErrClosed
	}
	c.windows[id] = &fabWindow{Window: w, id: id}
	c.l.mu.Unlock()
	c.fab.nWindows.Add(1)
	return w, nil
}

// ReleaseWindow implements verbs.WindowReleaser.
func (c *fabConn) ReleaseWindow(w *verbs.Window) error {
	id := w.RKey() >> 8
	c.l.mu.Lock()
	if fw := c.windows[id]; fw != nil {
		fw.bound, fw.mr = false, nil
	}
	delete(c.windows, id)
	c.l.mu.Unlock()
	c.fab.nWindows.Add(-1)
	return nil
}

// windowByKey finds a bound window of this PD by its current rkey.
// Caller holds link.mu.
func (c *fabConn) windowByKey(key uint32) *fabWindow {
	w := c.windows[key>>8]
	if w == nil || !w.bound || w.key != key {
		return nil
	}
	return w
}

// unbind invalidates w. Caller holds link.mu.
func (c *fabConn) unbind(w *fabWindow) {
	w.bound, w.mr = false, nil
	c.fab.nInvalidations.Add(1)
}

// remoteBytes resolves an RDMA target [addr, addr+n) named by rkey at this
// (responder) side: an MR's own rkey, or a bound window's. Caller holds
// link.mu.
func (c *fabConn) remoteBytes(rkey uint32, addr uint64, n uint32, need verbs.Access) ([]byte, bool) {
	if m := c.mrByKey(rkey, true); m != nil {
		if m.Access()&need == 0 {
			return nil, false
		}
		return m.bytesAt(addr, n)
	}
	w := c.windowByKey(rkey)
	if w == nil || w.access&need == 0 || c.mrs[w.mr.id] != w.mr {
		return nil, false
	}
	if addr < w.addr || uint64(n) > w.length || addr-w.addr > w.length-uint64(n) {
		return nil, false
	}
	return w.mr.bytesAt(addr, n)
}

// execBind: IBV_WR_BIND_MW binds a free window of this PD to a range of an
// MR registered with AccessMWBind.
func (c *fabConn) execBind(e *sendEntry) {
	b := &e.bind
	var w *fabWindow
	var m *fabMR
	if b.Window != nil && b.MR != nil {
		w, m = c.windows[b.Window.RKey()>>8], c.mrs[b.MR.LKey()>>8]
	}
	ok := w != nil && m != nil && w.Window == b.Window && !w.bound && m.MR == b.MR &&
		m.Access()&verbs.AccessMWBind != 0 &&
		b.Access&^(verbs.AccessRemoteRead|verbs.AccessRemoteWrite) == 0 &&
		(b.Access&verbs.AccessRemoteWrite == 0 || m.Access()&verbs.AccessLocalWrite != 0) &&
		b.Offset >= 0 && b.Length >= 0 && b.Offset <= m.Len() && b.Length <= m.Len()-b.Offset &&
		b.RKey>>8 == w.id
	if !ok {
		c.fail(e, verbs.WCMWBindErr, verbs.ErrDisconnected)
		return
	}
	w.bound, w.mr, w.key = true, m, b.RKey
	w.addr, w.length, w.access = m.Addr()+uint64(b.Offset), uint64(b.Length), b.Access
	c.fab.nBinds.Add(1)
	c.finishSend(e, verbs.WCSuccess, 0)
}

// execLocalInv: IBV_WR_LOCAL_INV invalidates a bound window of this PD.
func (c *fabConn) execLocalInv(e *sendEntry) {
	w := c.windowByKey(e.invRKey)
	if w == nil {
		c.fail(e, verbs.WCMWBindErr, verbs.ErrDisconnected)
		return
	}
	c.unbind(w)
	c.finishSend(e, verbs.WCSuccess, 0)
}

// WindowBoundsEnforced implements verbs.WindowBoundsEnforcer: the fabric
// checks the bound range.
func (c *fabConn) WindowBoundsEnforced() bool { return true }

// DisableWindows makes AllocWindow fail with ErrWindowsUnsupported on
// every connection of the fabric from now on, as on a device without
// usable memory windows (tests of the callers' fallbacks).
func (f *Fabric) DisableWindows() { f.noWindows.Store(true) }

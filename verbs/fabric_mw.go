package verbs

// Memory windows on the software fabric. A window is found by the index
// part of an rkey (key>>8, shared with MRs) in its Conn's table; it grants
// access only while bound, with exactly the rkey of the binding, inside
// the bound range and as the binding's access allows.

// AllocWindow implements Conn.
func (c *fabConn) AllocWindow() (*Window, error) {
	if c.fab.noWindows.Load() {
		return nil, ErrWindowsUnsupported
	}
	id := c.fab.mrSeq.Add(1) & 0xffffff
	w := &Window{owner: c, id: id, rkey: id<<8 | 0x3c}
	c.l.mu.Lock()
	if c.state == stClosed {
		c.l.mu.Unlock()
		return nil, ErrClosed
	}
	c.windows[id] = w
	c.l.mu.Unlock()
	c.fab.nWindows.Add(1)
	return w, nil
}

func (c *fabConn) deallocWindow(w *Window) error {
	c.l.mu.Lock()
	delete(c.windows, w.id)
	w.bound, w.mr = false, nil
	c.l.mu.Unlock()
	c.fab.nWindows.Add(-1)
	return nil
}

// windowByKey finds a bound window of this PD by its current rkey.
// Caller holds link.mu.
func (c *fabConn) windowByKey(key uint32) *Window {
	w := c.windows[key>>8]
	if w == nil || !w.bound || w.key != key {
		return nil
	}
	return w
}

// unbind invalidates w. Caller holds link.mu.
func (c *fabConn) unbind(w *Window) {
	w.bound, w.mr = false, nil
	c.fab.nInvalidations.Add(1)
}

// remoteBytes resolves an RDMA target [addr, addr+n) named by rkey at this
// (responder) side: an MR's own rkey, or a bound window's. Caller holds
// link.mu.
func (c *fabConn) remoteBytes(rkey uint32, addr uint64, n uint32, need Access) ([]byte, bool) {
	if m := c.mrByKey(rkey, true); m != nil {
		if m.access&need == 0 {
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
	w, m := b.Window, b.MR
	ok := w != nil && m != nil && c.windows[w.id] == w && !w.bound && c.mrs[m.id] == m &&
		m.access&AccessMWBind != 0 &&
		b.Access&^(AccessRemoteRead|AccessRemoteWrite) == 0 &&
		(b.Access&AccessRemoteWrite == 0 || m.access&AccessLocalWrite != 0) &&
		b.Offset >= 0 && b.Length >= 0 && b.Offset <= len(m.buf) && b.Length <= len(m.buf)-b.Offset &&
		b.RKey>>8 == w.id
	if !ok {
		c.fail(e, WCMWBindErr, ErrDisconnected)
		return
	}
	w.bound, w.mr, w.key = true, m, b.RKey
	w.addr, w.length, w.access = m.addr+uint64(b.Offset), uint64(b.Length), b.Access
	c.fab.nBinds.Add(1)
	c.finishSend(e, WCSuccess, 0)
}

// execLocalInv: IBV_WR_LOCAL_INV invalidates a bound window of this PD.
func (c *fabConn) execLocalInv(e *sendEntry) {
	w := c.windowByKey(e.invRKey)
	if w == nil {
		c.fail(e, WCMWBindErr, ErrDisconnected)
		return
	}
	c.unbind(w)
	c.finishSend(e, WCSuccess, 0)
}

// windowBoundsEnforced: the fabric checks the bound range (see
// WindowBoundsEnforced).
func (c *fabConn) windowBoundsEnforced() bool { return true }

// DisableWindows makes AllocWindow fail with ErrWindowsUnsupported on
// every connection of the fabric from now on, as on a device without
// usable memory windows (tests of the callers' fallbacks).
func (f *Fabric) DisableWindows() { f.noWindows.Store(true) }

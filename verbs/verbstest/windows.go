package verbstest

import (
	"bytes"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Memory-window conformance cases (run on the fabric and, with -tags
// rdmahw, on a real device). The client's MR has no remote access of its
// own: everything the server reaches goes through a window.

const windowAccess = verbs.AccessLocalWrite | verbs.AccessMWBind

func allocWindow(t *testing.T, c verbs.Conn) *verbs.Window {
	t.Helper()
	w, err := c.AllocWindow()
	if err != nil {
		t.Fatalf("AllocWindow: %v", err)
	}
	t.Cleanup(func() { w.Free() })
	return w
}

// bindWindow binds w to n bytes of m at off and waits for the bind.
func bindWindow(t *testing.T, c verbs.Conn, w *verbs.Window, m *verbs.MR, off, n int, access verbs.Access) uint32 {
	t.Helper()
	rkey := w.NextRKey()
	err := c.PostSend([]verbs.SendWR{{ID: 90, Opcode: verbs.OpBindMW, Signaled: true,
		Bind: verbs.WindowBind{Window: w, MR: m, Offset: off, Length: n, Access: access, RKey: rkey}}})
	if err != nil {
		t.Fatalf("post bind: %v", err)
	}
	wc := PollN(t, c, 1)[0]
	if wc.Err() != nil || wc.WRID != 90 || wc.Opcode != verbs.WCBindMW {
		t.Fatalf("bind completion %+v", wc)
	}
	return rkey
}

func localInvalidate(t *testing.T, c verbs.Conn, rkey uint32) {
	t.Helper()
	if err := c.PostSend([]verbs.SendWR{{ID: 91, Opcode: verbs.OpLocalInv, InvalidateRKey: rkey, Signaled: true}}); err != nil {
		t.Fatalf("post local invalidate: %v", err)
	}
	wc := PollN(t, c, 1)[0]
	if wc.Err() != nil || wc.WRID != 91 || wc.Opcode != verbs.WCLocalInv {
		t.Fatalf("local invalidate completion %+v", wc)
	}
}

func srvWrite(t *testing.T, p *Pair, id uint64, raddr uint64, rkey uint32, n int) {
	t.Helper()
	err := p.Srv.PostSend([]verbs.SendWR{{ID: id, Opcode: verbs.OpRDMAWrite, Signaled: true,
		SGL: []verbs.SGE{p.SMR.SGE(DataOff, n)}, RemoteAddr: raddr, RKey: rkey}})
	if err != nil {
		t.Fatal(err)
	}
}

// testWindowLocalInvalidate: a bound window grants RDMA Write and Read in
// its range; after a local invalidate the same rkey is a remote access
// error that changes nothing.
func testWindowLocalInvalidate(t *testing.T, e *Env) {
	p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
	w := allocWindow(t, p.Cli)
	rkey := bindWindow(t, p.Cli, w, p.CMR, DataOff, 4096, verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	copy(p.SMR.Slice(DataOff, 64), bytes.Repeat([]byte{0xab}, 64))
	srvWrite(t, p, 1, p.CMR.Addr()+DataOff, rkey, 64)
	if wc := PollN(t, p.Srv, 1)[0]; wc.Err() != nil {
		t.Fatalf("write through bound window: %+v", wc)
	}
	if !bytes.Equal(p.CMR.Slice(DataOff, 64), p.SMR.Slice(DataOff, 64)) {
		t.Fatal("RDMA Write through the window did not land")
	}
	localInvalidate(t, p.Cli, rkey)
	before := append([]byte(nil), p.CMR.Slice(DataOff, 4096)...)
	copy(p.SMR.Slice(DataOff, 64), bytes.Repeat([]byte{0xcd}, 64))
	srvWrite(t, p, 2, p.CMR.Addr()+DataOff, rkey, 64)
	CheckAccessError(t, e, p, 2)
	if !bytes.Equal(p.CMR.Slice(DataOff, 4096), before) {
		t.Fatal("an RDMA Write with an invalidated window rkey changed client memory")
	}
}

// testWindowRemoteInvalidate: the peer's Send-With-Invalidate of the
// window rkey ends the binding; an RDMA Read with it then fails.
func testWindowRemoteInvalidate(t *testing.T, e *Env) {
	p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
	w := allocWindow(t, p.Cli)
	rkey := bindWindow(t, p.Cli, w, p.CMR, DataOff, 4096, verbs.AccessRemoteRead)
	err := p.Srv.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSendWithInv, SGL: []verbs.SGE{p.SMR.SGE(SendOff, 40)},
		InvalidateRKey: rkey, Signaled: true}})
	if err != nil {
		t.Fatal(err)
	}
	wc := PollN(t, p.Cli, 1)[0]
	if wc.Err() != nil || !wc.Invalidated || wc.InvalidatedRKey != rkey {
		t.Fatalf("recv completion %+v, want invalidated rkey %#x", wc, rkey)
	}
	PollN(t, p.Srv, 1)
	err = p.Srv.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpRDMARead, Signaled: true,
		SGL: []verbs.SGE{p.SMR.SGE(DataOff, 64)}, RemoteAddr: p.CMR.Addr() + DataOff, RKey: rkey}})
	if err != nil {
		t.Fatal(err)
	}
	// One client Receive was consumed, so CheckAccessError's count of
	// flushed Receives does not apply.
	wcs, _ := Drain(t, p.Srv)
	WantStatus(t, wcs[0], 2, verbs.WCRemAccessErr)
}

// testWindowRebind: a rebound window has a new rkey; the old one stays
// dead while the new one works, and the window's range and access bound
// what the new one reaches.
func testWindowRebind(t *testing.T, e *Env) {
	p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
	w := allocWindow(t, p.Cli)
	old := bindWindow(t, p.Cli, w, p.CMR, DataOff, 4096, verbs.AccessRemoteWrite)
	localInvalidate(t, p.Cli, old)
	cur := bindWindow(t, p.Cli, w, p.CMR, DataOff, 4096, verbs.AccessRemoteWrite)
	if cur == old {
		t.Fatalf("rebind kept rkey %#x", cur)
	}
	srvWrite(t, p, 1, p.CMR.Addr()+DataOff+4096-8, cur, 8)
	if wc := PollN(t, p.Srv, 1)[0]; wc.Err() != nil {
		t.Fatalf("write at the end of the window: %+v", wc)
	}
	before := append([]byte(nil), p.CMR.Slice(DataOff, 8192)...)
	srvWrite(t, p, 2, p.CMR.Addr()+DataOff+4096-8, old, 8)
	CheckAccessError(t, e, p, 2)
	if !bytes.Equal(p.CMR.Slice(DataOff, 8192), before) {
		t.Fatal("the old rkey changed client memory")
	}
}

// testWindowBounds: one byte past the bound range is a remote access
// error, as is an access the binding did not grant.
func testWindowBounds(t *testing.T, e *Env) {
	for _, tc := range []struct {
		name  string
		read  bool
		off   int
		grant verbs.Access
	}{
		{"PastEnd", false, 4096 - 7, verbs.AccessRemoteWrite},
		{"ReadNotGranted", true, 0, verbs.AccessRemoteWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
			w := allocWindow(t, p.Cli)
			rkey := bindWindow(t, p.Cli, w, p.CMR, DataOff, 4096, tc.grant)
			before := append([]byte(nil), p.CMR.Slice(DataOff, 8192)...)
			op := verbs.OpRDMAWrite
			if tc.read {
				op = verbs.OpRDMARead
			}
			err := p.Srv.PostSend([]verbs.SendWR{{ID: 3, Opcode: op, Signaled: true,
				SGL: []verbs.SGE{p.SMR.SGE(DataOff, 8)}, RemoteAddr: p.CMR.Addr() + uint64(DataOff+tc.off), RKey: rkey}})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.read && !verbs.WindowBoundsEnforced(p.Cli) {
				// rxe: the write past the window lands inside the MR.
				// Check that it does, so that the capability report
				// stays true when the device is fixed.
				if wc := PollN(t, p.Srv, 1)[0]; wc.Err() != nil {
					t.Fatalf("WindowBoundsEnforced is false but the device refused the write past the window (%+v): update it", wc)
				}
				t.Logf("device does not enforce window bounds (WindowBoundsEnforced false): the write past the window landed in the MR")
				return
			}
			CheckAccessError(t, e, p, 3)
			if !bytes.Equal(p.CMR.Slice(DataOff, 8192), before) {
				t.Fatal("a refused access changed client memory")
			}
		})
	}
}

// testMRWithoutRemoteAccess: the MR's own rkey grants nothing when it was
// registered for windows only.
func testMRWithoutRemoteAccess(t *testing.T, e *Env) {
	p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
	srvWrite(t, p, 4, p.CMR.Addr()+DataOff, p.CMR.RKey(), 8)
	CheckAccessError(t, e, p, 4)
}

// testRangeRegistration: RegisterRange gives a range of an MR without
// remote access its own rkey, which reaches exactly that range and nothing
// once deregistered (the per-call fallback where windows do not bound
// access).
func testRangeRegistration(t *testing.T, e *Env) {
	for _, tc := range []struct {
		name    string
		off     int // of the probing write, from the range's start
		dereg   bool
		allowed bool
	}{
		{"Inside", 4096 - 8, false, true},
		{"PastEnd", 4096 - 7, false, false},
		{"AfterDeregister", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ConnectPair(t, e, PairOpts{CliAccess: windowAccess})
			sub, err := verbs.RegisterRange(p.Cli, p.CMR, DataOff, 4096, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			if err != nil {
				t.Fatalf("RegisterRange: %v", err)
			}
			defer sub.Deregister()
			if sub.Addr() != p.CMR.Addr()+DataOff || sub.Len() != 4096 || sub.RKey() == p.CMR.RKey() {
				t.Fatalf("range MR addr %#x len %d rkey %#x (parent addr %#x rkey %#x)", sub.Addr(), sub.Len(), sub.RKey(), p.CMR.Addr(), p.CMR.RKey())
			}
			if tc.dereg {
				if err := sub.Deregister(); err != nil {
					t.Fatal(err)
				}
			}
			before := append([]byte(nil), p.CMR.Slice(DataOff, 8192)...)
			copy(p.SMR.Slice(DataOff, 8), []byte("rangeMR!"))
			srvWrite(t, p, 5, sub.Addr()+uint64(tc.off), sub.RKey(), 8)
			if tc.allowed {
				if wc := PollN(t, p.Srv, 1)[0]; wc.Err() != nil {
					t.Fatalf("write inside the range: %+v", wc)
				}
				if !bytes.Equal(p.CMR.Slice(DataOff+tc.off, 8), []byte("rangeMR!")) {
					t.Fatal("the write inside the range did not land in the parent's memory")
				}
				return
			}
			CheckAccessError(t, e, p, 5)
			if !bytes.Equal(p.CMR.Slice(DataOff, 8192), before) {
				t.Fatal("a refused access changed client memory")
			}
		})
	}
}

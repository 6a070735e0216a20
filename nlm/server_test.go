package nlm

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// fakeFiles resolves any handle but "stale" to a file of a memory FS;
// handles starting with 0xff are read-only.
type fakeFiles struct{ fs vfs.FS }

func (f fakeFiles) ResolveLock(_ *oncrpc.Call, fh []byte, _ bool) (File, Stat) {
	if string(fh) == "stale" || len(fh) == 0 {
		return File{}, StaleFH
	}
	return File{Key: string(fh), FS: f.fs, Handle: vfs.Handle(fh), ReadOnly: fh[0] == 0xff}, Granted
}

type fakeMonitor struct {
	grace     bool
	monitored map[string]bool
}

func (m *fakeMonitor) Monitor(h Host) error { m.monitored[h.Key] = true; return nil }
func (m *fakeMonitor) Unmonitor(k string)   { delete(m.monitored, k) }
func (m *fakeMonitor) InGrace() bool        { return m.grace }

func newTestServer(t testing.TB) (*Server, *fakeMonitor) {
	mon := &fakeMonitor{monitored: map[string]bool{}}
	s := NewServer(Config{Files: fakeFiles{billyfs.NewMem(billyfs.Options{})}, Monitor: mon, Log: zap.NewNop(),
		ClientPortmapPort: 1, CallbackTimeout: 50 * time.Millisecond, GrantRetry: 50 * time.Millisecond, GrantAttempts: 2})
	t.Cleanup(s.Close)
	return s, mon
}

var loopback = netip.MustParseAddrPort("127.0.0.1:700")

func dispatch(t testing.TB, s *Server, remote netip.AddrPort, vers, proc uint32, args []byte) []byte {
	t.Helper()
	d := oncrpc.NewDispatcher(zap.NewNop(), nil, s.Program())
	h := oncrpc.CallHeader{XID: 1, Prog: Prog, Vers: vers, Proc: proc, Cred: oncrpc.NewAuthSys("c", 0, 0)}
	msg := append(oncrpc.AppendCallHeader(nil, &h), args...)
	ex := &oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Local: netip.MustParseAddrPort("127.0.0.1:4045"), Remote: remote}, Msg: msg}
	var call oncrpc.Call
	reply := oncrpc.NewReply(nil)
	if !d.Dispatch(context.Background(), ex, &call, &reply) {
		t.Fatal("no reply")
	}
	return reply.AppendFlat(nil)
}

// results returns the results of a SUCCESS reply, failing otherwise.
func results(t testing.TB, msg []byte) *xdr.Reader {
	t.Helper()
	res, err := oncrpc.ParseReply(msg)
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	return xdr.NewReader(res)
}

func lockStat(t *testing.T, s *Server, remote netip.AddrPort, vers uint32, a LockArgs) Stat {
	t.Helper()
	var res Res
	if err := res.Decode(results(t, dispatch(t, s, remote, vers, ProcLock, a.Append(nil, vers)))); err != nil {
		t.Fatal(err)
	}
	if string(res.Cookie) != string(a.Cookie) {
		t.Fatalf("cookie %x, sent %x", res.Cookie, a.Cookie)
	}
	return res.Stat
}

func TestServerLockPaths(t *testing.T) {
	s, mon := newTestServer(t)
	a := LockArgs{Cookie: []byte("c1"), Exclusive: true, Lock: Lock{CallerName: "h1", FH: []byte("file"), OH: []byte("o1"), SVID: 1, Length: 10}}
	if st := lockStat(t, s, loopback, Vers4, a); st != Granted {
		t.Fatalf("LOCK %v", st)
	}
	if !mon.monitored["h1@127.0.0.1"] {
		t.Fatalf("host not monitored: %v", mon.monitored)
	}
	// The same owner name from another address is another host.
	other := netip.MustParseAddrPort("127.0.0.2:700")
	if st := lockStat(t, s, other, Vers4, a); st != Denied {
		t.Fatalf("LOCK from another address %v", st)
	}
	ro := a
	ro.Lock.FH = []byte{0xff, 1}
	if st := lockStat(t, s, loopback, Vers4, ro); st != ROFS {
		t.Fatalf("exclusive lock on a read-only export %v", st)
	}
	stale := a
	stale.Lock.FH = []byte("stale")
	if st := lockStat(t, s, loopback, Vers4, stale); st != StaleFH {
		t.Fatalf("stale %v", st)
	}
	big := a
	big.Lock.Offset = 1 << 63
	if st := lockStat(t, s, loopback, Vers4, big); st != FBig {
		t.Fatalf("offset 2^63 %v", st)
	}
	// Version 1 and 3: 32-byte handles only, statuses cast.
	if _, err := oncrpc.ParseReply(dispatch(t, s, loopback, Vers3, ProcLock, a.Append(nil, Vers3))); err == nil {
		t.Fatal("a 4-byte handle in version 3 decodes")
	}
	v3 := a
	v3.Lock.FH = make([]byte, NFS2FHSize)
	v3.Lock.FH[0] = 'x'
	stale3 := v3
	if st := lockStat(t, s, loopback, Vers3, stale3); st != Granted {
		t.Fatalf("v3 LOCK %v", st)
	}
	mon.grace = true
	if st := lockStat(t, s, loopback, Vers4, a); st != DeniedGracePeriod {
		t.Fatalf("non-reclaim LOCK in grace %v", st)
	}
	rec := a
	rec.Reclaim = true
	rec.Lock.FH = []byte("file2")
	if st := lockStat(t, s, loopback, Vers4, rec); st != Granted {
		t.Fatalf("reclaim in grace %v", st)
	}
	mon.grace = false
	if st := lockStat(t, s, loopback, Vers4, rec); st != DeniedGracePeriod {
		t.Fatalf("reclaim after grace %v", st)
	}
	// FREE_ALL of the caller releases its locks and forgets the host.
	dispatch(t, s, loopback, Vers4, ProcFreeAll, (&Notify{Name: "h1", State: 5}).Append(nil))
	if s.Table().Len() != 0 {
		t.Fatalf("%d entries after FREE_ALL", s.Table().Len())
	}
	if mon.monitored["h1@127.0.0.1"] {
		t.Fatal("still monitored after FREE_ALL")
	}
	// Procedure 16 only from a privileged loopback port.
	if _, err := oncrpc.ParseReply(dispatch(t, s, netip.MustParseAddrPort("127.0.0.1:40000"), Vers4, ProcNSMNotify, (&Reboot{MonName: "h1"}).Append(nil))); err == nil {
		t.Fatal("SM_NOTIFY from an unprivileged port accepted")
	}
}

func TestVersion1HasNoShare(t *testing.T) {
	s, _ := newTestServer(t)
	_, err := oncrpc.ParseReply(dispatch(t, s, loopback, Vers1, ProcShare, nil))
	if ae, ok := err.(*oncrpc.AcceptError); !ok || ae.Stat != oncrpc.ProcUnavail {
		t.Fatalf("v1 SHARE: %v", err)
	}
}

// FuzzArgs: every argument decoder of every version, on arbitrary bytes,
// either fails or yields values within the XDR limits.
func FuzzArgs(f *testing.F) {
	f.Add(uint8(4), sampleLock.Append(nil, Vers4))
	f.Add(uint8(1), sampleLock.Append(nil, Vers1))
	f.Add(uint8(4), (&ShareArgs{Share: Share{CallerName: "h", FH: []byte{1}}}).Append(nil))
	f.Add(uint8(4), (&Notify{Name: "n"}).Append(nil))
	f.Fuzz(func(t *testing.T, v uint8, b []byte) {
		vers := []uint32{Vers1, Vers3, Vers4}[int(v)%3]
		check := func(l *Lock) {
			if len(l.CallerName) > LMMaxStrLen || len(l.FH) > MaxNetObj || len(l.OH) > MaxNetObj {
				t.Fatalf("over the limits: %d %d %d", len(l.CallerName), len(l.FH), len(l.OH))
			}
			if vers != Vers4 && (l.Offset > 1<<32-1 || l.Length > 1<<32-1) {
				t.Fatal("a 32-bit range decoded wider")
			}
		}
		var la LockArgs
		if la.Decode(xdr.NewReader(b), vers) == nil {
			check(&la.Lock)
		}
		var ta TestArgs
		if ta.Decode(xdr.NewReader(b), vers) == nil {
			check(&ta.Lock)
		}
		var ca CancelArgs
		if ca.Decode(xdr.NewReader(b), vers) == nil {
			check(&ca.Lock)
		}
		var ua UnlockArgs
		if ua.Decode(xdr.NewReader(b), vers) == nil {
			check(&ua.Lock)
		}
		var sa ShareArgs
		if sa.Decode(xdr.NewReader(b)) == nil && (sa.Share.Mode > 3 || sa.Share.Access > 3) {
			t.Fatal("share enum out of range")
		}
		var n Notify
		if n.Decode(xdr.NewReader(b)) == nil && len(n.Name) > LMMaxNameLen {
			t.Fatal("long name")
		}
		var rb Reboot
		rb.Decode(xdr.NewReader(b))
		var res Res
		res.Decode(xdr.NewReader(b))
		var tr TestRes
		tr.Decode(xdr.NewReader(b), vers)
		var sr ShareRes
		sr.Decode(xdr.NewReader(b))
	})
}

// FuzzProgram: every procedure of every version, fed arbitrary arguments,
// gets a well-formed reply, and the server stays consistent.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(4), uint8(ProcLock), sampleLock.Append(nil, Vers4))
	f.Add(uint8(4), uint8(ProcLockMsg), sampleLock.Append(nil, Vers4))
	f.Add(uint8(4), uint8(ProcShare), (&ShareArgs{Share: Share{CallerName: "h", FH: []byte{1}}}).Append(nil))
	f.Add(uint8(3), uint8(ProcTest), (&TestArgs{Lock: Lock{FH: make([]byte, 32)}}).Append(nil, Vers3))
	s, _ := newTestServer(f)
	f.Fuzz(func(t *testing.T, v, proc uint8, args []byte) {
		vers := []uint32{Vers1, Vers3, Vers4}[int(v)%3]
		msg := dispatch(t, s, loopback, vers, uint32(proc%24), args)
		if _, _, err := oncrpc.DecodeReplyHeader(msg); err != nil {
			t.Fatalf("bad reply %x: %v", msg, err)
		}
	})
}

// refusingFS is a backend whose files refuse byte-range locks, as a file
// system answering fcntl with ENOLCK or EOPNOTSUPP does.
type refusingFS struct{ vfs.FS }

func (refusingFS) OpenLocks(vfs.Handle) (vfs.FileLocks, error) { return refusingLocks{}, nil }

type refusingLocks struct{}

func (refusingLocks) Lock(string, bool, int64, int64) (bool, error) {
	return false, vfs.ErrLockUnsupported
}
func (refusingLocks) Unlock(string, int64, int64) error { return nil }
func (refusingLocks) Test(string, bool, int64, int64) (vfs.LockHolder, bool, error) {
	return vfs.LockHolder{}, false, vfs.ErrLockUnsupported
}
func (refusingLocks) Forget(string) error { return nil }
func (refusingLocks) Close() error        { return nil }

// TestBackendRefusesLocks: on a backend that cannot hold locks, LOCK and
// TEST answer NLM4_FAILED (a clear status, not GRANTED and not a hang),
// and the refused lock is not left in the table.
func TestBackendRefusesLocks(t *testing.T) {
	mon := &fakeMonitor{monitored: map[string]bool{}}
	s := NewServer(Config{Files: fakeFiles{refusingFS{billyfs.NewMem(billyfs.Options{})}}, Monitor: mon, Log: zap.NewNop(),
		ClientPortmapPort: 1, CallbackTimeout: 50 * time.Millisecond, GrantRetry: 50 * time.Millisecond, GrantAttempts: 2})
	t.Cleanup(s.Close)
	a := LockArgs{Cookie: []byte("c1"), Exclusive: true, Lock: Lock{CallerName: "h1", FH: []byte("file"), OH: []byte("o1"), SVID: 1, Length: 10}}
	if st := lockStat(t, s, loopback, Vers4, a); st != Failed {
		t.Fatalf("LOCK on a backend refusing locks: %v, want NLM4_FAILED", st)
	}
	if n := s.Table().Len(); n != 0 {
		t.Fatalf("the refused lock left %d table entries", n)
	}
	ta := TestArgs{Cookie: []byte("c2"), Exclusive: true, Lock: a.Lock}
	var res TestRes
	if err := res.Decode(results(t, dispatch(t, s, loopback, Vers4, ProcTest, ta.Append(nil, Vers4))), Vers4); err != nil {
		t.Fatal(err)
	}
	if res.Stat != Failed {
		t.Fatalf("TEST on a backend refusing locks: %v, want NLM4_FAILED", res.Stat)
	}
	// Not stuck: the same LOCK is answered the same way again.
	a.Cookie = []byte("c3")
	if st := lockStat(t, s, loopback, Vers4, a); st != Failed {
		t.Fatalf("second LOCK: %v, want NLM4_FAILED", st)
	}
}

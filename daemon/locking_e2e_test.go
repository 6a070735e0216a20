package daemon_test

// End-to-end tests of file locking through a real daemon: NLM locks seen
// by processes of the server host (OFD locks on the exported file), the
// lifecycle across a restart (state, SM_NOTIFY, grace, reclaim) and
// export removal.

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// lockDaemon starts a daemon on exportsText with locking, its clients'
// rpcbind at clientPM (0: none reachable), and the given grace.
func lockDaemon(t *testing.T, stateDir, exportsFile string, clientPM int, grace time.Duration) *daemon.Daemon {
	t.Helper()
	d, err := daemon.Start(context.Background(), zap.NewNop(), daemon.Config{
		ExportsFile: exportsFile, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true,
		StateDir: stateDir, Grace: grace, ClientPortmapPort: clientPM, NotifyFor: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	return d
}

func shutdown(d *daemon.Daemon) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.Shutdown(ctx)
}

// startPortmapDaemon starts a daemon (needs root) exporting a fresh
// directory to 127.0.0.1, with its own rpcbind on a private port and its
// exports file and state directory in tmp; noNLM leaves NLM and NSM out.
// It is shut down when the test ends.
func startPortmapDaemon(t *testing.T, tmp string, noNLM bool) *daemon.Daemon {
	t.Helper()
	requireRoot(t)
	dir := exportDir(t, 0o777)
	d, err := daemon.Start(context.Background(), zap.NewNop(), daemon.Config{
		ExportsFile: writeExports(t, tmp, dir+" 127.0.0.1(rw,insecure)\n"), NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0",
		PortmapAddr: "127.0.0.1:0", StateDir: filepath.Join(tmp, "state"), NoNLM: noNLM,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(d) })
	return d
}

func writeExports(t *testing.T, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "exports")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fileHandle mounts export and looks name up.
func fileHandle(t *testing.T, d *daemon.Daemon, export, name string) []byte {
	t.Helper()
	mc := dialFrom(t, d.MountAddr(), "127.0.0.1", false)
	root, _ := mnt(t, mc, export)
	nc := dialFrom(t, d.NFSAddr(), "127.0.0.1", false)
	return lookup(t, client.New(nc).WithCred(authSys(0, 0)), root, name)
}

func nlmConn(t *testing.T, d *daemon.Daemon) *oncrpc.Client {
	t.Helper()
	c := dialFrom(t, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(d.NLMPort())}, "127.0.0.1", false)
	c.SetCred(authSys(0, 0))
	return c
}

func lockArgs(caller string, svid int32, fh []byte, excl, reclaim bool, off, n uint64) *nlm.LockArgs {
	return &nlm.LockArgs{Cookie: []byte{1}, Exclusive: excl, Reclaim: reclaim, State: 1,
		Lock: nlm.Lock{CallerName: caller, FH: fh, OH: []byte(caller), SVID: svid, Offset: off, Length: n}}
}

func wantLock(t *testing.T, c oncrpc.Caller, a *nlm.LockArgs, want nlm.Stat, what string) {
	t.Helper()
	res, err := nlm.CallLock(testCtx(t), c, nlm.Vers4, nlm.ProcLock, a)
	if err != nil || res.Stat != want {
		t.Fatalf("%s: %v %v, want %v", what, res.Stat, err, want)
	}
}

// hostSees returns the lock a process of the server host finds on path
// over [start, start+n) (F_OFD_GETLK from a description of its own).
func hostSees(t *testing.T, path string, start, n int64) unix.Flock_t {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fl := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: n}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &fl); err != nil {
		t.Fatal(err)
	}
	return fl
}

func TestLockVisibleOnServerHost(t *testing.T) {
	requireRoot(t)
	tmp := t.TempDir()
	dir := exportDir(t, 0o777)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("data"), 0o666); err != nil {
		t.Fatal(err)
	}
	d := lockDaemon(t, filepath.Join(tmp, "state"), writeExports(t, tmp, dir+" 127.0.0.1(rw,insecure,no_root_squash)\n"), 0, 0)
	defer shutdown(d)
	fh := fileHandle(t, d, dir, "f")
	c := nlmConn(t, d)

	wantLock(t, c, lockArgs("ca", 1, fh, true, false, 0, 10), nlm.Granted, "NLM LOCK [0, 10)")
	if fl := hostSees(t, path, 0, 0); fl.Type != unix.F_WRLCK || fl.Start != 0 || fl.Len != 10 {
		t.Fatalf("the server host sees %+v, want a write lock on [0, 10)", fl)
	}
	// A lock of a server-host process refuses NLM and TEST reports it.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	hold := unix.Flock_t{Type: unix.F_WRLCK, Start: 100, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &hold); err != nil {
		t.Fatal(err)
	}
	wantLock(t, c, lockArgs("cb", 1, fh, false, false, 50, 100), nlm.Denied, "NLM LOCK over the host's lock")
	tr, err := nlm.CallTest(testCtx(t), c, nlm.Vers4, &nlm.TestArgs{Lock: nlm.Lock{CallerName: "cb", FH: fh, OH: []byte("cb"), SVID: 1, Offset: 100, Length: 1}})
	if err != nil || tr.Stat != nlm.Denied || tr.Holder.Offset != 100 || tr.Holder.Length != 1 || !tr.Holder.Exclusive {
		t.Fatalf("TEST over the host's lock: %+v %v", tr, err)
	}
	// A blocked request waits for the host's unlock (polled) and is granted.
	b := lockArgs("cb", 1, fh, true, false, 100, 1)
	b.Block = true
	wantLock(t, c, b, nlm.Blocked, "blocking NLM LOCK over the host's lock")
	f.Close() // drops the host's lock
	deadline := time.Now().Add(5 * time.Second)
	for {
		if fl := hostSees(t, path, 100, 1); fl.Type == unix.F_WRLCK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the blocked NLM request was not granted after the host's lock went")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// UNLOCK and FREE_ALL take the OFD locks away too.
	if res, err := nlm.CallUnlock(testCtx(t), c, nlm.Vers4, &nlm.UnlockArgs{Lock: nlm.Lock{CallerName: "ca", FH: fh, OH: []byte("ca"), SVID: 1}}); err != nil || res.Stat != nlm.Granted {
		t.Fatalf("UNLOCK: %v %v", res.Stat, err)
	}
	if err := nlm.CallFreeAll(testCtx(t), c, nlm.Vers4, &nlm.Notify{Name: "cb"}); err != nil {
		t.Fatal(err)
	}
	if fl := hostSees(t, path, 0, 0); fl.Type != unix.F_UNLCK {
		t.Fatalf("after UNLOCK and FREE_ALL the host sees %+v", fl)
	}
}

// clientStatd is the client host's rpcbind and statd: it records
// SM_NOTIFYs.
type clientStatd struct {
	pm    *rpcbind.Service
	mu    sync.Mutex
	got   []nsm.StatChange
	ports []uint16 // the source port of each
}

func startClientStatd(t *testing.T) *clientStatd {
	t.Helper()
	s := &clientStatd{}
	notify := func(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
		var c nsm.StatChange
		if err := c.Decode(xdr.NewReader(call.Args)); err != nil {
			return oncrpc.ErrGarbageArgs
		}
		s.mu.Lock()
		s.got = append(s.got, c)
		s.ports = append(s.ports, call.Conn.Remote.Port())
		s.mu.Unlock()
		return nil
	}
	procs := make([]oncrpc.Procedure, nsm.ProcNotify+1)
	procs[nsm.ProcNotify] = oncrpc.Procedure{Name: "NOTIFY", Handler: notify, Idempotent: true}
	srv := oncrpc.NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil, &oncrpc.Program{Prog: nsm.Prog, Versions: []oncrpc.Version{{Vers: 1, Procs: procs}}}), oncrpc.ServerConfig{})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeUDP(pc)
	s.pm, err = rpcbind.Start(context.Background(), zap.NewNop(), rpcbind.Config{Addr: "127.0.0.1:0",
		Mappings: []rpcbind.Mapping{rpcbind.NewMapping(nsm.Prog, 1, "udp", uint16(pc.LocalAddr().(*net.UDPAddr).Port))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.pm.Close(context.Background())
		srv.Shutdown(context.Background())
	})
	return s
}

func (s *clientStatd) notified() []nsm.StatChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]nsm.StatChange(nil), s.got...)
}

// TestLockRestartReclaim: a server that stops while a client holds a lock
// notifies nothing; the next start has a state two higher, tells the
// client (SM_NOTIFY), is in grace (new locks DENIED_GRACE_PERIOD) and
// takes the client's reclaim, which is also an OFD lock again.
func TestLockRestartReclaim(t *testing.T) {
	requireRoot(t)
	tmp := t.TempDir()
	dir := exportDir(t, 0o777)
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("data"), 0o666); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tmp, "state")
	exports := writeExports(t, tmp, dir+" 127.0.0.1(rw,insecure,no_root_squash)\n")
	statd := startClientStatd(t)
	pmPort := statd.pm.Addr().(*net.TCPAddr).Port

	d1 := lockDaemon(t, state, exports, pmPort, 6*time.Second)
	if d1.NSM().State() != 1 || d1.NSM().InGrace() {
		t.Fatalf("first start: state %d, grace %v", d1.NSM().State(), d1.NSM().InGrace())
	}
	fh := fileHandle(t, d1, dir, "f")
	wantLock(t, nlmConn(t, d1), lockArgs("client", 7, fh, true, false, 0, 0), nlm.Granted, "LOCK before the restart")
	shutdown(d1)
	if n := len(statd.notified()); n != 0 {
		t.Fatalf("Shutdown sent %d SM_NOTIFY", n)
	}
	if fl := hostSees(t, path, 0, 0); fl.Type != unix.F_UNLCK {
		t.Fatalf("the lock outlived the server: %+v", fl)
	}

	d2 := lockDaemon(t, state, exports, pmPort, 6*time.Second)
	defer shutdown(d2)
	if d2.NSM().State() != 3 || !d2.NSM().InGrace() {
		t.Fatalf("restart: state %d, grace %v", d2.NSM().State(), d2.NSM().InGrace())
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(statd.notified()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := statd.notified()
	if len(got) != 1 || got[0].State != 3 || got[0].MonName != "127.0.0.1" {
		t.Fatalf("SM_NOTIFY after the restart: %+v", got)
	}
	// As sm-notify, from a reserved port (the test runs as root).
	if p := statd.ports[0]; p < 665 || p > 1023 {
		t.Fatalf("SM_NOTIFY from port %d, want a reserved one", p)
	}
	c := nlmConn(t, d2)
	wantLock(t, c, lockArgs("other", 1, fh, true, false, 0, 1), nlm.DeniedGracePeriod, "a new LOCK in grace")
	wantLock(t, c, lockArgs("client", 7, fh, true, true, 0, 0), nlm.Granted, "the reclaim")
	if fl := hostSees(t, path, 0, 0); fl.Type != unix.F_WRLCK {
		t.Fatalf("the reclaimed lock is not on the file: %+v", fl)
	}
	for d2.NSM().InGrace() {
		time.Sleep(50 * time.Millisecond)
	}
	wantLock(t, c, lockArgs("other", 1, fh, true, false, 0, 1), nlm.Denied, "a new LOCK after grace, against the reclaimed lock")
}

// TestLockExportRemoved: removing an export by reload releases its locks
// (and their OFD locks), leaving other exports' locks.
func TestLockExportRemoved(t *testing.T) {
	requireRoot(t)
	tmp := t.TempDir()
	keep, gone := exportDir(t, 0o777), exportDir(t, 0o777)
	for _, d := range []string{keep, gone} {
		if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	both := keep + " 127.0.0.1(rw,insecure,no_root_squash)\n" + gone + " 127.0.0.1(rw,insecure,no_root_squash)\n"
	exports := writeExports(t, tmp, both)
	d := lockDaemon(t, filepath.Join(tmp, "state"), exports, 0, 0)
	defer shutdown(d)
	c := nlmConn(t, d)
	wantLock(t, c, lockArgs("cl", 1, fileHandle(t, d, keep, "f"), true, false, 0, 0), nlm.Granted, "LOCK in the kept export")
	wantLock(t, c, lockArgs("cl", 1, fileHandle(t, d, gone, "f"), true, false, 0, 0), nlm.Granted, "LOCK in the removed export")
	writeExports(t, tmp, keep+" 127.0.0.1(rw,insecure,no_root_squash)\n")
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	if fl := hostSees(t, filepath.Join(gone, "f"), 0, 0); fl.Type != unix.F_UNLCK {
		t.Fatalf("the removed export's lock is still on the file: %+v", fl)
	}
	if fl := hostSees(t, filepath.Join(keep, "f"), 0, 0); fl.Type != unix.F_WRLCK {
		t.Fatalf("the kept export's lock went: %+v", fl)
	}
	if n := d.NLM().Table().Len(); n != 1 {
		t.Fatalf("%d lock table entries, want 1", n)
	}
}

// TestLockRDMAOnlyExport: an export limited to RDMA (transports=rdma)
// still takes locks, which always travel over TCP or UDP; NFS over TCP
// stays refused. (The handle is looked up while TCP is still allowed,
// then the export is reloaded as RDMA-only: the same fsid, the same
// handles.)
func TestLockRDMAOnlyExport(t *testing.T) {
	requireRoot(t)
	tmp := t.TempDir()
	dir := exportDir(t, 0o777)
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	rule := dir + " 127.0.0.1(rw,insecure,no_root_squash)\n"
	exports := writeExports(t, tmp, rule)
	d := lockDaemon(t, filepath.Join(tmp, "state"), exports, 0, 0)
	defer shutdown(d)
	mc := dialFrom(t, d.MountAddr(), "127.0.0.1", false)
	root, _ := mnt(t, mc, dir)
	nc := client.New(dialFrom(t, d.NFSAddr(), "127.0.0.1", false)).WithCred(authSys(0, 0))
	fh := lookup(t, nc, root, "f")
	writeExports(t, tmp, dir+" 127.0.0.1(rw,insecure,no_root_squash,transports=rdma)\n")
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	_, err := nc.Lookup(testCtx(t), root, "f")
	wantStatus(t, "LOOKUP over TCP on an RDMA-only export", err, wire.ErrAcces)
	wantLock(t, nlmConn(t, d), lockArgs("rc", 1, fh, true, false, 0, 0), nlm.Granted, "NLM LOCK on an RDMA-only export")
}

// TestNoNLM: --no-nlm serves and registers neither NLM nor NSM.
func TestNoNLM(t *testing.T) {
	tmp := t.TempDir()
	d := startPortmapDaemon(t, tmp, true)
	if d.NLM() != nil || d.NSM() != nil || d.NLMPort() != 0 || d.NSMPort() != 0 {
		t.Fatal("locking runs with NoNLM")
	}
	pm := dialFrom(t, d.PortmapAddr(), "127.0.0.1", false)
	for _, prog := range []uint32{nlm.Prog, nsm.Prog} {
		if _, err := rpcbind.GetPort(testCtx(t), pm, prog, 1, rpcbind.ProtoUDP); err != rpcbind.ErrNotRegistered {
			t.Fatalf("program %d registered with NoNLM: %v", prog, err)
		}
	}
	if _, err := rpcbind.GetPort(testCtx(t), pm, 100003, 3, rpcbind.ProtoTCP); err != nil {
		t.Fatalf("NFS not registered: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "state", nsm.StateFile)); !os.IsNotExist(err) {
		t.Fatalf("NoNLM wrote the status monitor's file: %v", err)
	}
}

// TestLockingRegistered: by default NLM v1, v3, v4 and NSM v1 are
// registered over TCP and UDP at the ports the daemon serves them on.
func TestLockingRegistered(t *testing.T) {
	d := startPortmapDaemon(t, t.TempDir(), false)
	pm := dialFrom(t, d.PortmapAddr(), "127.0.0.1", false)
	for _, m := range []struct {
		prog, vers uint32
		port       uint16
	}{{nlm.Prog, 1, d.NLMPort()}, {nlm.Prog, 3, d.NLMPort()}, {nlm.Prog, 4, d.NLMPort()}, {nsm.Prog, 1, d.NSMPort()}} {
		for _, prot := range []uint32{rpcbind.ProtoTCP, rpcbind.ProtoUDP} {
			if p, err := rpcbind.GetPort(testCtx(t), pm, m.prog, m.vers, prot); err != nil || p != m.port || p == 0 {
				t.Fatalf("GETPORT %d/%d/%d = %d, %v; want %d", m.prog, m.vers, prot, p, err, m.port)
			}
		}
	}
}

// TestNSMMonCallback: a local program that asked SM_MON for a host is
// called back with struct status (mon_name, new state, priv) when that
// host's SM_NOTIFY arrives, found through this daemon's rpcbind.
func TestNSMMonCallback(t *testing.T) {
	d := startPortmapDaemon(t, t.TempDir(), false)
	// The local program: 300099 v1, procedure 1 records the status.
	const prog = 300099
	got := make(chan nsm.Status, 1)
	procs := []oncrpc.Procedure{{Name: "NULL", Handler: func(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }},
		{Name: "STATUS", Handler: func(_ context.Context, call *oncrpc.Call, _ *oncrpc.Reply) error {
			var s nsm.Status
			if err := s.Decode(xdr.NewReader(call.Args)); err != nil {
				return oncrpc.ErrGarbageArgs
			}
			got <- s
			return nil
		}}}
	srv := oncrpc.NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil, &oncrpc.Program{Prog: prog, Versions: []oncrpc.Version{{Vers: 1, Procs: procs}}}), oncrpc.ServerConfig{})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeUDP(pc)
	defer srv.Shutdown(context.Background())
	pm := dialFrom(t, d.PortmapAddr(), "127.0.0.1", false)
	if ok, err := rpcbind.Set(testCtx(t), pm, rpcbind.NewMapping(prog, 1, "udp", uint16(pc.LocalAddr().(*net.UDPAddr).Port))); err != nil || !ok {
		t.Fatalf("registering the local program: %v %v", ok, err)
	}
	nc, err := oncrpc.Dial(testCtx(t), "udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(d.NSMPort()))))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	mon := nsm.Mon{MonID: nsm.MonID{MonName: "peer.example", MyID: nsm.MyID{MyName: "localhost", MyProg: prog, MyVers: 1, MyProc: 1}}, Priv: [16]byte{1, 2, 3}}
	r, err := nsm.Call(testCtx(t), nc, nsm.ProcMon, mon.Append(nil))
	var res nsm.StatRes
	if err != nil || res.Decode(r) != nil || res.Res != nsm.StatSucc {
		t.Fatalf("SM_MON: %+v %v", res, err)
	}
	if _, err := nsm.Call(testCtx(t), nc, nsm.ProcNotify, (&nsm.StatChange{MonName: "peer.example", State: 9}).Append(nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.MonName != "peer.example" || s.State != 9 || s.Priv != mon.Priv {
			t.Fatalf("status callback %+v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no status callback to the MON caller")
	}
}

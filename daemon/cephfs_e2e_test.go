//go:build ceph && linux && cgo

package daemon_test

// Several heads over one CephFS: gonfsrdma daemons in separate processes
// (this test binary re-executed as a head), each with its own listeners,
// state directory and libcephfs client, exporting the same CephFS
// directory with the same exports line. A client works through head A,
// then through head B with the handles A gave it, as after a failover.
// Needs the cluster of `make test-ceph` (CEPH_CONF).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/cephfs"
)

// headEnv, set to an exports file, makes the test binary a head: it
// serves that file and prints "READY nfs-addr mount-addr"; it stops when
// its standard input closes (or on SIGTERM).
const headEnv = "GONFSRDMA_TEST_CEPH_HEAD"

func TestMain(m *testing.M) {
	if f := os.Getenv(headEnv); f != "" {
		grace, err := time.ParseDuration(os.Getenv(headEnv + "_GRACE"))
		if err != nil {
			grace = time.Second
		}
		os.Exit(runHead(f, os.Getenv(headEnv+"_STATE"), grace))
	}
	os.Exit(m.Run())
}

func runHead(exportsFile, stateDir string, grace time.Duration) int {
	log, _ := zap.NewDevelopment()
	d, err := daemon.Start(context.Background(), log, daemon.Config{
		ExportsFile: exportsFile, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true,
		StateDir: stateDir, NLMAddr: "127.0.0.1:0", NSMAddr: "127.0.0.1:0",
		// No client statd runs: SM_NOTIFY after a restart gives up soon,
		// and the restart's grace period is short (headEnv_GRACE, 1 s).
		Grace: grace, NotifyFor: time.Second, ClientPortmapPort: 1,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "head:", err)
		return 1
	}
	fmt.Printf("READY %s %s %d\n", d.NFSAddr(), d.MountAddr(), d.NLMPort())
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.Shutdown(ctx)
	return 0
}

// head is a running head process.
type head struct {
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	nfs, mountA net.Addr
	nlm         net.Addr
}

func startHead(t *testing.T, exportsFile, stateDir string) *head {
	t.Helper()
	return startHeadGrace(t, exportsFile, stateDir, time.Second)
}

// startHeadGrace starts a head whose grace period after a start with
// locks to reclaim is grace.
func startHeadGrace(t *testing.T, exportsFile, stateDir string, grace time.Duration) *head {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), headEnv+"="+exportsFile, headEnv+"_STATE="+stateDir, headEnv+"_GRACE="+grace.String())
	cmd.Stderr = &prefixWriter{t: t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &head{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.stop() })
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			ready <- fmt.Errorf("head exited before READY: %v", err)
			return
		}
		var nfsA, mountA string
		var nlmPort int
		if _, err := fmt.Sscanf(line, "READY %s %s %d", &nfsA, &mountA, &nlmPort); err != nil {
			ready <- fmt.Errorf("head said %q", line)
			return
		}
		if h.nfs, err = net.ResolveTCPAddr("tcp", nfsA); err == nil {
			h.mountA, err = net.ResolveTCPAddr("tcp", mountA)
		}
		h.nlm = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: nlmPort}
		ready <- err
		io.Copy(io.Discard, out)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("head not ready after 60 s")
	}
	return h
}

// stop ends the head gracefully (closing its standard input); kill ends
// it at once, as a crash.
func (h *head) stop() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.stdin.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}

func (h *head) kill() {
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

type prefixWriter struct{ t *testing.T }

func (w *prefixWriter) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "head:") {
			w.t.Log("head: " + l)
		}
	}
	return len(p), nil
}

// cephExport makes a fresh directory in the test CephFS and an exports
// file exporting it as /ceph.
func cephExport(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	conf := cephtest.Conf(t)
	top, err := cephfs.New(cephfs.Options{ConfigFile: conf})
	if err != nil {
		t.Fatalf("mount the test file system: %v", err)
	}
	defer top.Close()
	dir := cephtest.FreshName("heads-")
	if _, _, err := top.Mkdir(vfs.Cred{}, top.Root(), dir, 0o777); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "exports")
	line := fmt.Sprintf("/ceph -backend=cephfs,ceph_conf=%s,ceph_path=/%s,fsid=42 127.0.0.1(rw,insecure,no_root_squash)\n", conf, dir)
	if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestCephHeads(t *testing.T) {
	exportsFile := cephExport(t)
	stateA := t.TempDir()
	a := startHead(t, exportsFile, stateA)
	b := startHead(t, exportsFile, t.TempDir())
	ctx := testCtx(t)
	ca := nfsAs(dialFrom(t, a.nfs, "127.0.0.1", false), 1000, 1000)
	cb := nfsAs(dialFrom(t, b.nfs, "127.0.0.1", false), 1000, 1000)
	rootA, _ := mnt(t, dialFrom(t, a.mountA, "127.0.0.1", false), "/ceph")
	rootB, _ := mnt(t, dialFrom(t, b.mountA, "127.0.0.1", false), "/ceph")
	if !bytes.Equal(rootA, rootB) {
		t.Fatalf("the heads give different root handles: %x, %x", rootA, rootB)
	}

	// Written and committed through A, read back byte-identical through B.
	cr, err := ca.Create(ctx, rootA, "data", unchecked(0o644))
	if err != nil {
		t.Fatal(err)
	}
	fh := cr.FH.FH
	data := make([]byte, 3<<20+123)
	rand.Read(data)
	for off := 0; off < len(data); off += 1 << 20 {
		end := min(off+1<<20, len(data))
		if _, err := ca.Write(ctx, fh, uint64(off), data[off:end], wire.Unstable); err != nil {
			t.Fatalf("WRITE through A: %v", err)
		}
	}
	if _, err := ca.Commit(ctx, fh, 0, 0); err != nil {
		t.Fatalf("COMMIT through A: %v", err)
	}
	got, err := cb.ReadAll(ctx, fh)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("READ through B of A's handle: %d bytes, err %v, equal %v", len(got), err, bytes.Equal(got, data))
	}
	if fhB := lookup(t, cb, rootB, "data"); !bytes.Equal(fhB, fh) {
		t.Errorf("LOOKUP through B gives %x, A gave %x", fhB, fh)
	}

	// A rename through A is seen through B.
	mk, err := ca.Mkdir(ctx, rootA, "dir", setMode(0o755))
	if err != nil {
		t.Fatal(err)
	}
	dirFH := mk.FH.FH
	if _, err := ca.Rename(ctx, rootA, "data", dirFH, "moved"); err != nil {
		t.Fatalf("RENAME through A: %v", err)
	}
	_, err = cb.Lookup(ctx, rootB, "data")
	wantStatus(t, "LOOKUP of the old name through B", err, wire.ErrNoEnt)
	if fhB := lookup(t, cb, dirFH, "moved"); !bytes.Equal(fhB, fh) {
		t.Errorf("LOOKUP of the new name through B gives %x, want %x", fhB, fh)
	}
	names := map[string]bool{}
	es, err := cb.ReaddirAll(ctx, dirFH, 4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		names[e.Name] = true
	}
	if !names["moved"] {
		t.Errorf("READDIR through B: %v", names)
	}

	// Head A crashes, holding capabilities on the file (it wrote it). It
	// restarts (same state directory), ends the session its previous run
	// left, and so frees them at once for B, instead of after the MDS's
	// session timeout. The client goes on through both with A's handles.
	a.kill()
	a2 := startHead(t, exportsFile, stateA)
	t0 := time.Now()
	if _, err := cb.Write(ctx, fh, 0, []byte("after-failover"), wire.FileSync); err != nil {
		t.Fatalf("WRITE through B after A crashed and restarted: %v (after %v)", err, time.Since(t0))
	}
	t.Logf("first WRITE through B after A's restart: %v", time.Since(t0).Round(time.Millisecond))
	if _, err := cb.Getattr(ctx, dirFH); err != nil {
		t.Fatalf("GETATTR through B of A's directory handle: %v", err)
	}
	ca2 := nfsAs(dialFrom(t, a2.nfs, "127.0.0.1", false), 1000, 1000)
	rr, err := ca2.Read(ctx, fh, 0, 14)
	if err != nil || string(rr.Data) != "after-failover" {
		t.Fatalf("READ through the restarted head: %q %v", rr.Data, err)
	}
	// Removed through B: stale through the restarted A.
	if _, err := cb.Remove(ctx, dirFH, "moved"); err != nil {
		t.Fatal(err)
	}
	_, err = ca2.Getattr(ctx, fh)
	wantStatus(t, "GETATTR through A of a file removed through B", err, wire.ErrStale)
}

// NLM locks taken through one head conflict with locks through another:
// each head's lock table mirrors its locks as CephFS locks (vfs.Locker),
// which the MDS arbitrates.
func TestCephHeadsLocks(t *testing.T) {
	exportsFile := cephExport(t)
	a := startHead(t, exportsFile, t.TempDir())
	b := startHead(t, exportsFile, t.TempDir())
	ctx := testCtx(t)
	ca := nfsAs(dialFrom(t, a.nfs, "127.0.0.1", false), 0, 0)
	rootA, _ := mnt(t, dialFrom(t, a.mountA, "127.0.0.1", false), "/ceph")
	cr, err := ca.Create(ctx, rootA, "locked", unchecked(0o666))
	if err != nil {
		t.Fatal(err)
	}
	fh := cr.FH.FH
	nlmA := dialFrom(t, a.nlm, "127.0.0.1", false)
	nlmA.SetCred(authSys(0, 0))
	nlmB := dialFrom(t, b.nlm, "127.0.0.1", false)
	nlmB.SetCred(authSys(0, 0))

	wantLock(t, nlmA, lockArgs("client-a", 1, fh, true, false, 0, 10), nlm.Granted, "LOCK [0, 10) through A")
	wantLock(t, nlmB, lockArgs("client-b", 1, fh, false, false, 5, 10), nlm.Denied, "LOCK [5, 15) through B over A's lock")
	tr, err := nlm.CallTest(ctx, nlmB, nlm.Vers4, &nlm.TestArgs{Lock: nlm.Lock{CallerName: "client-b", FH: fh, OH: []byte("client-b"), SVID: 1, Offset: 0, Length: 1}})
	if err != nil || tr.Stat != nlm.Denied || !tr.Holder.Exclusive || tr.Holder.Offset != 0 || tr.Holder.Length != 10 {
		t.Fatalf("TEST through B: %+v %v, want A's exclusive [0, 10)", tr, err)
	}
	wantLock(t, nlmB, lockArgs("client-b", 1, fh, true, false, 10, 5), nlm.Granted, "LOCK [10, 15) through B, next to A's")
	wantLock(t, nlmA, lockArgs("client-a", 2, fh, false, false, 12, 1), nlm.Denied, "LOCK [12, 13) through A over B's lock")
	if res, err := nlm.CallUnlock(ctx, nlmA, nlm.Vers4, &nlm.UnlockArgs{Lock: nlm.Lock{CallerName: "client-a", FH: fh, OH: []byte("client-a"), SVID: 1, Offset: 0, Length: 10}}); err != nil || res.Stat != nlm.Granted {
		t.Fatalf("UNLOCK through A: %v %v", res.Stat, err)
	}
	wantLock(t, nlmB, lockArgs("client-b", 1, fh, false, false, 5, 10), nlm.Granted, "LOCK [5, 15) through B after A's unlock")
}

// After a head restarts with clients to reclaim, the other heads refuse
// new locks (DENIED_GRACE_PERIOD) until its grace period ends, so none
// grants a lock a reclaim still needs; the reclaim through the restarted
// head succeeds, and after the grace a conflicting lock through the other
// head is DENIED (the reclaimed lock holds) and a free range GRANTED.
func TestCephHeadsSharedGrace(t *testing.T) {
	const grace = 6 * time.Second
	exportsFile := cephExport(t)
	stateA := t.TempDir()
	a := startHeadGrace(t, exportsFile, stateA, grace)
	b := startHead(t, exportsFile, t.TempDir())
	ctx := testCtx(t)
	ca := nfsAs(dialFrom(t, a.nfs, "127.0.0.1", false), 0, 0)
	rootA, _ := mnt(t, dialFrom(t, a.mountA, "127.0.0.1", false), "/ceph")
	cr, err := ca.Create(ctx, rootA, "graced", unchecked(0o666))
	if err != nil {
		t.Fatal(err)
	}
	fh := cr.FH.FH
	nlmA := dialFrom(t, a.nlm, "127.0.0.1", false)
	nlmA.SetCred(authSys(0, 0))
	wantLock(t, nlmA, lockArgs("client-a", 1, fh, true, false, 0, 10), nlm.Granted, "LOCK [0, 10) through A (client-a monitored)")
	nlmB := dialFrom(t, b.nlm, "127.0.0.1", false)
	nlmB.SetCred(authSys(0, 0))
	wantLock(t, nlmB, lockArgs("client-b", 1, fh, true, false, 40, 10), nlm.Granted, "LOCK [40, 50) through B before A's crash")

	a.kill()
	restart := time.Now()
	a = startHeadGrace(t, exportsFile, stateA, grace)
	ready := time.Since(restart)
	wantLock(t, nlmB, lockArgs("client-b", 2, fh, true, false, 0, 10), nlm.DeniedGracePeriod, "LOCK [0, 10) through B during A's grace")
	wantLock(t, nlmB, lockArgs("client-b", 2, fh, true, false, 20, 10), nlm.DeniedGracePeriod, "LOCK [20, 30) through B during A's grace")
	if tr, err := nlm.CallTest(ctx, nlmB, nlm.Vers4, &nlm.TestArgs{Lock: nlm.Lock{CallerName: "client-b", FH: fh, OH: []byte("client-b"), SVID: 2, Offset: 0, Length: 1}}); err != nil || tr.Stat != nlm.DeniedGracePeriod {
		t.Fatalf("TEST through B during A's grace: %v %v, want DENIED_GRACE_PERIOD", tr.Stat, err)
	}
	nlmA = dialFrom(t, a.nlm, "127.0.0.1", false)
	nlmA.SetCred(authSys(0, 0))
	wantLock(t, nlmA, lockArgs("client-a", 1, fh, true, true, 0, 10), nlm.Granted, "reclaim of [0, 10) through restarted A")

	// After A's grace: B grants again, with the reclaimed lock in force.
	var got nlm.Stat
	for {
		res, err := nlm.CallLock(ctx, nlmB, nlm.Vers4, nlm.ProcLock, lockArgs("client-b", 2, fh, true, false, 20, 10))
		if err != nil {
			t.Fatal(err)
		}
		if got = res.Stat; got != nlm.DeniedGracePeriod {
			break
		}
		if time.Since(restart) > ready+grace+30*time.Second {
			t.Fatalf("LOCK through B still DENIED_GRACE_PERIOD %v after A's restart (grace %v)", time.Since(restart), grace)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got != nlm.Granted {
		t.Fatalf("LOCK [20, 30) through B after A's grace: %v, want GRANTED", got)
	}
	if since := time.Since(restart); since < grace {
		t.Fatalf("B granted %v after A's restart, within A's grace of %v", since, grace)
	}
	wantLock(t, nlmB, lockArgs("client-b", 2, fh, true, false, 5, 10), nlm.Denied, "LOCK [5, 15) through B over A's reclaimed lock")
	t.Logf("A ready %v after its restart; B refused new locks until %v after it (grace %v)", ready.Round(time.Millisecond), time.Since(restart).Round(time.Millisecond), grace)
}

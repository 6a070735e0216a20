package daemon_test

// End-to-end tests of the exports(5) rules through a real daemon over
// TCP. Distinct loopback source addresses (127.0.0.2, 127.0.0.3) act as
// distinct clients; binding a source port below 1024 (the tests run as
// root) makes a "secure" client.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/internal/exporttest"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Loopback addresses that act as distinct clients.
const (
	clientA = "127.0.0.2"
	clientB = "127.0.0.3"
)

// testDaemon is a daemon started on ephemeral loopback ports with an
// exports file the test may rewrite.
type testDaemon struct {
	*daemon.Daemon
	exportsFile string
}

// requireRoot stops a test that needs root (reserved source ports, file
// ownership). Under CI, which runs as root, it fails instead of skipping.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root (reserved source ports and file ownership); CI runs as root")
	}
	t.Skip("needs root: reserved source ports and file ownership")
}

// exportDir makes a directory for an export with the given mode, owned by
// root.
func exportDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	return exporttest.Dir(t, mode)
}

// startDaemon writes exportsText to a file and starts a daemon on it.
func startDaemon(t *testing.T, exportsText string) *testDaemon {
	t.Helper()
	requireRoot(t)
	return startDaemonLogging(t, zap.NewNop(), exportsText)
}

// startDaemonLogging is startDaemon logging to log, for any user.
func startDaemonLogging(t *testing.T, log *zap.Logger, exportsText string) *testDaemon {
	t.Helper()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "exports")
	if err := os.WriteFile(file, []byte(exportsText), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), log, daemon.Config{
		ExportsFile: file,
		NFSAddr:     "127.0.0.1:0",
		MountAddr:   "127.0.0.1:0",
		NoPortmap:   true,
		StateDir:    filepath.Join(tmp, "state"),
	})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return &testDaemon{Daemon: d, exportsFile: file}
}

// rewrite replaces the exports file (Reload is the caller's business).
func (d *testDaemon) rewrite(t *testing.T, exportsText string) {
	t.Helper()
	if err := os.WriteFile(d.exportsFile, []byte(exportsText), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dialFrom connects to addr from source address ip. With reserved the
// source port is below 1024 (a "secure" client); otherwise it is an
// ephemeral port, which on Linux is always >= 1024.
func dialFrom(t *testing.T, addr net.Addr, ip string, reserved bool) *oncrpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		local := &net.TCPAddr{IP: net.ParseIP(ip)}
		if reserved {
			local.Port = 600 + rand.IntN(400)
		}
		c, err := (&net.Dialer{LocalAddr: local}).DialContext(ctx, "tcp", addr.String())
		if err == nil {
			if !reserved && c.LocalAddr().(*net.TCPAddr).Port < 1024 {
				t.Fatalf("ephemeral source port %v is reserved", c.LocalAddr())
			}
			cl := oncrpc.NewClient(c)
			t.Cleanup(func() { cl.Close() })
			return cl
		}
		if reserved && try < 50 && (errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)) {
			continue
		}
		t.Fatalf("dial %v from %s: %v", addr, ip, err)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mnt mounts path over c and fails the test unless it succeeds.
func mnt(t *testing.T, c oncrpc.Caller, path string) ([]byte, []uint32) {
	t.Helper()
	fh, flavors, err := mount.Mnt(testCtx(t), c, path)
	if err != nil {
		t.Fatalf("MNT %s: %v", path, err)
	}
	return fh, flavors
}

// wantMountStat checks that MNT of path over c fails with want.
func wantMountStat(t *testing.T, c oncrpc.Caller, path string, want mount.Stat) {
	t.Helper()
	_, _, err := mount.Mnt(testCtx(t), c, path)
	var got mount.Stat
	if !errors.As(err, &got) || got != want {
		t.Errorf("MNT %s: got %v, want %v", path, err, want)
	}
}

// wantStatus checks the nfsstat3 of a call's error.
func wantStatus(t *testing.T, what string, err error, want wire.Status) {
	t.Helper()
	if got := client.StatusOf(err); got != want {
		t.Errorf("%s: got %v (%v), want %v", what, got, err, want)
	}
}

func authSys(uid, gid uint32, gids ...uint32) oncrpc.OpaqueAuth {
	return oncrpc.NewAuthSys("e2e", uid, gid, gids...)
}

// nfsAs is an NFS client over c that sends uid/gid.
func nfsAs(c oncrpc.Caller, uid, gid uint32, gids ...uint32) *client.Client {
	return client.New(c).WithCred(authSys(uid, gid, gids...))
}

func setMode(m uint32) wire.Sattr { return wire.Sattr{Mode: wire.SetUint32{Set: true, V: m}} }

func unchecked(mode uint32) wire.CreateHow {
	return wire.CreateHow{Mode: wire.Unchecked, Attr: setMode(mode)}
}

func lookup(t *testing.T, c *client.Client, dir []byte, name string) []byte {
	t.Helper()
	res, err := c.Lookup(testCtx(t), dir, name)
	if err != nil {
		t.Fatalf("LOOKUP %s: %v", name, err)
	}
	return res.FH
}

func writeFile(t *testing.T, path, data string, uid, gid int, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func ownerOf(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Uid, st.Gid
}

// TestExportsMountAllowedRefused: a client no rule matches gets
// MNT3ERR_ACCES, and NFS3ERR_ACCES on a handle it obtained elsewhere.
func TestExportsMountAllowedRefused(t *testing.T) {
	dir := exportDir(t, 0o755)
	d := startDaemon(t, dir+" "+clientA+"(rw,insecure)\n")
	ctx := testCtx(t)

	a := dialFrom(t, d.MountAddr(), clientA, false)
	fh, flavors := mnt(t, a, dir)
	if !slices.Equal(flavors, []uint32{oncrpc.AuthSys}) {
		t.Errorf("MNT flavors = %v, want [AUTH_SYS]", flavors)
	}
	wantMountStat(t, a, dir+"/not-exported", mount.StatNoEnt)

	b := dialFrom(t, d.MountAddr(), clientB, true)
	wantMountStat(t, b, dir, mount.StatAcces)

	// A handle leaked to the unlisted client is no key.
	_, err := nfsAs(dialFrom(t, d.NFSAddr(), clientB, true), 1000, 1000).Getattr(ctx, fh)
	wantStatus(t, "GETATTR from an unlisted client", err, wire.ErrAcces)
	if _, err := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000).Getattr(ctx, fh); err != nil {
		t.Errorf("GETATTR from the listed client: %v", err)
	}
}

// TestExportsFirstRuleWins: rules are tried in file order, so a host
// listed ro before a rw network rule covering it stays ro.
func TestExportsFirstRuleWins(t *testing.T) {
	dir := exportDir(t, 0o777)
	d := startDaemon(t, fmt.Sprintf("%s %s(ro,insecure) 127.0.0.0/8(rw,insecure)\n", dir, clientA))
	ctx := testCtx(t)
	root, _ := mnt(t, dialFrom(t, d.MountAddr(), clientA, false), dir)
	_, err := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000).Create(ctx, root, "a", unchecked(0o644))
	wantStatus(t, "CREATE by the host listed ro first", err, wire.ErrROFS)
	if _, err := nfsAs(dialFrom(t, d.NFSAddr(), clientB, false), 1000, 1000).Create(ctx, root, "b", unchecked(0o644)); err != nil {
		t.Errorf("CREATE by another host of the rw network: %v", err)
	}
}

// TestExportsReadOnlyVsReadWrite: on one export, the ro client gets
// NFS3ERR_ROFS on every change while the rw client succeeds.
func TestExportsReadOnlyVsReadWrite(t *testing.T) {
	dir := exportDir(t, 0o777)
	writeFile(t, filepath.Join(dir, "f"), "hello", 1000, 1000, 0o666)
	writeFile(t, filepath.Join(dir, "victim"), "x", 1000, 1000, 0o666)
	d := startDaemon(t, fmt.Sprintf("%s %s(ro,insecure) %s(rw,insecure)\n", dir, clientA, clientB))
	ctx := testCtx(t)

	ro := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000)
	rw := nfsAs(dialFrom(t, d.NFSAddr(), clientB, false), 1000, 1000)
	root, _ := mnt(t, dialFrom(t, d.MountAddr(), clientA, false), dir)
	f := lookup(t, ro, root, "f")

	if data, err := ro.ReadAll(ctx, f); err != nil || string(data) != "hello" {
		t.Errorf("ro READ = %q, %v", data, err)
	}
	_, err := ro.Write(ctx, f, 0, []byte("HELLO"), wire.FileSync)
	wantStatus(t, "ro WRITE", err, wire.ErrROFS)
	_, err = ro.Create(ctx, root, "new", unchecked(0o644))
	wantStatus(t, "ro CREATE", err, wire.ErrROFS)
	_, err = ro.Mkdir(ctx, root, "newdir", setMode(0o755))
	wantStatus(t, "ro MKDIR", err, wire.ErrROFS)
	_, err = ro.Remove(ctx, root, "victim")
	wantStatus(t, "ro REMOVE", err, wire.ErrROFS)
	_, err = ro.Rename(ctx, root, "victim", root, "moved")
	wantStatus(t, "ro RENAME", err, wire.ErrROFS)
	_, err = ro.Setattr(ctx, f, setMode(0o600), nil)
	wantStatus(t, "ro SETATTR", err, wire.ErrROFS)
	if res, err := ro.Access(ctx, f, wire.AccessAll); err != nil {
		t.Errorf("ro ACCESS: %v", err)
	} else if res.Access != wire.AccessRead {
		t.Errorf("ro ACCESS = %#x, want READ only", res.Access)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "hello" {
		t.Errorf("file changed through the ro client: %q", b)
	}
	for _, name := range []string{"new", "newdir"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s created through the ro client", name)
		}
	}

	if _, err := rw.Write(ctx, f, 0, []byte("HELLO"), wire.FileSync); err != nil {
		t.Errorf("rw WRITE: %v", err)
	}
	if _, err := rw.Create(ctx, root, "new", unchecked(0o644)); err != nil {
		t.Errorf("rw CREATE: %v", err)
	}
	if _, err := rw.Setattr(ctx, f, setMode(0o600), nil); err != nil {
		t.Errorf("rw SETATTR: %v", err)
	}
	if _, err := rw.Remove(ctx, root, "victim"); err != nil {
		t.Errorf("rw REMOVE: %v", err)
	}
	if res, err := rw.Access(ctx, f, wire.AccessAll); err != nil {
		t.Errorf("rw ACCESS: %v", err)
	} else if want := uint32(wire.AccessRead | wire.AccessModify | wire.AccessExtend); res.Access != want {
		t.Errorf("rw ACCESS = %#x, want %#x", res.Access, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "HELLO" {
		t.Errorf("rw WRITE did not reach the file: %q", b)
	}
}

// TestExportsSquash: root_squash maps uid 0 to 65534, no_root_squash
// keeps it, all_squash maps everybody to anonuid/anongid.
func TestExportsSquash(t *testing.T) {
	squashDir := exportDir(t, 0o777)
	allDir := exportDir(t, 0o777)
	d := startDaemon(t, fmt.Sprintf("%s %s(rw,insecure) %s(rw,insecure,no_root_squash)\n%s %s(rw,insecure,all_squash,anonuid=1234,anongid=5678)\n",
		squashDir, clientA, clientB, allDir, clientA))
	ctx := testCtx(t)

	mc := dialFrom(t, d.MountAddr(), clientA, false)
	squashRoot, _ := mnt(t, mc, squashDir)
	allRoot, _ := mnt(t, mc, allDir)
	fromA := dialFrom(t, d.NFSAddr(), clientA, false)
	fromB := dialFrom(t, d.NFSAddr(), clientB, false)

	for _, tc := range []struct {
		name     string
		c        *client.Client
		dir      []byte
		path     string
		uid, gid uint32
	}{
		{"root_squash", nfsAs(fromA, 0, 0, 0), squashRoot, squashDir, 65534, 65534},
		{"root_squash/user", nfsAs(fromA, 1000, 1000), squashRoot, squashDir, 1000, 1000},
		{"no_root_squash", nfsAs(fromB, 0, 0, 0), squashRoot, squashDir, 0, 0},
		{"all_squash/user", nfsAs(fromA, 1000, 1000, 100), allRoot, allDir, 1234, 5678},
		{"all_squash/root", nfsAs(fromA, 0, 0), allRoot, allDir, 1234, 5678},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "by-" + filepath.Base(tc.name)
			if tc.name == "no_root_squash" {
				name = "by-root-unsquashed"
			}
			res, err := tc.c.Create(ctx, tc.dir, name, unchecked(0o644))
			if err != nil {
				t.Fatalf("CREATE: %v", err)
			}
			if a := res.Attr.Attr; !res.Attr.Set || a.UID != tc.uid || a.GID != tc.gid {
				t.Errorf("CREATE attributes owner %d:%d (set %v), want %d:%d", a.UID, a.GID, res.Attr.Set, tc.uid, tc.gid)
			}
			if uid, gid := ownerOf(t, filepath.Join(tc.path, name)); uid != tc.uid || gid != tc.gid {
				t.Errorf("on disk owner %d:%d, want %d:%d", uid, gid, tc.uid, tc.gid)
			}
		})
	}

	// A squashed root cannot read a root-only file; an unsquashed one can.
	writeFile(t, filepath.Join(squashDir, "secret"), "s3cret", 0, 0, 0o600)
	fh := lookup(t, nfsAs(fromB, 0, 0), squashRoot, "secret")
	_, err := nfsAs(fromA, 0, 0).Read(ctx, fh, 0, 100)
	wantStatus(t, "READ of a 0600 root file by a squashed root", err, wire.ErrAcces)
	if data, err := nfsAs(fromB, 0, 0).ReadAll(ctx, fh); err != nil || string(data) != "s3cret" {
		t.Errorf("READ by an unsquashed root = %q, %v", data, err)
	}
}

// TestExportsSecurePort: on a secure export (the default) a TCP source
// port >= 1024 is refused: MNT3ERR_ACCES, and NFS3ERR_PERM on NFS calls
// (knfsd's nfserr_perm); an insecure export lets it in.
func TestExportsSecurePort(t *testing.T) {
	secDir := exportDir(t, 0o755)
	insDir := exportDir(t, 0o755)
	d := startDaemon(t, fmt.Sprintf("%s %s(rw)\n%s %s(rw,insecure)\n", secDir, clientA, insDir, clientA))
	ctx := testCtx(t)

	priv := dialFrom(t, d.MountAddr(), clientA, true)
	secRoot, _ := mnt(t, priv, secDir)
	insRoot, _ := mnt(t, priv, insDir)

	unpriv := dialFrom(t, d.MountAddr(), clientA, false)
	wantMountStat(t, unpriv, secDir, mount.StatAcces)
	mnt(t, unpriv, insDir)

	high := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000)
	_, err := high.Getattr(ctx, secRoot)
	wantStatus(t, "GETATTR on a secure export from a high port", err, wire.ErrPerm)
	_, err = high.Create(ctx, secRoot, "f", unchecked(0o644))
	wantStatus(t, "CREATE on a secure export from a high port", err, wire.ErrPerm)
	if _, err := high.Getattr(ctx, insRoot); err != nil {
		t.Errorf("GETATTR on an insecure export from a high port: %v", err)
	}

	low := nfsAs(dialFrom(t, d.NFSAddr(), clientA, true), 1000, 1000)
	if _, err := low.Getattr(ctx, secRoot); err != nil {
		t.Errorf("GETATTR on a secure export from a reserved port: %v", err)
	}
}

// TestExportsTransportsRDMA: transports=rdma refuses NFS calls over TCP
// with NFS3ERR_ACCES; MNT (always TCP/UDP) still answers.
func TestExportsTransportsRDMA(t *testing.T) {
	rdmaDir := exportDir(t, 0o755)
	tcpDir := exportDir(t, 0o755)
	d := startDaemon(t, fmt.Sprintf("%s %s(rw,insecure,transports=rdma)\n%s %s(rw,insecure,transports=tcp)\n", rdmaDir, clientA, tcpDir, clientA))
	ctx := testCtx(t)

	mc := dialFrom(t, d.MountAddr(), clientA, false)
	rdmaRoot, _ := mnt(t, mc, rdmaDir)
	tcpRoot, _ := mnt(t, mc, tcpDir)
	c := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000)
	_, err := c.Getattr(ctx, rdmaRoot)
	wantStatus(t, "GETATTR over TCP on a transports=rdma export", err, wire.ErrAcces)
	_, err = c.Lookup(ctx, rdmaRoot, "x")
	wantStatus(t, "LOOKUP over TCP on a transports=rdma export", err, wire.ErrAcces)
	if _, err := c.Getattr(ctx, tcpRoot); err != nil {
		t.Errorf("GETATTR over TCP on a transports=tcp export: %v", err)
	}
}

// TestExportsSecFlavor: sec=none admits AUTH_NONE (as anonuid) and
// refuses AUTH_SYS with AUTH_TOOWEAK (RFC 2623 section 2.3.2); sec=sys the
// reverse; sec=sys:none both. MNT lists the flavors in the admin's order.
func TestExportsSecFlavor(t *testing.T) {
	noneDir := exportDir(t, 0o777)
	sysDir := exportDir(t, 0o777)
	bothDir := exportDir(t, 0o777)
	d := startDaemon(t, fmt.Sprintf("%s %s(rw,insecure,sec=none)\n%s %s(rw,insecure,sec=sys)\n%s %s(rw,insecure,sec=sys:none)\n",
		noneDir, clientA, sysDir, clientA, bothDir, clientA))
	ctx := testCtx(t)

	mc := dialFrom(t, d.MountAddr(), clientA, false)
	conn := dialFrom(t, d.NFSAddr(), clientA, false)
	anon := client.New(conn) // AUTH_NONE
	sys := nfsAs(conn, 1000, 1000)
	for _, tc := range []struct {
		dir        string
		flavors    []uint32
		none, sysc bool
	}{
		{noneDir, []uint32{oncrpc.AuthNone}, true, false},
		{sysDir, []uint32{oncrpc.AuthSys}, false, true},
		{bothDir, []uint32{oncrpc.AuthSys, oncrpc.AuthNone}, true, true},
	} {
		root, flavors := mnt(t, mc, tc.dir)
		if !slices.Equal(flavors, tc.flavors) {
			t.Errorf("MNT %s flavors = %v, want %v", tc.dir, flavors, tc.flavors)
		}
		_, err := anon.Create(ctx, root, "anon", unchecked(0o644))
		wantFlavor(t, "AUTH_NONE CREATE in "+tc.dir, err, tc.none)
		_, err = sys.Create(ctx, root, "sys", unchecked(0o644))
		wantFlavor(t, "AUTH_SYS CREATE in "+tc.dir, err, tc.sysc)
		if _, err := os.Lstat(filepath.Join(tc.dir, "anon")); (err == nil) != tc.none {
			t.Errorf("AUTH_NONE file in %s exists: %v, want %v", tc.dir, err == nil, tc.none)
		}
		if _, err := os.Lstat(filepath.Join(tc.dir, "sys")); (err == nil) != tc.sysc {
			t.Errorf("AUTH_SYS file in %s exists: %v, want %v", tc.dir, err == nil, tc.sysc)
		}
		if tc.none {
			if uid, gid := ownerOf(t, filepath.Join(tc.dir, "anon")); uid != 65534 || gid != 65534 {
				t.Errorf("AUTH_NONE file owned by %d:%d, want 65534:65534", uid, gid)
			}
		}
		if tc.sysc {
			if uid, gid := ownerOf(t, filepath.Join(tc.dir, "sys")); uid != 1000 || gid != 1000 {
				t.Errorf("AUTH_SYS file owned by %d:%d, want 1000:1000", uid, gid)
			}
		}
	}
}

// wantFlavor checks that a call succeeded when its flavor is allowed and
// was refused with MSG_DENIED AUTH_ERROR AUTH_TOOWEAK when it is not.
func wantFlavor(t *testing.T, what string, err error, allowed bool) {
	t.Helper()
	if allowed {
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	var re *oncrpc.RejectError
	if !errors.As(err, &re) || re.RejectStat != oncrpc.AuthErrorStat || re.AuthStat != oncrpc.AuthTooWeak {
		t.Errorf("%s: %v, want AUTH_ERROR AUTH_TOOWEAK", what, err)
	}
}

// TestExportsReload: daemon.Reload after rewriting the exports file
// applies a changed option to the next call on an open connection, makes
// a removed export's handles NFS3ERR_STALE, and on a bad file returns the
// error and keeps the previous table.
func TestExportsReload(t *testing.T) {
	aDir := exportDir(t, 0o777)
	bDir := exportDir(t, 0o777)
	writeFile(t, filepath.Join(aDir, "f"), "one", 1000, 1000, 0o644)
	writeFile(t, filepath.Join(bDir, "g"), "two", 1000, 1000, 0o644)
	rw := fmt.Sprintf("%s %s(rw,insecure)\n%s %s(rw,insecure)\n", aDir, clientA, bDir, clientA)
	d := startDaemon(t, rw)
	ctx := testCtx(t)

	mc := dialFrom(t, d.MountAddr(), clientA, false)
	aRoot, _ := mnt(t, mc, aDir)
	bRoot, _ := mnt(t, mc, bDir)
	conn := dialFrom(t, d.NFSAddr(), clientA, false)
	c := nfsAs(conn, 1000, 1000)
	f := lookup(t, c, aRoot, "f")
	g := lookup(t, c, bRoot, "g")
	if _, err := c.Write(ctx, f, 0, []byte("ONE"), wire.FileSync); err != nil {
		t.Fatalf("WRITE before reload: %v", err)
	}

	// /a becomes read-only, /b goes away.
	d.rewrite(t, fmt.Sprintf("%s %s(ro,insecure)\n", aDir, clientA))
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	checkAfterFirstReload := func(when string) {
		t.Helper()
		_, err := c.Write(ctx, f, 0, []byte("one"), wire.FileSync)
		wantStatus(t, when+": WRITE on the now ro export", err, wire.ErrROFS)
		if data, err := c.ReadAll(ctx, f); err != nil || string(data) != "ONE" {
			t.Errorf("%s: READ on the ro export = %q, %v", when, data, err)
		}
		_, err = c.Getattr(ctx, g)
		wantStatus(t, when+": GETATTR of a removed export's file", err, wire.ErrStale)
		_, err = c.Getattr(ctx, bRoot)
		wantStatus(t, when+": GETATTR of a removed export's root", err, wire.ErrStale)
		_, err = c.Read(ctx, g, 0, 10)
		wantStatus(t, when+": READ of a removed export's file", err, wire.ErrStale)
		wantMountStat(t, mc, bDir, mount.StatNoEnt)
	}
	checkAfterFirstReload("after reload")

	// A bad file: Reload fails and the previous table stays.
	d.rewrite(t, fmt.Sprintf("%s %s(rw,insecure,bogus_option)\n%s %s(rw)\n", aDir, clientA, bDir, clientA))
	if err := d.Reload(); err == nil {
		t.Error("Reload of a bad exports file succeeded")
	} else {
		t.Logf("Reload of a bad file: %v", err)
	}
	checkAfterFirstReload("after a failed reload")

	// The client loses its rule on /a: ACCES on the next call.
	d.rewrite(t, fmt.Sprintf("%s %s(rw,insecure)\n", aDir, clientB))
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	_, err := c.Getattr(ctx, f)
	wantStatus(t, "GETATTR after the client's rule was removed", err, wire.ErrAcces)
	wantMountStat(t, mc, aDir, mount.StatAcces)

	// A squash change applies to the next call: all_squash.
	d.rewrite(t, fmt.Sprintf("%s %s(rw,insecure,all_squash,anonuid=1234,anongid=5678)\n", aDir, clientA))
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, err := c.Create(ctx, aRoot, "squashed", unchecked(0o644)); err != nil {
		t.Errorf("CREATE after switching to all_squash: %v", err)
	} else if uid, gid := ownerOf(t, filepath.Join(aDir, "squashed")); uid != 1234 || gid != 5678 {
		t.Errorf("CREATE after switching to all_squash: owner %d:%d, want 1234:5678", uid, gid)
	}

	// Everything back: the same handles work again on the same connection.
	d.rewrite(t, rw)
	if err := d.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, err := c.Write(ctx, f, 0, []byte("1"), wire.FileSync); err != nil {
		t.Errorf("WRITE after restoring rw: %v", err)
	}
	if data, err := c.ReadAll(ctx, g); err != nil || string(data) != "two" {
		t.Errorf("READ of the restored export's old handle = %q, %v", data, err)
	}
	select {
	case <-conn.Done():
		t.Error("the NFS connection closed during the reloads")
	default:
	}
}

// TestExportsReloadFailedBuild: a file that parses but cannot be opened
// (an export directory that does not exist, or two exports with one
// fsid) makes Reload fail; the exports still in use must keep working.
func TestExportsReloadFailedBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(aDir string) string
	}{
		{"missing directory", func(aDir string) string {
			return fmt.Sprintf("%s %s(rw,insecure)\n/nonexistent/gonfsrdma-e2e %s(rw,insecure)\n", aDir, clientA, clientA)
		}},
		{"duplicate fsid", func(aDir string) string {
			other := exportDir(t, 0o755)
			return fmt.Sprintf("%s -fsid=7 %s(rw,insecure)\n%s -fsid=7 %s(rw,insecure)\n", aDir, clientA, other, clientA)
		}},
		// The parser cannot see this clash: the first export's fsid is
		// the hash of its path; the daemon's build finds it after it
		// has taken over the first export's open backend.
		{"fsid equal to another export's path hash", func(aDir string) string {
			other := exportDir(t, 0o755)
			return fmt.Sprintf("%s %s(rw,insecure)\n%s -fsid=%d %s(rw,insecure)\n", aDir, clientA, other, nfs.FSIDFromPath(aDir), clientA)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aDir := exportDir(t, 0o777)
			writeFile(t, filepath.Join(aDir, "f"), "one", 1000, 1000, 0o644)
			first := fmt.Sprintf("%s -fsid=7 %s(rw,insecure)\n", aDir, clientA)
			if strings.HasPrefix(tc.name, "fsid equal") {
				first = fmt.Sprintf("%s %s(rw,insecure)\n", aDir, clientA)
			}
			d := startDaemon(t, first)
			ctx := testCtx(t)
			root, _ := mnt(t, dialFrom(t, d.MountAddr(), clientA, false), aDir)
			c := nfsAs(dialFrom(t, d.NFSAddr(), clientA, false), 1000, 1000)
			f := lookup(t, c, root, "f")

			d.rewrite(t, tc.next(aDir))
			if err := d.Reload(); err == nil {
				t.Fatal("Reload succeeded")
			} else {
				t.Logf("Reload: %v", err)
			}
			if data, err := c.ReadAll(ctx, f); err != nil || string(data) != "one" {
				t.Errorf("READ after a failed reload = %q, %v", data, err)
			}
			if _, err := c.Lookup(ctx, root, "f"); err != nil {
				t.Errorf("LOOKUP after a failed reload: %v", err)
			}
		})
	}
}

package adversary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
)

// Source addresses of the attacking clients. Every export is open to
// 127.0.0.0/8, so any loopback address may mount; distinct addresses let
// per-address limits tell the attacker from a bystander.
const (
	attackerIP  = "127.0.0.2"
	bystanderIP = "127.0.0.3"
)

// The anonymous ids: the exports' default, and the all_squash export's.
const (
	nobody   = 65534
	anonUID  = 1234
	anonGID  = 5678
	invalid  = 0xffffffff
	userUID  = 1000
	userGID  = 1000
	otherUID = 1001
)

// requireRoot stops a test that needs root: the daemon must own files as
// other users. Under CI it fails instead of skipping.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root (the server must own files as other users); CI runs as root")
	}
	t.Skip("needs root: the server must own files as other users")
}

// env is an in-process daemon over OS-backend exports in temporary
// directories, the attacker's setup of issue 11:
//
//	exp   rw,root_squash
//	exp2  ro,all_squash
//	nrs   rw,no_root_squash
//	anon  rw,all_squash,anonuid=1234,anongid=5678
//
// and outside, a directory of the same file system in no export.
type env struct {
	t                             *testing.T
	base, stateDir, exportsFile   string
	exp, exp2, nrs, anon, outside string
	cfg                           daemon.Config
	d                             *daemon.Daemon
}

// newEnv builds the directories and starts the daemon; tune, when not
// nil, adjusts the daemon's configuration first.
func newEnv(t *testing.T, tune func(*daemon.Config)) *env {
	t.Helper()
	requireRoot(t)
	base := t.TempDir()
	must(t, os.Chmod(base, 0o755))
	e := &env{t: t, base: base, stateDir: filepath.Join(base, "state")}
	mk := func(name string, mode os.FileMode) string {
		p := filepath.Join(base, name)
		must(t, os.Mkdir(p, 0o700))
		must(t, os.Chmod(p, mode))
		return p
	}
	e.exp, e.exp2, e.nrs, e.anon, e.outside = mk("exp", 0o777), mk("exp2", 0o777), mk("nrs", 0o777), mk("anon", 0o777), mk("outside", 0o755)
	writeFile(t, filepath.Join(e.outside, "secret"), "outside secret", 0, 0, 0o644)
	e.exportsFile = filepath.Join(base, "exports")
	text := fmt.Sprintf("%s 127.0.0.0/8(rw,insecure,root_squash)\n%s 127.0.0.0/8(ro,insecure,all_squash)\n"+
		"%s 127.0.0.0/8(rw,insecure,no_root_squash)\n%s 127.0.0.0/8(rw,insecure,all_squash,anonuid=%d,anongid=%d)\n",
		e.exp, e.exp2, e.nrs, e.anon, anonUID, anonGID)
	must(t, os.WriteFile(e.exportsFile, []byte(text), 0o644))
	e.cfg = daemon.Config{
		ExportsFile: e.exportsFile,
		NFSAddr:     "127.0.0.1:0",
		MountAddr:   "127.0.0.1:0",
		NoPortmap:   true,
		StateDir:    e.stateDir,
	}
	if tune != nil {
		tune(&e.cfg)
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

func (e *env) start() {
	e.t.Helper()
	log := zap.NewNop()
	if os.Getenv("ADVERSARY_LOG") != "" {
		log = zap.Must(zap.NewDevelopment())
	}
	d, err := daemon.Start(context.Background(), log, e.cfg)
	if err != nil {
		e.t.Fatalf("daemon.Start: %v", err)
	}
	e.d = d
	// Restarts reuse the ports.
	e.cfg.NFSAddr, e.cfg.MountAddr = d.NFSAddr().String(), d.MountAddr().String()
}

func (e *env) stop() {
	if e.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.d.Shutdown(ctx)
	e.d = nil
}

// restart stops the daemon and starts it again on the same state
// directory (and so the same handle key) and ports.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// dial connects to the NFS port from ip with credential cred; the
// connection closes with the test.
func (e *env) dial(ip string, cred Cred) *Conn {
	e.t.Helper()
	c, err := Dial(context.Background(), e.d.NFSAddr(), ip)
	if err != nil {
		e.t.Fatalf("dial from %s: %v", ip, err)
	}
	c.Cred = cred
	e.t.Cleanup(func() { c.Close() })
	return c
}

// root mounts the export at path and returns its root handle.
func (e *env) root(path string) []byte {
	e.t.Helper()
	c, err := Dial(context.Background(), e.d.MountAddr(), attackerIP)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	c.Cred = Sys(0, 0)
	fh, st, err := c.Mnt(path)
	if err != nil || st != 0 {
		e.t.Fatalf("MNT %s: status %d, %v", path, st, err)
	}
	return fh
}

// lookupPath looks up a slash-separated path below dir as c.
func lookupPath(t *testing.T, c *Conn, dir []byte, rel string) []byte {
	t.Helper()
	fh := dir
	for _, name := range strings.Split(rel, "/") {
		next, _, st, err := c.Lookup(fh, name)
		if err != nil || st != OK {
			t.Fatalf("LOOKUP %s in %s: %v, %v", name, rel, st, err)
		}
		fh = next
	}
	return fh
}

// disk is what lstat(2) says about a path: the ground truth the tests
// check, never the server's replies alone.
type disk struct {
	exists     bool
	uid, gid   uint32
	mode       uint32 // permission, setuid, setgid and sticky bits
	typ        uint32 // S_IFMT bits
	nlink, ino uint64
}

func lstat(t *testing.T, path string) disk {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return disk{}
		}
		t.Fatalf("lstat %s: %v", path, err)
	}
	return disk{exists: true, uid: st.Uid, gid: st.Gid, mode: st.Mode & 0o7777, typ: st.Mode & syscall.S_IFMT, nlink: uint64(st.Nlink), ino: st.Ino}
}

func (d disk) String() string {
	if !d.exists {
		return "absent"
	}
	return fmt.Sprintf("%d:%d %04o nlink %d ino %d", d.uid, d.gid, d.mode, d.nlink, d.ino)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeFile makes a file with exact owner and mode (chmod beats the
// umask and keeps setuid bits chown would clear).
func writeFile(t *testing.T, path, data string, uid, gid int, mode os.FileMode) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(data), 0o600))
	must(t, os.Chown(path, uid, gid))
	must(t, syscall.Chmod(path, uint32(mode)))
}

// mkdirOwned makes a directory with exact owner and mode bits (mode may
// hold the setgid and sticky bits).
func mkdirOwned(t *testing.T, path string, uid, gid int, mode uint32) {
	t.Helper()
	must(t, os.Mkdir(path, 0o700))
	must(t, os.Chown(path, uid, gid))
	must(t, syscall.Chmod(path, mode))
}

// wantOK fails the test unless a call succeeded.
func wantOK(t *testing.T, what string, st Status, err error) {
	t.Helper()
	if err != nil || st != OK {
		t.Fatalf("%s: %v, %v; want OK", what, st, err)
	}
}

// refused reports whether a call was refused, by an NFS status or an
// RPC-level error, not by a broken connection.
func refused(st Status, err error) bool {
	var re *RPCError
	return (err == nil && st != OK) || errors.As(err, &re)
}

// attack is one subtest of a test group, run on the group's fixture.
type attack[E any] struct {
	name string
	run  func(*testing.T, E)
}

// runAttacks runs each attack as a subtest, in order, on one fixture.
func runAttacks[E any](t *testing.T, e E, attacks []attack[E]) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) { a.run(t, e) })
	}
}

package adversary

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEscapes tries to leave an export, or reach one export through
// another: "..", symbolic links, a directory moved out of the export
// behind the server's back, handles carried to another export, and
// handles bit-flipped or forged from the kernel's own. After each attack
// the disk outside the export must be as it was.
func TestEscapes(t *testing.T) {
	e := newEnv(t, nil)
	x := &escapeEnv{env: e, secretPath: filepath.Join(e.outside, "secret"), outsideBefore: lstat(t, e.outside)}
	x.outsideIno, x.baseIno, x.slashIno = x.outsideBefore.ino, lstat(t, e.base).ino, lstat(t, "/").ino
	runAttacks(t, x, escapeAttacks)
}

// escapeEnv is env with what lies outside the exports, to check that it
// is unchanged and never reached.
type escapeEnv struct {
	*env
	secretPath                    string // a file outside every export
	outsideBefore                 disk
	outsideIno, baseIno, slashIno uint64
}

// checkOutside fails unless the directory and file outside every export
// are as they were.
func (e *escapeEnv) checkOutside(t *testing.T) {
	t.Helper()
	if got := lstat(t, e.outside); got.mode != e.outsideBefore.mode || got.uid != e.outsideBefore.uid {
		t.Errorf("the directory outside every export changed: %v, was %v", got, e.outsideBefore)
	}
	if b, err := os.ReadFile(e.secretPath); err != nil || string(b) != "outside secret" {
		t.Errorf("the file outside every export now holds %q, %v", b, err)
	}
	if d := lstat(t, e.secretPath); d.mode != 0o644 || d.uid != 0 || d.nlink != 1 {
		t.Errorf("the file outside every export changed: %v", d)
	}
}

// notOutside fails when an attribute names a directory above or beside
// the export.
func (e *escapeEnv) notOutside(t *testing.T, what string, a Attr) {
	t.Helper()
	if a.FileID == e.outsideIno || a.FileID == e.baseIno || a.FileID == e.slashIno {
		t.Errorf("%s reached a directory outside the export (fileid %d)", what, a.FileID)
	}
}

func escapeDotdot(t *testing.T, e *escapeEnv) {
	c := e.dial(attackerIP, Sys(userUID, userGID))
	root := e.root(e.exp)
	rootAttr, st, err := c.Getattr(root)
	wantOK(t, "GETATTR root", st, err)
	mkdirOwned(t, filepath.Join(e.exp, "a"), userUID, userGID, 0o755)
	fh := lookupPath(t, c, root, "a")
	for i := 0; i < 4; i++ {
		next, a, st, err := c.Lookup(fh, "..")
		wantOK(t, "LOOKUP ..", st, err)
		e.notOutside(t, "LOOKUP ..", a)
		if i > 0 && a.FileID != rootAttr.FileID {
			t.Errorf("LOOKUP .. of the export root gave fileid %d, not the root's %d", a.FileID, rootAttr.FileID)
		}
		fh = next
	}
	names, st, err := c.Readdir(fh)
	wantOK(t, "READDIR", st, err)
	for _, n := range []string{"exp2", "outside", "state", "exports"} {
		if slices.Contains(names, n) {
			t.Errorf("READDIR after climbing .. lists %q of the parent: %v", n, names)
		}
	}
	for _, name := range []string{"../outside", "../outside/secret", "a/..", "/", "", "a\x00b"} {
		if _, _, st, err := c.Lookup(root, name); !refused(st, err) {
			t.Errorf("LOOKUP %q: %v, %v; want a refusal", name, st, err)
		}
	}
	for _, name := range []string{"..", ".", "x/y"} {
		if _, st, err := c.Create(root, name, Unchecked, Mode(0o644)); !refused(st, err) {
			t.Errorf("CREATE %q: %v, %v; want a refusal", name, st, err)
		}
	}
	e.checkOutside(t)
	if d := lstat(t, filepath.Join(e.base, "y")); d.exists {
		t.Errorf("CREATE x/y made %s", filepath.Join(e.base, "y"))
	}
}

func escapeSymlink(t *testing.T, e *escapeEnv) {
	c := e.dial(attackerIP, Sys(userUID, userGID))
	cr := e.dial(attackerIP, Sys(0, 0)) // root on a no_root_squash export
	for _, ex := range []struct {
		name string
		c    *Conn
		path string
	}{{"root_squash", c, e.exp}, {"no_root_squash", cr, e.nrs}} {
		t.Run(ex.name, func(t *testing.T) {
			c := ex.c
			must(t, os.Symlink(e.outside, filepath.Join(ex.path, "dirlink")))
			must(t, os.Symlink(e.secretPath, filepath.Join(ex.path, "filelink")))
			must(t, os.Symlink(filepath.Join(e.outside, "planted"), filepath.Join(ex.path, "dangling")))
			root := e.root(ex.path)
			dl := lookupPath(t, c, root, "dirlink")
			fl := lookupPath(t, c, root, "filelink")
			if _, _, st, err := c.Lookup(dl, "secret"); !refused(st, err) {
				t.Errorf("LOOKUP through a symlink to a directory outside: %v, %v", st, err)
			}
			if _, _, st, err := c.Lookup(root, "dirlink/secret"); !refused(st, err) {
				t.Errorf("LOOKUP dirlink/secret: %v, %v", st, err)
			}
			if data, st, err := c.Read(fl, 0, 100); !refused(st, err) || len(data) > 0 {
				t.Errorf("READ of a symlink handle: %q, %v, %v", data, st, err)
			}
			if st, err := c.Write(fl, 0, []byte("pwned")); !refused(st, err) {
				t.Errorf("WRITE of a symlink handle: %v, %v", st, err)
			}
			if st, err := c.Setattr(fl, Sattr{SetSize: true, Size: 0}); !refused(st, err) {
				t.Errorf("SETATTR size of a symlink handle: %v, %v", st, err)
			}
			c.Setattr(dl, Mode(0o777)) // chmod of a link changes nothing on Linux; never its target
			c.Setattr(fl, Sattr{SetUID: true, UID: userUID})
			if _, st, err := c.Create(dl, "planted", Unchecked, Mode(0o644)); !refused(st, err) {
				t.Errorf("CREATE in a symlink handle: %v, %v", st, err)
			}
			if _, st, err := c.Mkdir(dl, "planted", Mode(0o755)); !refused(st, err) {
				t.Errorf("MKDIR in a symlink handle: %v, %v", st, err)
			}
			c.Create(root, "dangling", Unchecked, Mode(0o644))
			c.Create(root, "filelink", Unchecked, Sattr{SetMode: true, Mode: 0o666, SetSize: true, Size: 0})
			c.Create(root, "own", Guarded, Mode(0o644))
			if st, err := c.Rename(root, "own", dl, "planted"); !refused(st, err) {
				t.Errorf("RENAME into a symlink handle: %v, %v", st, err)
			}
			sl, st, err := c.Symlink(root, "mine", "../outside/secret", Sattr{})
			wantOK(t, "SYMLINK", st, err)
			if sl != nil {
				if data, st, err := c.Read(sl, 0, 100); !refused(st, err) || len(data) > 0 {
					t.Errorf("READ of a client-made symlink to outside: %q, %v, %v", data, st, err)
				}
			}
			if d := lstat(t, filepath.Join(e.outside, "planted")); d.exists {
				t.Errorf("an attack through a symlink created %s: %v", filepath.Join(e.outside, "planted"), d)
			}
			e.checkOutside(t)
		})
	}
}

// Every single-bit change, truncation and extension of a valid handle
// is refused, and the file it named is untouched.
func escapeBitflip(t *testing.T, e *escapeEnv) {
	c := e.dial(attackerIP, Sys(userUID, userGID))
	root := e.root(e.exp)
	p := filepath.Join(e.exp, "target")
	writeFile(t, p, "target data", userUID, userGID, 0o644)
	fh := lookupPath(t, c, root, "target")
	var mutants [][]byte
	for bit := 0; bit < len(fh)*8; bit++ {
		m := bytes.Clone(fh)
		m[bit/8] ^= 1 << (bit % 8)
		mutants = append(mutants, m)
	}
	for n := 0; n < len(fh); n++ {
		mutants = append(mutants, bytes.Clone(fh[:n]))
	}
	mutants = append(mutants, append(bytes.Clone(fh), 0), append(bytes.Clone(fh), make([]byte, 64-len(fh))...), make([]byte, 65))
	accepted := 0
	for _, m := range mutants {
		st, err := c.Write(m, 0, []byte("XXXXXX"))
		if !refused(st, err) {
			accepted++
			t.Errorf("WRITE through mutated handle %x (valid %x) succeeded", m, fh)
		}
		if accepted > 5 {
			break
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "target data" {
		t.Errorf("the file now holds %q", b)
	}
	if err := c.Null(); err != nil {
		t.Errorf("the server stopped answering after %d mutated handles: %v", len(mutants), err)
	}
}

// Handles the attacker builds from the kernel's own handles of files
// outside the export (name_to_handle_at), in the server's layout, with
// a zero MAC and with the MAC of a real handle.
func escapeForged(t *testing.T, e *escapeEnv) {
	root := e.dial(attackerIP, Sys(0, 0))
	rNrs := e.root(e.nrs)
	real := lookupPath(t, root, rNrs, ".")
	writeFile(t, filepath.Join(e.nrs, "real"), "real", 0, 0, 0o644)
	realFile := lookupPath(t, root, rNrs, "real")
	for _, target := range []string{e.secretPath, e.outside, "/"} {
		kh, _, err := unix.NameToHandleAt(unix.AT_FDCWD, target, 0)
		if err != nil {
			t.Fatalf("name_to_handle_at %s: %v", target, err)
		}
		for _, mac := range [][]byte{make([]byte, 8), realFile[len(realFile)-8:]} {
			forged := forgeHandle(real[:8], kh, mac)
			if data, st, err := root.Read(forged, 0, 100); !refused(st, err) || len(data) > 0 {
				t.Errorf("READ through a forged handle of %s: %q, %v, %v", target, data, st, err)
			}
			if names, st, err := root.Readdir(forged); !refused(st, err) {
				t.Errorf("READDIR through a forged handle of %s: %v, %v, %v", target, names, st, err)
			}
			if _, st, err := root.Create(forged, "planted", Guarded, Mode(0o644)); !refused(st, err) {
				t.Errorf("CREATE through a forged handle of %s: %v, %v", target, st, err)
			}
		}
	}
	if d := lstat(t, filepath.Join(e.outside, "planted")); d.exists {
		t.Errorf("a forged handle planted a file outside: %v", d)
	}
	e.checkOutside(t)
}

// escapeAttacks are the subtests of TestEscapes, in order.
var escapeAttacks = []attack[*escapeEnv]{
	{"dotdot", escapeDotdot},
	{"symlink", escapeSymlink},
	{"moved", escapeMoved},
	{"otherexport", escapeOtherexport},
	{"bitflip", escapeBitflip},
	{"forged", escapeForged},
	{"mountpath", escapeMountPath},
}

// forgeHandle builds a handle in the OS backend's layout (vfs/localfs/doc.go):
// the NFS header of a real handle, layout version 1, the kernel handle's
// length, type and bytes, and an 8-byte MAC.
func forgeHandle(header []byte, kh unix.FileHandle, mac []byte) []byte {
	b := bytes.Clone(header)
	b = append(b, 1, byte(len(kh.Bytes())))
	b = binary.BigEndian.AppendUint32(b, uint32(kh.Type()))
	b = append(b, kh.Bytes()...)
	return append(b, mac...)
}

// MNT of paths that are no export, lead out of one through "..", or
// through a symbolic link inside an export, gives no handle outside the
// exports.
func escapeMountPath(t *testing.T, e *escapeEnv) {
	must(t, os.Symlink(e.outside, filepath.Join(e.exp, "mntlink")))
	c, err := Dial(context.Background(), e.d.MountAddr(), attackerIP)
	must(t, err)
	defer c.Close()
	c.Cred = Sys(0, 0)
	nfs := e.dial(attackerIP, Sys(0, 0))
	for _, p := range []string{
		e.outside, e.base, "/", "",
		e.exp + "/../outside", e.exp + "//..//outside", e.exp + "/mntlink", e.exp + "/mntlink/",
		e.exp + "/mntlink/..", "../" + e.outside, e.outside + "/../exp/mntlink",
	} {
		fh, st, err := c.Mnt(p)
		if err != nil {
			t.Errorf("MNT %q: %v", p, err)
			continue
		}
		t.Logf("MNT %q: mountstat3 %d", p, st)
		if st != 0 {
			continue // refused
		}
		a, ast, err := nfs.Getattr(fh)
		if err != nil || ast != OK {
			continue
		}
		e.notOutside(t, "MNT "+p, a)
		if names, st, err := nfs.Readdir(fh); err == nil && st == OK && slices.Contains(names, "secret") {
			t.Errorf("MNT %q gave a handle that lists the outside directory: %v", p, names)
		}
	}
	e.checkOutside(t)
}

// The client makes w/mv; the host moves it out of the export. Every
// handle of it, and of what it holds, is stale from then on, also
// after a restart.
func escapeMoved(t *testing.T, e *escapeEnv) {
	c := e.dial(attackerIP, Sys(userUID, userGID))
	root := e.root(e.exp)
	mkdirOwned(t, filepath.Join(e.exp, "w"), 0, 0, 0o777)
	w := lookupPath(t, c, root, "w")
	mv, st, err := c.Mkdir(w, "mv", Mode(0o755))
	wantOK(t, "MKDIR", st, err)
	f, st, err := c.Create(mv, "file", Guarded, Mode(0o644))
	wantOK(t, "CREATE", st, err)
	st, err = c.Write(f, 0, []byte("inside"))
	wantOK(t, "WRITE", st, err)
	moved := filepath.Join(e.outside, "mv")
	must(t, os.Rename(filepath.Join(e.exp, "w", "mv"), moved))

	attack := func(t *testing.T, when, planted string) {
		fh := mv
		for i := 0; i < 4; i++ {
			next, a, st, err := c.Lookup(fh, "..")
			if refused(st, err) {
				break
			}
			e.notOutside(t, when+": LOOKUP .. from the moved directory", a)
			fh = next
		}
		if names, st, err := c.Readdir(mv); !refused(st, err) {
			t.Errorf("%s: READDIR of a directory moved out of the export: %v, %v, %v; want STALE", when, names, st, err)
		} else if st != ErrStale {
			t.Errorf("%s: READDIR of a moved-out directory: %v, %v; want STALE", when, st, err)
		}
		if _, _, st, err := c.Lookup(mv, "file"); !refused(st, err) {
			t.Errorf("%s: LOOKUP in a moved-out directory: %v, %v", when, st, err)
		}
		if data, st, err := c.Read(f, 0, 100); !refused(st, err) {
			t.Errorf("%s: READ of a file in a moved-out directory: %q, %v, %v", when, data, st, err)
		}
		if _, st, err := c.Create(mv, planted, Guarded, Mode(0o644)); !refused(st, err) {
			t.Errorf("%s: CREATE in a moved-out directory: %v, %v", when, st, err)
		}
		if st, err := c.Write(f, 0, []byte("outside!")); !refused(st, err) {
			t.Errorf("%s: WRITE to a file in a moved-out directory: %v, %v", when, st, err)
		}
		if d := lstat(t, filepath.Join(moved, planted)); d.exists {
			t.Errorf("%s: CREATE planted a file outside the export: %v", when, d)
		}
		if b, _ := os.ReadFile(filepath.Join(moved, "file")); string(b) != "inside" {
			t.Errorf("%s: the moved-out file now holds %q", when, b)
			must(t, os.WriteFile(filepath.Join(moved, "file"), []byte("inside"), 0o644))
		}
		e.checkOutside(t)
	}
	attack(t, "after the move", "planted")
	e.restart()
	c = e.dial(attackerIP, Sys(userUID, userGID))
	attack(t, "after a restart", "planted-after-restart")
}

// A handle of the read-only export with the read-write export's fsid,
// and one of the root_squash export with the no_root_squash export's,
// with the kernel's dentry cache cold (after a restart and
// drop_caches, as in issue 11).
func escapeOtherexport(t *testing.T, e *escapeEnv) {
	victim := filepath.Join(e.exp2, "victim")
	writeFile(t, victim, "read-only victim", 0, 0, 0o666)
	private := filepath.Join(e.exp, "private")
	writeFile(t, private, "root only", 0, 0, 0o600)
	rExp, rExp2, rNrs := e.root(e.exp), e.root(e.exp2), e.root(e.nrs)
	anon := e.dial(attackerIP, Sys(userUID, userGID))
	hVictim := lookupPath(t, anon, rExp2, "victim")
	hPrivate := lookupPath(t, anon, rExp, "private")
	toRW := withFSIDOf(t, hVictim, rExp2, rExp)
	toNrs := withFSIDOf(t, hPrivate, rExp, rNrs)
	root := e.dial(attackerIP, Sys(0, 0))
	for _, cold := range []bool{false, true} {
		when := "warm dcache"
		if cold {
			when = "after restart and drop_caches"
			e.restart()
			dropCaches(t)
			anon = e.dial(attackerIP, Sys(userUID, userGID))
			root = e.dial(attackerIP, Sys(0, 0))
		}
		if st, err := anon.Write(toRW, 0, []byte("pwned")); !refused(st, err) {
			t.Errorf("%s: WRITE through a ro export's handle carrying the rw export's fsid: %v, %v", when, st, err)
		}
		if st, err := anon.Setattr(toRW, Mode(0o777)); !refused(st, err) {
			t.Errorf("%s: SETATTR through a ro export's handle carrying the rw export's fsid: %v, %v", when, st, err)
		}
		if data, st, err := root.Read(toNrs, 0, 100); !refused(st, err) || len(data) > 0 {
			t.Errorf("%s: root READ of a root_squash export's 0600 file through the no_root_squash export: %q, %v, %v", when, data, st, err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "read-only victim" {
			t.Errorf("%s: the ro export's file now holds %q", when, b)
		}
		if d := lstat(t, victim); d.mode != 0o666 || d.uid != 0 {
			t.Errorf("%s: the ro export's file changed: %v", when, d)
		}
	}
}

// withFSIDOf returns fh, a handle of the export whose root handle is
// from, with the bytes that name the export replaced by those of the
// export whose root handle is to. The header shared by both root handles
// is the version; the first 4-byte window after it where they differ is
// the fsid (nfs/handles.go documents bytes 4-7, but an attacker only sees
// handles).
func withFSIDOf(t *testing.T, fh, from, to []byte) []byte {
	t.Helper()
	for j := 0; j < len(from) && j < len(to) && j < 16; j++ {
		if from[j] == to[j] {
			continue
		}
		i := j &^ 3 // the XDR word holding the first difference
		if i+4 <= len(fh) && bytes.Equal(fh[i:i+4], from[i:i+4]) {
			out := bytes.Clone(fh)
			copy(out[i:i+4], to[i:i+4])
			return out
		}
		break
	}
	t.Fatalf("no export id found in root handles %x and %x", from, to)
	return nil
}

// dropCaches makes the kernel forget dentries and inodes
// (/proc/sys/vm/drop_caches = 2), so that open_by_handle_at must rebuild
// a disconnected dentry.
func dropCaches(t *testing.T) {
	t.Helper()
	unix.Sync()
	must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2\n"), 0o200))
}

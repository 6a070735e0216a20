package vfstest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// RequireRoot is for tests that need root (file ownership, identity
// switching): without it they skip, except under CI=true, where they
// fail, since CI machines run as root and a skipped check there is a
// check that never runs.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root (CI=true: not skipping)")
	}
	t.Skip("needs root")
}

// Identities of the identity tests. None is a member of sgGroup except
// member.
var (
	user1  = vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{50}}
	user2  = vfs.Cred{UID: 2000, GID: 2000}
	member = vfs.Cred{UID: 1001, GID: 1001, GIDs: []uint32{sgGroup}}
	root   = vfs.Cred{}
)

const sgGroup = 3000

// asRoot makes a directory or file as root in dir with exactly mode and
// the given owner.
func (c *checker) rootDir(dir vfs.Handle, name string, mode, uid, gid uint32) vfs.Handle {
	c.Helper()
	h, _, err := c.fs.Mkdir(root, dir, name, mode)
	c.ok(err, "mkdir "+name+" as root")
	c.ok(c.fs.SetAttr(root, h, vfs.SetAttr{UID: &uid, GID: &gid}), "chown "+name)
	c.ok(c.fs.SetAttr(root, h, vfs.SetAttr{Mode: &mode}), "chmod "+name)
	return h
}

func (c *checker) rootFile(dir vfs.Handle, name string, mode, uid, gid uint32) vfs.Handle {
	c.Helper()
	h, _, err := c.fs.Create(root, dir, name, 0o600, true, false, noV)
	c.ok(err, "create "+name+" as root")
	c.ok(c.fs.SetAttr(root, h, vfs.SetAttr{UID: &uid, GID: &gid}), "chown "+name)
	c.ok(c.fs.SetAttr(root, h, vfs.SetAttr{Mode: &mode}), "chmod "+name)
	return h
}

// pub is a 0777 root-owned directory everybody may create in.
func (c *checker) pub() vfs.Handle { return c.rootDir(c.root, "pub", 0o777, 0, 0) }

var identitySuite = []struct {
	name string
	fn   func(c *checker)
}{
	{"IdentityNewObjects", testIdentityNewObjects},
	{"IdentityInvalidIDs", testIdentityInvalidIDs},
	{"IdentityDirPermissions", testIdentityDirPermissions},
	{"IdentitySticky", testIdentitySticky},
	{"IdentitySetgid", testIdentitySetgid},
	{"IdentityWriteClearsSetID", testIdentityWriteClearsSetID},
	{"IdentityRenameDirNewParent", testIdentityRenameDirNewParent},
	{"IdentitySetAttrRules", testIdentitySetAttrRules},
	{"IdentityMkdirRenameRace", testIdentityMkdirRenameRace},
	{"IdentityOwnerSetAttr", testIdentityOwnerSetAttr},
	{"IdentityRenameSwapRace", testIdentityRenameSwapRace},
}

// New objects belong to the caller, with no window in which they are
// anybody else's: owner and group are the caller's, the mode exactly the
// one asked for (set-id bits included, which the owner may set).
func testIdentityNewObjects(c *checker) {
	pub := c.pub()
	check := func(what string, a vfs.Attr, mode uint32) {
		c.Helper()
		if a.UID != user1.UID || a.GID != user1.GID || a.Mode != mode {
			c.Errorf("%s: uid %d gid %d mode %#o, want %d %d %#o", what, a.UID, a.GID, a.Mode, user1.UID, user1.GID, mode)
		}
	}
	h, a, err := c.fs.Create(user1, pub, "f", 0o6755, true, false, noV)
	c.ok(err, "create as user1")
	check("create", a, 0o6755)
	check("create, getattr", c.attr(h), 0o6755)
	h, a, err = c.fs.Mkdir(user1, pub, "d", 0o750)
	c.ok(err, "mkdir as user1")
	check("mkdir", a, 0o750)
	check("mkdir, getattr", c.attr(h), 0o750)
	_, a, err = c.fs.Symlink(user1, pub, "l", "target", 0o777)
	c.ok(err, "symlink as user1")
	if a.UID != user1.UID || a.GID != user1.GID {
		c.Errorf("symlink: owner %d:%d", a.UID, a.GID)
	}
	_, a, err = c.fs.Mknod(user1, pub, "p", vfs.TypeFIFO, 0o640, 0, 0)
	c.ok(err, "mknod fifo as user1")
	check("mknod", a, 0o640)
	_, a, err = c.fs.Create(user1, pub, "x", 0o600, false, true, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	c.ok(err, "exclusive create as user1")
	check("exclusive create", a, 0o600)
}

// A Cred holding 0xffffffff is refused before any system call: to
// fchownat -1 means "unchanged", which made root-owned files (issue 11,
// defect 1).
func testIdentityInvalidIDs(c *checker) {
	pub := c.pub()
	for i, bad := range []vfs.Cred{{UID: vfs.InvalidID, GID: vfs.InvalidID}, {UID: 1000, GID: vfs.InvalidID}, {UID: vfs.InvalidID, GID: 1000}, {UID: 1000, GID: 1000, GIDs: []uint32{5, vfs.InvalidID}}} {
		name := fmt.Sprintf("bad%d", i)
		_, _, err := c.fs.Create(bad, pub, name, 0o6777, true, false, noV)
		c.errno(err, syscall.EINVAL, "create as "+fmt.Sprint(bad))
		_, _, err = c.fs.Mkdir(bad, pub, name, 0o777)
		c.errno(err, syscall.EINVAL, "mkdir as "+fmt.Sprint(bad))
		if _, _, err := c.fs.Lookup(root, pub, name); !errors.Is(err, os.ErrNotExist) {
			c.Errorf("%s exists after refused creates: %v", name, err)
		}
	}
	f, _ := c.create(pub, "f", 0o644)
	bad := uint32(vfs.InvalidID)
	c.errno(c.fs.SetAttr(root, f, vfs.SetAttr{UID: &bad}), syscall.EINVAL, "chown to 0xffffffff")
	c.errno(c.fs.SetAttr(root, f, vfs.SetAttr{GID: &bad}), syscall.EINVAL, "chgrp to 0xffffffff")
	c.errno(c.fs.SetAttr(owner, f, vfs.SetAttr{UID: &bad}), syscall.EPERM, "chown to 0xffffffff by the owner")
	c.errno(c.fs.SetAttr(owner, f, vfs.SetAttr{GID: &bad}), syscall.EPERM, "chgrp to 0xffffffff by the owner")
	if a := c.attr(f); a.UID != owner.UID || a.GID != owner.GID {
		c.Errorf("after refused chown: %d:%d", a.UID, a.GID)
	}
}

// Search and write permission on directories are enforced for the
// caller, for every operation that takes a Cred.
func testIdentityDirPermissions(c *checker) {
	priv := c.rootDir(c.root, "priv", 0o755, 0, 0)
	closed := c.rootDir(c.root, "closed", 0o700, 0, 0)
	c.rootFile(priv, "f", 0o666, 0, 0)
	_, _, err := c.fs.Create(user1, priv, "new", 0o644, true, false, noV)
	c.errno(err, syscall.EACCES, "create in a 0755 root directory")
	_, _, err = c.fs.Mkdir(user1, priv, "new", 0o755)
	c.errno(err, syscall.EACCES, "mkdir in a 0755 root directory")
	_, _, err = c.fs.Symlink(user1, priv, "new", "t", 0o777)
	c.errno(err, syscall.EACCES, "symlink in a 0755 root directory")
	c.errno(c.fs.Remove(user1, priv, "f"), syscall.EACCES, "remove in a 0755 root directory")
	c.errno(c.fs.Rename(user1, priv, "f", priv, "g"), syscall.EACCES, "rename in a 0755 root directory")
	for _, name := range []string{"x", ".", ".."} {
		_, _, err = c.fs.Lookup(user1, closed, name)
		c.errno(err, syscall.EACCES, "lookup "+name+" in a 0700 root directory")
	}
	if _, _, err := c.fs.Lookup(root, closed, "."); err != nil {
		c.Errorf("root: lookup . in a 0700 directory: %v", err)
	}
	if _, _, err := c.fs.Lookup(user1, priv, "f"); err != nil {
		c.Errorf("lookup in a 0755 directory: %v", err)
	}
}

// In a sticky directory a caller may neither remove nor replace another
// user's entry: RENAME over it is refused like REMOVE (issue 11, defect 5).
func testIdentitySticky(c *checker) {
	tmp := c.rootDir(c.root, "tmp", 0o1777, 0, 0)
	theirs, _, err := c.fs.Create(user2, tmp, "theirs", 0o644, true, false, noV)
	c.ok(err, "create theirs as user2")
	_, _, err = c.fs.Create(user1, tmp, "mine", 0o644, true, false, noV)
	c.ok(err, "create mine as user1")
	c.errno(c.fs.Remove(user1, tmp, "theirs"), syscall.EPERM, "remove another user's file in a sticky directory")
	c.errno(c.fs.Rename(user1, tmp, "mine", tmp, "theirs"), syscall.EPERM, "rename over another user's file in a sticky directory")
	c.errno(c.fs.Rename(user1, tmp, "theirs", tmp, "stolen"), syscall.EPERM, "rename another user's file out of a sticky directory")
	if h, a := c.lookup(tmp, "theirs"); a.UID != user2.UID || string(h) != string(theirs) {
		c.Errorf("theirs after refused renames: %+v", a)
	}
	c.ok(c.fs.Rename(user1, tmp, "mine", tmp, "mine2"), "rename of one's own file in a sticky directory")
	c.ok(c.fs.Rename(root, tmp, "mine2", tmp, "theirs"), "root replaces in a sticky directory")
}

// A set-group-ID directory gives its group to new objects and its bit to
// new directories; a caller outside that group cannot set the bit on a
// file of the group, at creation or by chmod (kernel: inode_init_owner,
// setattr_prepare).
func testIdentitySetgid(c *checker) {
	sg := c.rootDir(c.root, "sg", 0o2777, 0, sgGroup)
	h, a, err := c.fs.Create(user1, sg, "f", 0o2755, true, false, noV)
	c.ok(err, "create in a setgid directory by a non-member")
	if a = c.attr(h); a.GID != sgGroup || a.Mode != 0o755 {
		c.Errorf("file by a non-member: gid %d mode %#o, want %d 0755", a.GID, a.Mode, sgGroup)
	}
	mode := uint32(0o2755)
	c.ok(c.fs.SetAttr(user1, h, vfs.SetAttr{Mode: &mode}), "chmod g+s by a non-member owner")
	if a = c.attr(h); a.Mode != 0o755 {
		c.Errorf("chmod 02755 by a non-member: mode %#o, want 0755", a.Mode)
	}
	d, _, err := c.fs.Mkdir(user1, sg, "d", 0o755)
	c.ok(err, "mkdir in a setgid directory")
	if a = c.attr(d); a.GID != sgGroup || a.Mode != 0o2755 || a.UID != user1.UID {
		c.Errorf("directory in a setgid directory: %d:%d mode %#o, want %d:%d 02755", a.UID, a.GID, a.Mode, user1.UID, sgGroup)
	}
	g, _, err := c.fs.Create(member, sg, "g", 0o2755, true, false, noV)
	c.ok(err, "create in a setgid directory by a member")
	if a = c.attr(g); a.GID != sgGroup || a.Mode != 0o2755 {
		c.Errorf("file by a member: gid %d mode %#o, want %d 02755", a.GID, a.Mode, sgGroup)
	}
}

// WRITE and truncation by a caller other than root clear set-user-ID and
// (group-executable) set-group-ID, as a local write(2) does; root's keep
// them (CAP_FSETID).
func testIdentityWriteClearsSetID(c *checker) {
	pub := c.pub()
	w := c.rootFile(pub, "w", 0o6777, user2.UID, user2.GID)
	n, err := c.fs.WriteAt(user1, w, []byte("x"), 0, false)
	c.ok(err, "write by a non-owner")
	if a := c.attr(w); n != 1 || a.Mode != 0o777 {
		c.Errorf("after a write by a non-owner: mode %#o, want 0777", a.Mode)
	}
	tr := c.rootFile(pub, "t", 0o6777, user2.UID, user2.GID)
	size := uint64(0)
	c.ok(c.fs.SetAttr(user1, tr, vfs.SetAttr{Size: &size}), "truncate by a non-owner")
	if a := c.attr(tr); a.Mode != 0o777 {
		c.Errorf("after a truncate by a non-owner: mode %#o, want 0777", a.Mode)
	}
	o := c.rootFile(pub, "o", 0o6777, user1.UID, user1.GID)
	_, err = c.fs.WriteAt(user1, o, []byte("x"), 0, false)
	c.ok(err, "write by the owner")
	if a := c.attr(o); a.Mode != 0o777 {
		c.Errorf("after a write by the (non-root) owner: mode %#o, want 0777", a.Mode)
	}
	r := c.rootFile(pub, "r", 0o6777, user2.UID, user2.GID)
	_, err = c.fs.WriteAt(root, r, []byte("x"), 0, false)
	c.ok(err, "write by root")
	if a := c.attr(r); a.Mode != 0o6777 {
		c.Errorf("after a write by root: mode %#o, want 06777", a.Mode)
	}
}

// Moving a directory to another parent rewrites its "..": the caller
// needs write permission on the directory itself, not only on both
// parents (issue 11, "also seen").
func testIdentityRenameDirNewParent(c *checker) {
	p1 := c.rootDir(c.root, "p1", 0o777, 0, 0)
	c.rootDir(c.root, "p2", 0o777, 0, 0)
	p2, _ := c.lookup(c.root, "p2")
	c.rootDir(p1, "a", 0o755, user2.UID, user2.GID)
	c.errno(c.fs.Rename(user1, p1, "a", p2, "a"), syscall.EACCES, "move another user's 0755 directory to a new parent")
	if _, a := c.lookup(p1, "a"); a.UID != user2.UID {
		c.Errorf("a after a refused move: %+v", a)
	}
	c.ok(c.fs.Rename(user1, p1, "a", p1, "b"), "rename within the same parent")
	c.ok(c.fs.Rename(user2, p1, "b", p2, "a"), "the owner moves it to a new parent")
}

// chown, chmod and times follow the kernel's rules for the caller.
func testIdentitySetAttrRules(c *checker) {
	pub := c.pub()
	f, _, err := c.fs.Create(user1, pub, "f", 0o644, true, false, noV)
	c.ok(err, "create")
	ww, _, err := c.fs.Create(user1, pub, "ww", 0o666, true, false, noV)
	c.ok(err, "create")
	u2, g50, g60, mode := user2.UID, uint32(50), uint32(60), uint32(0o600)
	now := time.Unix(1e9, 0)
	c.errno(c.fs.SetAttr(user1, f, vfs.SetAttr{UID: &u2}), syscall.EPERM, "give a file away")
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{GID: &g50}), "chgrp to a supplementary group")
	c.errno(c.fs.SetAttr(user1, f, vfs.SetAttr{GID: &g60}), syscall.EPERM, "chgrp to a group one is not in")
	c.errno(c.fs.SetAttr(user2, f, vfs.SetAttr{Mode: &mode}), syscall.EPERM, "chmod of another user's file")
	c.errno(c.fs.SetAttr(user2, ww, vfs.SetAttr{Mtime: &now}), syscall.EPERM, "explicit mtime on another user's file")
	c.ok(c.fs.SetAttr(user2, ww, vfs.SetAttr{MtimeNow: true, AtimeNow: true}), "times to now on a file one may write")
	c.errno(c.fs.SetAttr(user2, f, vfs.SetAttr{MtimeNow: true, AtimeNow: true}), syscall.EACCES, "times to now on a file one may not write")
	if a := c.attr(f); a.UID != user1.UID || a.GID != 50 || a.Mode != 0o644 {
		c.Errorf("after the refused changes: %d:%d %#o", a.UID, a.GID, a.Mode)
	}
	c.ok(c.fs.SetAttr(root, f, vfs.SetAttr{UID: &u2, GID: &g60}), "root chowns")
}

// Two callers race MKDIR/RMDIR of "d" against RENAME of a root-owned
// (non-empty) directory to "d" and back, in a directory both may write. Creation by
// name followed by a chown of whatever the name held gave the root
// directory to the caller (issue 11, defect 4); objects are now made as
// the caller, so the victim stays root's whatever the interleaving.
func testIdentityMkdirRenameRace(c *checker) {
	const iterations = 400
	pub := c.pub()
	v := c.rootDir(pub, "victim", 0o755, 0, 0)
	c.rootFile(v, "keep", 0o644, 0, 0) // not empty: RMDIR "d" cannot remove it
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range iterations {
			if _, _, err := c.fs.Mkdir(user1, pub, "d", 0o777); err == nil {
				c.fs.Rmdir(user1, pub, "d")
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range iterations {
			if c.fs.Rename(user1, pub, "victim", pub, "d") == nil {
				c.fs.Rename(user1, pub, "d", pub, "victim")
			}
		}
	}()
	wg.Wait()
	found := 0
	for _, name := range []string{"victim", "d"} {
		_, a, err := c.fs.Lookup(root, pub, name)
		if err != nil {
			continue
		}
		if a.UID == 0 && a.GID == 0 && a.Mode == 0o755 {
			found++
			continue
		}
		if a.UID != user1.UID {
			c.Errorf("%s: %d:%d mode %#o: the root directory was given away", name, a.UID, a.GID, a.Mode)
		}
	}
	if found != 1 {
		c.Errorf("the root-owned victim is under %d names, want 1", found)
	}
}

// The owner's own SETATTRs, which the OS backend may run as the server,
// leave what the kernel leaves for the owner: a chmod may set
// set-user-ID, a truncation or a chown to its own ids clears it (the
// owner is not root), explicit times need no write permission.
func testIdentityOwnerSetAttr(c *checker) {
	pub := c.pub()
	f, _, err := c.fs.Create(user1, pub, "f", 0o644, true, false, noV)
	c.ok(err, "create")
	suid, ro, size, uid := uint32(0o4755), uint32(0o444), uint64(0), user1.UID
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{Mode: &suid}), "chmod u+s by the owner")
	if a := c.attr(f); a.Mode != 0o4755 {
		c.Errorf("chmod 04755 by the owner: mode %#o", a.Mode)
	}
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{Size: &size}), "truncate by the owner")
	if a := c.attr(f); a.Mode != 0o755 {
		c.Errorf("after a truncate by the (non-root) owner: mode %#o, want 0755", a.Mode)
	}
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{Mode: &suid}), "chmod u+s by the owner")
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{UID: &uid}), "chown to oneself")
	if a := c.attr(f); a.Mode != 0o755 || a.UID != user1.UID {
		c.Errorf("after a chown to its own uid: %d mode %#o, want %d 0755", a.UID, a.Mode, user1.UID)
	}
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{Mode: &ro}), "chmod 0444 by the owner")
	then := time.Unix(1e9, 0)
	c.ok(c.fs.SetAttr(user1, f, vfs.SetAttr{Atime: &then, Mtime: &then}), "explicit times on one's own read-only file")
	if a := c.attr(f); !a.Mtime.Equal(then) || a.Mode != 0o444 {
		c.Errorf("after explicit times: mtime %v mode %#o", a.Mtime, a.Mode)
	}
}

// A caller moves a file of its own from one directory to another while
// the name it moves is swapped, by root, with another user's 0755
// directory: the kernel refuses to move that directory to a new parent
// for the caller (no write permission on it), so whichever object the
// name holds at the rename, the other user's directory never lands in
// the second directory by the caller's hand. (A backend deciding which
// object the name holds before the rename, and running the rename as
// the server, would move it.)
func testIdentityRenameSwapRace(c *checker) {
	const iterations = 3000
	p1 := c.rootDir(c.root, "s1", 0o777, 0, 0)
	p2 := c.rootDir(c.root, "s2", 0o777, 0, 0)
	c.rootDir(p1, "theirs", 0o755, user2.UID, user2.GID)
	_, _, err := c.fs.Create(user1, p1, "n", 0o644, true, false, noV)
	c.ok(err, "create")
	var wg sync.WaitGroup
	wg.Add(1)
	done := make(chan struct{})
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			// n <-> theirs, through a third name.
			c.fs.Rename(root, p1, "n", p1, "t")
			c.fs.Rename(root, p1, "theirs", p1, "n")
			c.fs.Rename(root, p1, "n", p1, "theirs")
			c.fs.Rename(root, p1, "t", p1, "n")
		}
	}()
	moved := 0
	for range iterations {
		if c.fs.Rename(user1, p1, "n", p2, "m") != nil {
			continue
		}
		_, a, err := c.fs.Lookup(root, p2, "m")
		if err == nil && a.Type == vfs.TypeDir {
			c.Errorf("the caller moved another user's directory (%d:%d %#o) to a new parent", a.UID, a.GID, a.Mode)
			break
		}
		moved++
		c.fs.Rename(root, p2, "m", p1, "n")
	}
	close(done)
	wg.Wait()
	if moved == 0 {
		c.Errorf("no rename of the caller's file succeeded in %d tries", iterations)
	}
}

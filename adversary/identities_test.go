package adversary

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// caller is one AUTH_SYS identity an attacker sends.
type caller struct {
	name     string
	uid, gid uint32
	gids     []uint32
}

// sixteen is the longest gid list AUTH_SYS allows (RFC 5531 appendix A).
var sixteen = func() []uint32 {
	g := make([]uint32, 16)
	for i := range g {
		g[i] = 2000 + uint32(i)
	}
	return g
}()

var callers = []caller{
	{"root", 0, 0, []uint32{0}},
	{"invalid", invalid, invalid, nil},
	{"user-invalidgid", userUID, invalid, nil},
	{"user-invalid-in-gids", userUID, userGID, []uint32{invalid}},
	{"nobody", nobody, nobody, nil},
	{"user-nogids", userUID, userGID, nil},
	{"user-16gids", userUID, userGID, sixteen},
	{"user-gid0-in-gids", userUID, userGID, []uint32{0}},
	{"user-gid0", userUID, 0, nil},
}

// squashRule is what an export's squash options make of a caller's ids:
// exports(5) for 0, and issue 11 for ids no user can have (0xffffffff),
// which map to the anonymous ids under every option.
type squashRule struct {
	option, export   string
	all, root        bool
	anonUID, anonGID uint32
}

// squashRules are the rw exports of e with their squash options.
func (e *env) squashRules() []squashRule {
	return []squashRule{
		{option: "root_squash", export: e.exp, root: true, anonUID: nobody, anonGID: nobody},
		{option: "no_root_squash", export: e.nrs, anonUID: nobody, anonGID: nobody},
		{option: "all_squash", export: e.anon, all: true, anonUID: anonUID, anonGID: anonGID},
	}
}

func (r squashRule) ids(c caller) (uint32, uint32) {
	if r.all {
		return r.anonUID, r.anonGID
	}
	uid, gid := c.uid, c.gid
	if uid == invalid || (r.root && uid == 0) {
		uid = r.anonUID
	}
	if gid == invalid || (r.root && gid == 0) {
		gid = r.anonGID
	}
	return uid, gid
}

// creator is one procedure that makes a new object by name.
type creator struct {
	name string
	do   func(c *Conn, dir []byte, name string) ([]byte, Status, error)
}

var creators = []creator{
	{"CREATE", func(c *Conn, dir []byte, name string) ([]byte, Status, error) {
		fh, st, err := c.Create(dir, name, Guarded, Mode(0o6777))
		if err == nil && st == OK {
			// Data written after the create must not change who owns it.
			st, err = c.Write(fh, 0, []byte("payload"))
		}
		return fh, st, err
	}},
	{"MKDIR", func(c *Conn, dir []byte, name string) ([]byte, Status, error) {
		return c.Mkdir(dir, name, Mode(0o7777))
	}},
	{"SYMLINK", func(c *Conn, dir []byte, name string) ([]byte, Status, error) {
		return c.Symlink(dir, name, "target", Sattr{})
	}},
	{"MKNOD", func(c *Conn, dir []byte, name string) ([]byte, Status, error) {
		return c.MknodFIFO(dir, name, Mode(0o6777))
	}},
}

// TestIdentities sends the identities of issue 11 (uid and gid 0,
// 0xffffffff, 65534, gid lists of 0 and 16 entries, gid 0 in the list)
// through each squash option and checks who owns what they create on
// disk, then the ownership and mode rules the kernel enforces for a
// caller: chown, chmod of setuid/setgid bits, setgid directories, suid
// clearing on write, and the sticky bit.
func TestIdentities(t *testing.T) {
	runAttacks(t, newEnv(t, nil), identityAttacks)
}

func identityOwner(t *testing.T, e *env) {
	for _, r := range e.squashRules() {
		root := e.root(r.export)
		for _, id := range callers {
			c := e.dial(attackerIP, Sys(id.uid, id.gid, id.gids...))
			for _, op := range creators {
				t.Run(r.option+"/"+id.name+"/"+op.name, func(t *testing.T) {
					name := fmt.Sprintf("%s-%s", id.name, op.name)
					_, st, err := op.do(c, root, name)
					wantOK(t, op.name, st, err)
					wantUID, wantGID := r.ids(id)
					got := lstat(t, filepath.Join(r.export, name))
					if got.uid != wantUID || got.gid != wantGID {
						t.Errorf("%s as %d:%d on %s: on disk %v, want owner %d:%d", op.name, id.uid, id.gid, r.option, got, wantUID, wantGID)
					}
					if (got.uid == 0 && wantUID != 0) || (got.gid == 0 && wantGID != 0) {
						t.Errorf("a squashed caller made a root-owned object: %v", got)
					}
				})
			}
		}
	}
}

// A credential AUTH_SYS does not allow is refused before anything
// happens: 17 gids, a 256-byte machine name.
func identityBadcred(t *testing.T, e *env) {
	root := e.root(e.exp)
	for _, bc := range []struct {
		name string
		cred Cred
	}{
		{"17gids", Sys(userUID, userGID, append(append([]uint32(nil), sixteen...), 2016)...)},
		{"longmachine", Cred{Flavor: AuthSys, Machine: strings.Repeat("m", 256), UID: userUID, GID: userGID}},
		{"truncated", Cred{Flavor: AuthSys, Raw: truncatedSys()}},
	} {
		t.Run(bc.name, func(t *testing.T) {
			c := e.dial(attackerIP, bc.cred)
			_, st, err := c.Create(root, "badcred-"+bc.name, Guarded, Mode(0o644))
			var re *RPCError
			if !errors.As(err, &re) || !re.Denied || re.AuthStat != AuthBadCred {
				t.Errorf("CREATE with a bad credential: %v, %v; want AUTH_BADCRED", st, err)
			}
			if d := lstat(t, filepath.Join(e.exp, "badcred-"+bc.name)); d.exists {
				t.Errorf("a refused credential created a file: %v", d)
			}
		})
	}
}

// gid 0 is root's group: root_squash maps it wherever it appears, so
// a group-0-writable directory refuses; no_root_squash keeps it.
func identityGroup0(t *testing.T, e *env) {
	for _, r := range e.squashRules()[:2] {
		mkdirOwned(t, filepath.Join(r.export, "g0"), 0, 0, 0o770)
		dir := lookupPath(t, e.dial(attackerIP, Sys(0, 0)), e.root(r.export), "g0")
		for _, id := range []caller{{"user-gid0-in-gids", userUID, userGID, []uint32{0}}, {"user-gid0", userUID, 0, nil}} {
			t.Run(r.option+"/"+id.name, func(t *testing.T) {
				c := e.dial(attackerIP, Sys(id.uid, id.gid, id.gids...))
				name := "f-" + id.name
				_, st, err := c.Create(dir, name, Guarded, Mode(0o644))
				got := lstat(t, filepath.Join(r.export, "g0", name))
				if r.root {
					if !refused(st, err) || got.exists {
						t.Errorf("CREATE in a root:root 0770 dir as %d:%d%v under root_squash: %v, %v, on disk %v; want ACCES and nothing", id.uid, id.gid, id.gids, st, err, got)
					}
					return
				}
				wantOK(t, "CREATE", st, err)
				if got.uid != userUID || got.gid != id.gid {
					t.Errorf("on disk %v, want %d:%d", got, userUID, id.gid)
				}
			})
		}
	}
}

func identityChown(t *testing.T, e *env) {
	root := e.root(e.exp)
	c := e.dial(attackerIP, Sys(userUID, userGID, 2000))
	fh, st, err := c.Create(root, "mine", Guarded, Mode(0o644))
	wantOK(t, "CREATE", st, err)
	p := filepath.Join(e.exp, "mine")
	for _, a := range []struct {
		name string
		sa   Sattr
	}{
		{"uid0", Sattr{SetUID: true, UID: 0}},
		{"gid0", Sattr{SetGID: true, GID: 0}},
		{"uidinvalid", Sattr{SetUID: true, UID: invalid}},
		{"othergroup", Sattr{SetGID: true, GID: 3000}},
	} {
		st, err := c.Setattr(fh, a.sa)
		if got := lstat(t, p); got.uid != userUID || got.gid != userGID {
			t.Errorf("SETATTR %s by the owner: %v, %v; on disk %v, want %d:%d", a.name, st, err, got, userUID, userGID)
		}
		if st != ErrPerm || err != nil {
			t.Errorf("SETATTR %s: %v, %v; want PERM", a.name, st, err)
		}
	}
	// A group the caller is in is the one chown a user may do.
	st, err = c.Setattr(fh, Sattr{SetGID: true, GID: 2000})
	wantOK(t, "SETATTR gid to a supplementary group", st, err)
	if got := lstat(t, p); got.gid != 2000 {
		t.Errorf("chgrp to a member group: on disk %v", got)
	}
	// CREATE may carry owner attributes; they cannot give the file away
	// to root.
	_, st, err = c.Create(root, "giveaway", Guarded, Sattr{SetMode: true, Mode: 0o6755, SetUID: true, UID: 0, SetGID: true, GID: 0})
	if got := lstat(t, filepath.Join(e.exp, "giveaway")); got.exists && (got.uid == 0 || got.gid == 0) {
		t.Errorf("CREATE with sattr uid 0 gid 0 by uid %d: %v, %v; on disk %v", userUID, st, err, got)
	}
	// Not the owner: no chmod.
	writeFile(t, filepath.Join(e.exp, "roots"), "root", 0, 0, 0o644)
	rfh := lookupPath(t, c, root, "roots")
	st, err = c.Setattr(rfh, Mode(0o4777))
	if got := lstat(t, filepath.Join(e.exp, "roots")); got.mode != 0o644 || st != ErrPerm {
		t.Errorf("SETATTR mode 4777 of root's file by uid %d: %v, %v; on disk %v, want PERM and 0644", userUID, st, err, got)
	}
}

// The read-only all_squash export refuses every change from every
// identity; the disk stays as it was.
func identityReadonly(t *testing.T, e *env) {
	f := filepath.Join(e.exp2, "f")
	writeFile(t, f, "read-only data", 0, 0, 0o666)
	must(t, os.Mkdir(filepath.Join(e.exp2, "d"), 0o777))
	before := lstat(t, f)
	root := e.root(e.exp2)
	for _, id := range callers {
		c := e.dial(attackerIP, Sys(id.uid, id.gid, id.gids...))
		fh := lookupPath(t, c, root, "f")
		data, st, err := c.Read(fh, 0, 100)
		if err != nil || st != OK || string(data) != "read-only data" {
			t.Errorf("READ as %s on the ro export: %q, %v, %v", id.name, data, st, err)
		}
		var changes []string
		note := func(what string, st Status, err error) {
			if !refused(st, err) {
				changes = append(changes, what)
			}
		}
		st, err = c.Write(fh, 0, []byte("XX"))
		note("WRITE", st, err)
		st, err = c.Setattr(fh, Mode(0o777))
		note("SETATTR", st, err)
		_, st, err = c.Create(root, "new", Unchecked, Mode(0o644))
		note("CREATE", st, err)
		_, st, err = c.Mkdir(root, "newdir", Mode(0o755))
		note("MKDIR", st, err)
		st, err = c.Rename(root, "f", root, "g")
		note("RENAME", st, err)
		st, err = c.Link(fh, root, "h")
		note("LINK", st, err)
		st, err = c.Rmdir(root, "d")
		note("RMDIR", st, err)
		st, err = c.Remove(root, "f")
		note("REMOVE", st, err)
		if len(changes) > 0 {
			t.Errorf("as %s the ro export allowed %v", id.name, changes)
		}
	}
	ents, err := os.ReadDir(e.exp2)
	must(t, err)
	var names []string
	for _, de := range ents {
		names = append(names, de.Name())
	}
	if strings.Join(names, ",") != "d,f" {
		t.Errorf("the ro export now holds %v, want [d f]", names)
	}
	if after := lstat(t, f); after != before {
		t.Errorf("the ro export's file changed: %v, was %v", after, before)
	}
	if b, _ := os.ReadFile(f); string(b) != "read-only data" {
		t.Errorf("the ro export's file holds %q", b)
	}
}

// identityAttacks are the subtests of TestIdentities, in order.
var identityAttacks = []attack[*env]{
	{"owner", identityOwner},
	{"badcred", identityBadcred},
	{"flavor", identityFlavor},
	{"group0", identityGroup0},
	{"gids16", identityGids16},
	{"chown", identityChown},
	{"setgid", identitySetgid},
	{"suidclear", identitySuidclear},
	{"sticky", identitySticky},
	{"renamedir", identityRenameDirParent},
	{"readonly", identityReadonly},
}

// truncatedSys is an authsys_parms cut inside its machine name.
func truncatedSys() []byte {
	c := Sys(userUID, userGID)
	return c.body()[:10]
}

// A credential of a flavor the export does not allow (AUTH_NONE on a
// sec=sys export) or of no known flavor is refused, and nothing is made.
func identityFlavor(t *testing.T, e *env) {
	root := e.root(e.exp)
	for _, fc := range []struct {
		name string
		cred Cred
		want uint32
	}{
		{"none", Cred{Flavor: AuthNone}, AuthTooWeak},
		{"unknown", Cred{Flavor: 7, Raw: []byte{1, 2, 3, 4}}, AuthBadCred},
	} {
		c := e.dial(attackerIP, fc.cred)
		name := "flavor-" + fc.name
		_, st, err := c.Create(root, name, Guarded, Mode(0o644))
		var re *RPCError
		if !errors.As(err, &re) || !re.Denied || re.AuthStat != fc.want {
			t.Errorf("CREATE with flavor %d: %v, %v; want auth_stat %d", fc.cred.Flavor, st, err, fc.want)
		}
		if d := lstat(t, filepath.Join(e.exp, name)); d.exists {
			t.Errorf("CREATE with flavor %d made a file: %v", fc.cred.Flavor, d)
		}
	}
}

// A file made in a setgid directory by a non-member of its group
// gets the group but not the setgid bit; chmod g+s by a non-member
// is silently dropped (inode_init_owner, setattr_prepare).
func identitySetgid(t *testing.T, e *env) {
	mkdirOwned(t, filepath.Join(e.exp, "sg"), 0, 2000, 0o2777)
	c := e.dial(attackerIP, Sys(userUID, userGID))
	dir := lookupPath(t, c, e.root(e.exp), "sg")
	fh, st, err := c.Create(dir, "f", Guarded, Mode(0o2755))
	wantOK(t, "CREATE", st, err)
	p := filepath.Join(e.exp, "sg", "f")
	if got := lstat(t, p); got.gid != 2000 || got.mode&0o2000 != 0 {
		t.Errorf("CREATE 02755 in a root:2000 02777 dir by a non-member: on disk %v, want group 2000 without setgid", got)
	}
	st, err = c.Setattr(fh, Mode(0o2755))
	if got := lstat(t, p); got.mode&0o2000 != 0 {
		t.Errorf("chmod g+s by a non-member of the file's group: %v, %v; on disk %v", st, err, got)
	}
	_, st, err = c.Mkdir(dir, "d", Mode(0o755))
	wantOK(t, "MKDIR", st, err)
	if got := lstat(t, filepath.Join(e.exp, "sg", "d")); got.gid != 2000 || got.mode&0o2000 == 0 {
		t.Errorf("MKDIR in a setgid dir: on disk %v, want group 2000 and the setgid bit inherited", got)
	}
}

// WRITE and truncation by a non-owner clear setuid and setgid
// (file_remove_privs).
func identitySuidclear(t *testing.T, e *env) {
	root := e.root(e.exp)
	c := e.dial(attackerIP, Sys(userUID, userGID))
	for _, how := range []string{"write", "truncate"} {
		name := "suid-" + how
		p := filepath.Join(e.exp, name)
		writeFile(t, p, "#!/bin/sh\n", otherUID, otherUID, 0o6777)
		fh := lookupPath(t, c, root, name)
		var st Status
		var err error
		if how == "write" {
			st, err = c.Write(fh, 0, []byte("#!/bin/sh\nid\n"))
		} else {
			st, err = c.Setattr(fh, Sattr{SetSize: true, Size: 0})
		}
		wantOK(t, how, st, err)
		if got := lstat(t, p); got.mode&0o6000 != 0 {
			t.Errorf("%s of a %d:%d 06777 file by uid %d: on disk %v, want setuid and setgid cleared", how, otherUID, otherUID, userUID, got)
		}
	}
}

// The sticky bit: another user's file can be neither removed nor
// replaced by renaming one's own over it.
func identitySticky(t *testing.T, e *env) {
	mkdirOwned(t, filepath.Join(e.exp, "tmp"), 0, 0, 0o1777)
	theirs := filepath.Join(e.exp, "tmp", "theirs")
	writeFile(t, theirs, "theirs", otherUID, otherUID, 0o666)
	before := lstat(t, theirs)
	c := e.dial(attackerIP, Sys(userUID, userGID))
	dir := lookupPath(t, c, e.root(e.exp), "tmp")
	_, st, err := c.Create(dir, "mine", Guarded, Mode(0o644))
	wantOK(t, "CREATE", st, err)
	rst, rerr := c.Rename(dir, "mine", dir, "theirs")
	dst, derr := c.Remove(dir, "theirs")
	after := lstat(t, theirs)
	if after.ino != before.ino {
		t.Errorf("in a 1777 dir uid %d replaced uid %d's file: RENAME %v, %v; REMOVE %v, %v; on disk %v, was %v", userUID, otherUID, rst, rerr, dst, derr, after, before)
	}
	if rst != ErrPerm && rst != ErrAcces {
		t.Errorf("RENAME over another user's file in a sticky dir: %v, %v; want PERM", rst, rerr)
	}
	if b, _ := os.ReadFile(theirs); string(b) != "theirs" {
		t.Errorf("their file now holds %q", b)
	}
}

// Moving a directory to a new parent rewrites its "..": the kernel asks
// for write permission on the directory itself, so uid 1000 cannot move
// a root:root 0755 directory out of a world-writable one into its own.
func identityRenameDirParent(t *testing.T, e *env) {
	mkdirOwned(t, filepath.Join(e.exp, "mvp"), 0, 0, 0o777)
	mkdirOwned(t, filepath.Join(e.exp, "mvp", "rootdir"), 0, 0, 0o755)
	mkdirOwned(t, filepath.Join(e.exp, "mvp", "mine"), userUID, userGID, 0o755)
	ino := lstat(t, filepath.Join(e.exp, "mvp", "rootdir")).ino
	c := e.dial(attackerIP, Sys(userUID, userGID))
	dir := lookupPath(t, c, e.root(e.exp), "mvp")
	mine := lookupPath(t, c, dir, "mine")
	st, err := c.Rename(dir, "rootdir", mine, "rootdir")
	if got := lstat(t, filepath.Join(e.exp, "mvp", "rootdir")); got.ino != ino {
		t.Errorf("uid %d moved a root:root 0755 directory into its own directory: %v, %v; on disk %v", userUID, st, err, lstat(t, filepath.Join(e.exp, "mvp", "mine", "rootdir")))
		return
	}
	if st != ErrAcces && st != ErrPerm {
		t.Errorf("RENAME of a directory the caller may not write to a new parent: %v, %v; want ACCES", st, err)
	}
	// Within the same parent ".." does not change: the kernel allows it.
	st, err = c.Rename(dir, "rootdir", dir, "renamed")
	wantOK(t, "RENAME in the same directory", st, err)
	if got := lstat(t, filepath.Join(e.exp, "mvp", "renamed")); got.ino != ino || got.uid != 0 {
		t.Errorf("after RENAME in place: %v", got)
	}
}

// Every one of 16 supplementary gids counts, the last included: a
// root:2015 0770 directory admits a caller whose 16th gid is 2015 and
// refuses one with the first 15.
func identityGids16(t *testing.T, e *env) {
	dir := filepath.Join(e.exp, "g2015")
	mkdirOwned(t, dir, 0, 2015, 0o770)
	admin := e.dial(attackerIP, Sys(0, 0))
	fh := lookupPath(t, admin, e.root(e.exp), "g2015")
	member := e.dial(attackerIP, Sys(userUID, userGID, sixteen...))
	_, st, err := member.Create(fh, "member", Guarded, Mode(0o644))
	wantOK(t, "CREATE with gid 2015 16th of 16", st, err)
	if got := lstat(t, filepath.Join(dir, "member")); got.uid != userUID || got.gid != userGID {
		t.Errorf("CREATE by a member through its 16th gid: on disk %v, want %d:%d", got, userUID, userGID)
	}
	other := e.dial(attackerIP, Sys(userUID, userGID, sixteen[:15]...))
	_, st, err = other.Create(fh, "nonmember", Guarded, Mode(0o644))
	if got := lstat(t, filepath.Join(dir, "nonmember")); !refused(st, err) || got.exists {
		t.Errorf("CREATE in a root:2015 0770 dir with gids 2000-2014: %v, %v; on disk %v; want ACCES and nothing", st, err, got)
	}
}

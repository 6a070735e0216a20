package daemon_test

// The permission checks as a table of identities x modes x procedures,
// through a real daemon over TCP on the OS backend while the server runs
// as root, the case where a wrong check leaks or destroys data.
//
// Expectations are Unix rules written out by hand (not computed with the
// code under test), plus knfsd's choices:
//   - READ and WRITE pass for the file's owner whatever the mode bits
//     (NFSD_MAY_OWNER_OVERRIDE in fs/nfsd/vfs.c nfsd_permission; READ and
//     WRITE verify the handle with it through nfsd_file_acquire), so a
//     file created 0444 or chmod'ed 000 stays usable through an open fd.
//   - ACCESS does not apply the override (nfsd_access passes the plain
//     NFSD_MAY_* of its accessmap), so for the owner of a file whose mode
//     denies them, ACCESS withholds READ/MODIFY while READ/WRITE succeed.
//     Every other ACCESS answer must equal what the procedures then do.
//   - root (no_root_squash) has CAP_DAC_OVERRIDE: everything except
//     executing a file without any x bit; a squashed root is nobody
//     (65534:65534) and gets the "other" bits.
//   - chmod needs ownership, chown needs root: NFS3ERR_PERM; the sticky
//     rule (may_delete) is NFS3ERR_PERM; a missing rwx bit is
//     NFS3ERR_ACCES.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// identity is one caller of the table. key names it in the expectation
// strings: O owner, G group member, S supplementary-group member, X
// other, R root (no_root_squash), Q root squashed.
type identity struct {
	key      byte
	name     string
	uid, gid uint32
	gids     []uint32
	squashed bool
}

// Every object of the table is owned by fileUID:fileGID.
const (
	fileUID = 1000
	fileGID = 100
)

var identities = []identity{
	{key: 'O', name: "owner", uid: 1000, gid: 1000},
	{key: 'G', name: "group", uid: 1001, gid: 100},
	{key: 'S', name: "suppgroup", uid: 1002, gid: 1002, gids: []uint32{100}},
	{key: 'X', name: "other", uid: 1003, gid: 1003},
	{key: 'R', name: "root", uid: 0, gid: 0, gids: []uint32{0}},
	{key: 'Q', name: "squashedroot", uid: 0, gid: 0, gids: []uint32{0}, squashed: true},
}

const everyone = "OGSXRQ"

func (id identity) in(set string) bool { return strings.IndexByte(set, id.key) >= 0 }

// permEnv is a daemon exporting one directory read-write to clientA with
// no_root_squash and to clientB with root_squash.
type permEnv struct {
	dir   string
	root  []byte
	admin *client.Client // root, unsquashed: looks handles up
	connA oncrpc.Caller
	connB oncrpc.Caller
}

func newPermEnv(t *testing.T) *permEnv {
	t.Helper()
	dir := exportDir(t, 0o777)
	d := startDaemon(t, fmt.Sprintf("%s %s(rw,insecure,no_root_squash) %s(rw,insecure)\n", dir, clientA, clientB))
	root, _ := mnt(t, dialFrom(t, d.MountAddr(), clientA, false), dir)
	e := &permEnv{dir: dir, root: root, connA: dialFrom(t, d.NFSAddr(), clientA, false), connB: dialFrom(t, d.NFSAddr(), clientB, false)}
	e.admin = nfsAs(e.connA, 0, 0)
	return e
}

// as is a client sending id's credential from id's client address.
func (e *permEnv) as(id identity) *client.Client {
	conn := e.connA
	if id.squashed {
		conn = e.connB
	}
	return nfsAs(conn, id.uid, id.gid, id.gids...)
}

// mkdir makes dir rel under the export, owned by uid:gid, with the Unix
// mode bits mode (01000 is the sticky bit).
func (e *permEnv) mkdir(t *testing.T, rel string, uid, gid int, mode uint32) string {
	t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	fm := os.FileMode(mode & 0o777)
	if mode&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	if err := os.Chmod(p, fm); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&(os.ModePerm|os.ModeSticky) != fm {
		t.Fatalf("mkdir %s: mode %v, %v; want %v", rel, fi.Mode(), err, fm)
	}
	return p
}

// handle looks rel up from the export root as root.
func (e *permEnv) handle(t *testing.T, rel string) []byte {
	t.Helper()
	fh, err := e.admin.LookupPath(testCtx(t), e.root, rel)
	if err != nil {
		t.Fatalf("lookup %s: %v", rel, err)
	}
	return fh
}

// fileModes are the regular-file modes of the table with, per
// procedure, who may do it.
var fileModes = []struct {
	mode       os.FileMode
	read       string // READ
	write      string // WRITE
	accessRead string // ACCESS3_READ (no owner override)
	accessMod  string // ACCESS3_MODIFY and ACCESS3_EXTEND (no owner override)
}{
	{0o600, "OR", "OR", "OR", "OR"},
	// Group members get the group class (r--), never the other class.
	{0o640, "OGSR", "OR", "OGSR", "OR"},
	// 0604: the group class (---) applies to group members even though
	// "other" may read; a squashed root is other.
	{0o604, "OXQR", "OR", "OXQR", "OR"},
	// 0000: the owner still reads and writes (owner override); ACCESS
	// tells the owner no.
	{0o000, "OR", "OR", "R", "R"},
}

const fileData = "secret data"

// TestPermissionsFiles: READ, WRITE, ACCESS, COMMIT and SETATTR (size,
// mode, uid) on regular files of each mode, by each identity.
func TestPermissionsFiles(t *testing.T) {
	e := newPermEnv(t)
	ctx := testCtx(t)
	for _, fm := range fileModes {
		for _, id := range identities {
			t.Run(fmt.Sprintf("%04o/%s", fm.mode, id.name), func(t *testing.T) {
				c := e.as(id)
				base := fmt.Sprintf("f%04o-%s", fm.mode, id.name)
				path := filepath.Join(e.dir, base)
				writeFile(t, path, fileData, fileUID, fileGID, fm.mode)
				fh := e.handle(t, base)

				// READ: no data leaks on a refusal.
				res, err := c.Read(ctx, fh, 0, 100)
				readOK := err == nil
				if id.in(fm.read) {
					if err != nil || string(res.Data) != fileData {
						t.Errorf("READ = %q, %v; want the data", res.Data, err)
					}
				} else {
					wantStatus(t, "READ", err, wire.ErrAcces)
					if res != nil && len(res.Data) != 0 {
						t.Errorf("refused READ returned data %q", res.Data)
					}
				}

				// WRITE: a refusal leaves the file unchanged.
				_, err = c.Write(ctx, fh, 0, []byte("XXXXXX"), wire.FileSync)
				writeOK := err == nil
				if id.in(fm.write) {
					if err != nil {
						t.Errorf("WRITE: %v", err)
					}
				} else {
					wantStatus(t, "WRITE", err, wire.ErrAcces)
					if b, _ := os.ReadFile(path); string(b) != fileData {
						t.Errorf("refused WRITE changed the file to %q", b)
					}
				}

				// ACCESS: knfsd's answer, and consistent with READ/WRITE
				// except for the owner override.
				ares, err := c.Access(ctx, fh, wire.AccessAll)
				if err != nil {
					t.Fatalf("ACCESS: %v", err)
				}
				var want uint32
				if id.in(fm.accessRead) {
					want |= wire.AccessRead
				}
				if id.in(fm.accessMod) {
					want |= wire.AccessModify | wire.AccessExtend
				}
				if ares.Access != want {
					t.Errorf("ACCESS = %#x, want %#x", ares.Access, want)
				}
				override := id.key == 'O'
				if got := ares.Access&wire.AccessRead != 0; got != readOK && !(override && readOK) {
					t.Errorf("ACCESS READ %v but READ allowed %v", got, readOK)
				}
				if got := ares.Access&wire.AccessModify != 0; got != writeOK && !(override && writeOK) {
					t.Errorf("ACCESS MODIFY %v but WRITE allowed %v", got, writeOK)
				}

				// COMMIT and SETATTR size (truncate) check write
				// permission with the owner override, as WRITE.
				_, err = c.Commit(ctx, fh, 0, 0)
				if id.in(fm.write) {
					if err != nil {
						t.Errorf("COMMIT: %v", err)
					}
				} else {
					wantStatus(t, "COMMIT", err, wire.ErrAcces)
				}
				_, err = c.Setattr(ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true, V: 3}}, nil)
				fi, _ := os.Stat(path)
				if id.in(fm.write) {
					if err != nil || fi.Size() != 3 {
						t.Errorf("SETATTR size: %v, size now %d", err, fi.Size())
					}
				} else {
					wantStatus(t, "SETATTR size", err, wire.ErrAcces)
					if fi.Size() != int64(len(fileData)) {
						t.Errorf("refused SETATTR size changed the size to %d", fi.Size())
					}
				}

				// SETATTR mode: owner or root only.
				_, err = c.Setattr(ctx, fh, setMode(0o644), nil)
				if id.in("OR") {
					if err != nil {
						t.Errorf("SETATTR mode: %v", err)
					}
				} else {
					wantStatus(t, "SETATTR mode", err, wire.ErrPerm)
					if fi, _ := os.Stat(path); fi.Mode().Perm() != fm.mode {
						t.Errorf("refused SETATTR changed the mode to %v", fi.Mode())
					}
				}

				// SETATTR uid: root only, not even the owner.
				_, err = c.Setattr(ctx, fh, wire.Sattr{UID: wire.SetUint32{Set: true, V: 1003}}, nil)
				uid, _ := ownerOf(t, path)
				if id.in("R") {
					if err != nil || uid != 1003 {
						t.Errorf("SETATTR uid: %v, owner now %d", err, uid)
					}
				} else {
					wantStatus(t, "SETATTR uid", err, wire.ErrPerm)
					if uid != fileUID {
						t.Errorf("refused SETATTR uid changed the owner to %d", uid)
					}
				}
			})
		}
	}
}

// dirModes are the directory modes of the table (directories owned by
// fileUID:fileGID) with who may search (LOOKUP), list (ACCESS3_READ) and
// add entries (CREATE).
var dirModes = []struct {
	mode   uint32
	search string
	list   string
	create string
}{
	{0o755, everyone, everyone, "OR"},
	{0o700, "OR", "OR", "OR"},
	// Search without read: LOOKUP of a known name, no listing.
	{0o711, everyone, "OR", "OR"},
	{0o1777, everyone, everyone, everyone},
}

// TestPermissionsDirs: LOOKUP (search permission), READDIR and
// READDIRPLUS (read permission), CREATE (write and search permission) and
// ACCESS on directories of each mode.
func TestPermissionsDirs(t *testing.T) {
	e := newPermEnv(t)
	ctx := testCtx(t)
	for _, dm := range dirModes {
		rel := fmt.Sprintf("d%04o", dm.mode)
		p := e.mkdir(t, rel, fileUID, fileGID, dm.mode)
		writeFile(t, filepath.Join(p, "child"), fileData, fileUID, fileGID, 0o644)
		dfh := e.handle(t, rel)
		for _, id := range identities {
			t.Run(fmt.Sprintf("%04o/%s", dm.mode, id.name), func(t *testing.T) {
				c := e.as(id)
				_, err := c.Lookup(ctx, dfh, "child")
				lookupOK := err == nil
				if id.in(dm.search) {
					if err != nil {
						t.Errorf("LOOKUP: %v", err)
					}
				} else {
					wantStatus(t, "LOOKUP", err, wire.ErrAcces)
				}

				// READDIR and READDIRPLUS need read permission: a
				// refusal must not list the names.
				ents, err := c.ReaddirAll(ctx, dfh, 4096)
				readdirOK := err == nil
				if id.in(dm.list) {
					if err != nil || len(ents) == 0 {
						t.Errorf("READDIR: %d entries, %v", len(ents), err)
					}
				} else {
					wantStatus(t, "READDIR", err, wire.ErrAcces)
					if len(ents) != 0 {
						t.Errorf("refused READDIR listed %d entries", len(ents))
					}
				}
				pents, err := c.ReaddirplusAll(ctx, dfh, 4096, 32768)
				if id.in(dm.list) {
					if err != nil || len(pents) == 0 {
						t.Errorf("READDIRPLUS: %d entries, %v", len(pents), err)
					}
				} else {
					wantStatus(t, "READDIRPLUS", err, wire.ErrAcces)
					if len(pents) != 0 {
						t.Errorf("refused READDIRPLUS listed %d entries", len(pents))
					}
				}

				name := "new-" + id.name
				_, err = c.Create(ctx, dfh, name, unchecked(0o644))
				createOK := err == nil
				_, statErr := os.Lstat(filepath.Join(p, name))
				if id.in(dm.create) {
					if err != nil || statErr != nil {
						t.Errorf("CREATE: %v (on disk: %v)", err, statErr)
					}
				} else {
					wantStatus(t, "CREATE", err, wire.ErrAcces)
					if statErr == nil {
						t.Error("refused CREATE made the file")
					}
				}

				ares, err := c.Access(ctx, dfh, wire.AccessAll)
				if err != nil {
					t.Fatalf("ACCESS: %v", err)
				}
				var want uint32
				if id.in(dm.list) {
					want |= wire.AccessRead
				}
				if id.in(dm.search) {
					want |= wire.AccessLookup
				}
				if id.in(dm.create) {
					want |= wire.AccessModify | wire.AccessExtend | wire.AccessDelete
				}
				if ares.Access != want {
					t.Errorf("ACCESS = %#x, want %#x", ares.Access, want)
				}
				if got := ares.Access&wire.AccessRead != 0; got != readdirOK {
					t.Errorf("ACCESS READ %v but READDIR allowed %v", got, readdirOK)
				}
				if got := ares.Access&wire.AccessLookup != 0; got != lookupOK {
					t.Errorf("ACCESS LOOKUP %v but LOOKUP allowed %v", got, lookupOK)
				}
				if got := ares.Access&wire.AccessExtend != 0; got != createOK {
					t.Errorf("ACCESS EXTEND %v but CREATE allowed %v", got, createOK)
				}
			})
		}
	}
}

// TestPermissionsUnlink: REMOVE and RENAME out of a sticky directory
// owned by "other" (uid 1003) of a file owned by uid 1000: only the file's
// owner, the directory's owner and root (NFS3ERR_PERM for the rest, even
// with write permission on the directory); the same in a plain 0777
// directory for everyone; in a 0755 directory only for its owner and root.
func TestPermissionsUnlink(t *testing.T) {
	e := newPermEnv(t)
	ctx := testCtx(t)
	e.mkdir(t, "sticky", 1003, 1003, 0o1777)
	e.mkdir(t, "open", 0, 0, 0o777)
	e.mkdir(t, "closed", fileUID, fileGID, 0o755)
	dest := e.mkdir(t, "dest", 0, 0, 0o777)
	destFH := e.handle(t, "dest")

	for _, dc := range []struct {
		rel     string
		allowed string
		denied  wire.Status
	}{
		{"sticky", "OXR", wire.ErrPerm},
		{"open", everyone, wire.OK},
		{"closed", "OR", wire.ErrAcces},
	} {
		dfh := e.handle(t, dc.rel)
		for _, id := range identities {
			for _, proc := range []string{"REMOVE", "RENAME"} {
				t.Run(fmt.Sprintf("%s/%s/%s", proc, dc.rel, id.name), func(t *testing.T) {
					name := fmt.Sprintf("%s-%s", strings.ToLower(proc), id.name)
					src := filepath.Join(e.dir, dc.rel, name)
					writeFile(t, src, fileData, fileUID, fileGID, 0o644)
					c := e.as(id)
					var err error
					if proc == "REMOVE" {
						_, err = c.Remove(ctx, dfh, name)
					} else {
						_, err = c.Rename(ctx, dfh, name, destFH, name)
					}
					_, srcErr := os.Lstat(src)
					if id.in(dc.allowed) {
						if err != nil || srcErr == nil {
							t.Errorf("%s: %v (source still there: %v)", proc, err, srcErr == nil)
						}
						if proc == "RENAME" {
							if _, err := os.Lstat(filepath.Join(dest, name)); err != nil {
								t.Errorf("RENAME target: %v", err)
							}
						}
					} else {
						wantStatus(t, proc, err, dc.denied)
						if srcErr != nil {
							t.Errorf("refused %s removed the file", proc)
						}
					}
				})
			}
		}
	}
}

package conformance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK, READDIR,
// READDIRPLUS.

func testCreateUnchecked(e *Env) error {
	res, err := e.C.Create(e.Ctx, e.Dir, "f", wire.CreateHow{Mode: wire.Unchecked, Attr: mode(0o640)})
	if err != nil {
		return ok(err, "CREATE UNCHECKED")
	}
	if !res.FH.Set {
		return Warnf("CREATE without a file handle")
	}
	if !res.DirWcc.After.Set {
		return Warnf("CREATE without post-op directory attributes")
	}
	if err := e.C.WriteAll(e.Ctx, res.FH.FH, []byte("data")); err != nil {
		return ok(err, "WRITE")
	}
	// UNCHECKED on an existing file succeeds; size 0 truncates it.
	_, err = e.C.Create(e.Ctx, e.Dir, "f", wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Size: wire.SetUint64{Set: true, V: 0}}})
	if err != nil {
		return ok(err, "CREATE UNCHECKED of an existing file")
	}
	a, err := e.attr(res.FH.FH)
	if err != nil {
		return err
	}
	if a.Size != 0 {
		return fmt.Errorf("size %d after CREATE UNCHECKED with size 0", a.Size)
	}
	return nil
}

func testCreateGuarded(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err := e.C.Create(e.Ctx, e.Dir, "f", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0o644)})
	return want(err, wire.ErrExist, "CREATE GUARDED of an existing name")
}

func testCreateExclusive(e *Env) error {
	how := wire.CreateHow{Mode: wire.Exclusive, Verf: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}
	r1, err := e.C.Create(e.Ctx, e.Dir, "x", how)
	if err != nil {
		return ok(err, "CREATE EXCLUSIVE")
	}
	// A retransmission with the same verifier succeeds with the same file.
	r2, err := e.C.Create(e.Ctx, e.Dir, "x", how)
	if err != nil {
		return ok(err, "CREATE EXCLUSIVE replay with the same verifier")
	}
	fh1, fh2 := r1.FH.FH, r2.FH.FH
	if !r1.FH.Set || !r2.FH.Set {
		l, err := e.C.Lookup(e.Ctx, e.Dir, "x")
		if err != nil {
			return ok(err, "LOOKUP x")
		}
		fh1, fh2 = l.FH, l.FH
	}
	a1, err := e.attr(fh1)
	if err != nil {
		return err
	}
	a2, err := e.attr(fh2)
	if err != nil {
		return err
	}
	if a1.FileID != a2.FileID {
		return fmt.Errorf("replayed EXCLUSIVE CREATE names another file (%d, %d)", a1.FileID, a2.FileID)
	}
	// Another verifier is another client: EXIST.
	how.Verf[0] = 9
	_, err = e.C.Create(e.Ctx, e.Dir, "x", how)
	if err := want(err, wire.ErrExist, "CREATE EXCLUSIVE with another verifier"); err != nil {
		return err
	}
	// The client then sets the attributes (RFC 1813 section 3.3.8).
	if _, err := e.C.Setattr(e.Ctx, fh1, mode(0o600), nil); err != nil {
		return ok(err, "SETATTR after EXCLUSIVE CREATE")
	}
	return nil
}

func testCreateNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Create(e.Ctx, fh, "x", wire.CreateHow{Mode: wire.Guarded})
	return want(err, wire.ErrNotDir, "CREATE in a regular file")
}

func testCreateNameTooLong(e *Env) error {
	_, err := e.C.Create(e.Ctx, e.Dir, strings.Repeat("c", 256), wire.CreateHow{Mode: wire.Guarded})
	return want(err, wire.ErrNameTooLong, "CREATE of a 256-byte name")
}

func testCreateDot(e *Env) error {
	for _, n := range []string{".", ".."} {
		_, err := e.C.Create(e.Ctx, e.Dir, n, wire.CreateHow{Mode: wire.Guarded})
		// Strict: EXIST, as knfsd (the name exists; GUARDED refuses it).
		// Peers answer INVAL, ISDIR (the name is a directory) or ACCES
		// (the kernel's lookup_one_len refuses dot names).
		if err := oneOfStatus(e, err, fmt.Sprintf("CREATE %q", n), wire.ErrExist, wire.ErrInval, wire.ErrIsDir, wire.ErrAcces); err != nil {
			return err
		}
	}
	return nil
}

func testCreateStale(e *Env) error {
	fh, err := e.staleDir()
	if err != nil {
		return err
	}
	_, err = e.C.Create(e.Ctx, fh, "x", wire.CreateHow{Mode: wire.Guarded})
	return want(err, wire.ErrStale, "CREATE in a removed directory")
}

func testMkdir(e *Env) error {
	res, err := e.C.Mkdir(e.Ctx, e.Dir, "d", mode(0o750))
	if err != nil {
		return ok(err, "MKDIR")
	}
	fh := res.FH.FH
	if !res.FH.Set {
		l, err := e.C.Lookup(e.Ctx, e.Dir, "d")
		if err != nil {
			return ok(err, "LOOKUP d")
		}
		fh = l.FH
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeDir || a.Mode&0o777 != 0o750 {
		return fmt.Errorf("new directory: type %v mode %o", a.Type, a.Mode)
	}
	if res.DirWcc.After.Set && res.DirWcc.Before.Set && res.DirWcc.After.Attr.Nlink < 3 {
		return fmt.Errorf("parent nlink %d after MKDIR of its first subdirectory", res.DirWcc.After.Attr.Nlink)
	}
	return nil
}

func testMkdirExist(e *Env) error {
	if _, err := e.mkdir(e.Dir, "d"); err != nil {
		return err
	}
	_, err := e.C.Mkdir(e.Ctx, e.Dir, "d", mode(0o755))
	if err := want(err, wire.ErrExist, "MKDIR of an existing directory"); err != nil {
		return err
	}
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err = e.C.Mkdir(e.Ctx, e.Dir, "f", mode(0o755))
	return want(err, wire.ErrExist, "MKDIR over an existing file")
}

func testMkdirNameTooLong(e *Env) error {
	_, err := e.C.Mkdir(e.Ctx, e.Dir, strings.Repeat("d", 256), mode(0o755))
	return want(err, wire.ErrNameTooLong, "MKDIR of a 256-byte name")
}

func testMkdirNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Mkdir(e.Ctx, fh, "d", mode(0o755))
	return want(err, wire.ErrNotDir, "MKDIR in a regular file")
}

func testSymlinkExist(e *Env) error {
	if _, err := e.symlink(e.Dir, "l", "t"); err != nil {
		return err
	}
	_, err := e.C.Symlink(e.Ctx, e.Dir, "l", "u", mode(0o777))
	return want(err, wire.ErrExist, "SYMLINK over an existing name")
}

func testMknodFifo(e *Env) error {
	res, err := e.C.Mknod(e.Ctx, e.Dir, "p", wire.TypeFIFO, mode(0o644), wire.Specdata{})
	if errors.Is(err, client.ErrNotSupp) {
		return Warnf("MKNOD NF3FIFO not supported")
	}
	if err != nil {
		return ok(err, "MKNOD NF3FIFO")
	}
	fh := res.FH.FH
	if !res.FH.Set {
		l, err := e.C.Lookup(e.Ctx, e.Dir, "p")
		if err != nil {
			return ok(err, "LOOKUP p")
		}
		fh = l.FH
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeFIFO {
		return fmt.Errorf("MKNOD NF3FIFO made type %v", a.Type)
	}
	return nil
}

func testMknodBadType(e *Env) error {
	for _, t := range []wire.FileType{wire.TypeReg, wire.TypeDir, wire.TypeLnk} {
		_, err := e.C.Mknod(e.Ctx, e.Dir, "n", t, mode(0o644), wire.Specdata{})
		if err := want(err, wire.ErrBadType, fmt.Sprintf("MKNOD of type %v", t)); err != nil {
			return err
		}
	}
	return nil
}

func testMknodExist(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err := e.C.Mknod(e.Ctx, e.Dir, "f", wire.TypeFIFO, mode(0o644), wire.Specdata{})
	return want(err, wire.ErrExist, "MKNOD over an existing name")
}

func testRemove(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	res, err := e.C.Remove(e.Ctx, e.Dir, "f")
	if err != nil {
		return ok(err, "REMOVE")
	}
	if !res.Wcc.After.Set {
		return Warnf("REMOVE without post-op directory attributes")
	}
	_, err = e.C.Lookup(e.Ctx, e.Dir, "f")
	return want(err, wire.ErrNoEnt, "LOOKUP after REMOVE")
}

func testRemoveNoEnt(e *Env) error {
	_, err := e.C.Remove(e.Ctx, e.Dir, "nosuch")
	return want(err, wire.ErrNoEnt, "REMOVE of a missing name")
}

func testRemoveDir(e *Env) error {
	if _, err := e.mkdir(e.Dir, "d"); err != nil {
		return err
	}
	_, err := e.C.Remove(e.Ctx, e.Dir, "d")
	switch st := statusOf(err); st {
	case wire.ErrIsDir:
		return nil
	case wire.ErrPerm, wire.ErrAcces, wire.ErrNotEmpty, wire.ErrInval:
		return Warnf("REMOVE of a directory: %v, knfsd answers NFS3ERR_ISDIR", st)
	default:
		return fmt.Errorf("REMOVE of a directory: got %v, want NFS3ERR_ISDIR", st)
	}
}

func testRemoveNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Remove(e.Ctx, fh, "x")
	return want(err, wire.ErrNotDir, "REMOVE in a regular file")
}

func testRmdir(e *Env) error {
	if _, err := e.mkdir(e.Dir, "d"); err != nil {
		return err
	}
	if _, err := e.C.Rmdir(e.Ctx, e.Dir, "d"); err != nil {
		return ok(err, "RMDIR")
	}
	_, err := e.C.Lookup(e.Ctx, e.Dir, "d")
	return want(err, wire.ErrNoEnt, "LOOKUP after RMDIR")
}

func testRmdirNotEmpty(e *Env) error {
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	if _, err := e.file(d, "f", nil); err != nil {
		return err
	}
	_, err = e.C.Rmdir(e.Ctx, e.Dir, "d")
	return want(err, wire.ErrNotEmpty, "RMDIR of a non-empty directory")
}

func testRmdirNotDir(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err := e.C.Rmdir(e.Ctx, e.Dir, "f")
	return want(err, wire.ErrNotDir, "RMDIR of a regular file")
}

func testRmdirNoEnt(e *Env) error {
	_, err := e.C.Rmdir(e.Ctx, e.Dir, "nosuch")
	return want(err, wire.ErrNoEnt, "RMDIR of a missing name")
}

func testRmdirDot(e *Env) error {
	// knfsd answers NFS3ERR_ACCES (nfsd_unlink refuses dot entries);
	// rmdir(2) gives EINVAL, i.e. NFS3ERR_INVAL; RFC 1813 3.3.13 names
	// NFS3ERR_EXIST as an acceptable answer for "..".
	for _, n := range []string{".", ".."} {
		_, err := e.C.Rmdir(e.Ctx, e.Dir, n)
		st := statusOf(err)
		if !e.Cfg.Strict && (st == wire.ErrPerm || st == wire.ErrNotEmpty || st == wire.ErrExist) && !(n == ".." && st == wire.ErrExist) {
			return Warnf("RMDIR %q: %v, want NFS3ERR_INVAL or NFS3ERR_ACCES", n, st)
		}
		// Strict: ACCES, as knfsd.
		also := []wire.Status{wire.ErrInval}
		if n == ".." {
			also = append(also, wire.ErrExist)
		}
		if err := oneOfStatus(e, err, fmt.Sprintf("RMDIR %q", n), wire.ErrAcces, also...); err != nil {
			return err
		}
	}
	return nil
}

func testRename(e *Env) error {
	fh, err := e.file(e.Dir, "a", []byte("A"))
	if err != nil {
		return err
	}
	d, err := e.mkdir(e.Dir, "sub")
	if err != nil {
		return err
	}
	res, err := e.C.Rename(e.Ctx, e.Dir, "a", d, "b")
	if err != nil {
		return ok(err, "RENAME")
	}
	if !res.FromWcc.After.Set || !res.ToWcc.After.Set {
		return Warnf("RENAME without post-op directory attributes")
	}
	if _, err := e.C.Lookup(e.Ctx, e.Dir, "a"); statusOf(err) != wire.ErrNoEnt {
		return fmt.Errorf("old name after RENAME: %v, want NFS3ERR_NOENT", statusOf(err))
	}
	l, err := e.C.Lookup(e.Ctx, d, "b")
	if err != nil {
		return ok(err, "LOOKUP new name")
	}
	a1, err := e.attr(fh)
	if err != nil {
		return ok(err, "GETATTR of the renamed file's old handle")
	}
	a2, err := e.attr(l.FH)
	if err != nil {
		return err
	}
	if a1.FileID != a2.FileID {
		return fmt.Errorf("renamed file has fileid %d, was %d", a2.FileID, a1.FileID)
	}
	return nil
}

func testRenameOver(e *Env) error {
	if _, err := e.file(e.Dir, "a", []byte("new")); err != nil {
		return err
	}
	if _, err := e.file(e.Dir, "b", []byte("old contents")); err != nil {
		return err
	}
	if _, err := e.C.Rename(e.Ctx, e.Dir, "a", e.Dir, "b"); err != nil {
		return ok(err, "RENAME over an existing file")
	}
	l, err := e.C.Lookup(e.Ctx, e.Dir, "b")
	if err != nil {
		return ok(err, "LOOKUP b")
	}
	got, err := e.C.ReadAll(e.Ctx, l.FH)
	if err != nil {
		return ok(err, "READ b")
	}
	return sameBytes(got, []byte("new"), "READ of the replaced file")
}

func testRenameNoEnt(e *Env) error {
	_, err := e.C.Rename(e.Ctx, e.Dir, "nosuch", e.Dir, "x")
	return want(err, wire.ErrNoEnt, "RENAME of a missing name")
}

func testRenameDirOverFile(e *Env) error {
	if _, err := e.mkdir(e.Dir, "d"); err != nil {
		return err
	}
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err := e.C.Rename(e.Ctx, e.Dir, "d", e.Dir, "f")
	if err := want(err, wire.ErrNotDir, "RENAME of a directory over a file"); err != nil {
		if statusOf(err) == wire.ErrExist {
			return Warnf("%v", err)
		}
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.Dir, "f", e.Dir, "d")
	if err := want(err, wire.ErrIsDir, "RENAME of a file over a directory"); err != nil {
		if statusOf(err) == wire.ErrExist {
			return Warnf("%v", err)
		}
		return err
	}
	return nil
}

func testRenameNotEmpty(e *Env) error {
	if _, err := e.mkdir(e.Dir, "a"); err != nil {
		return err
	}
	b, err := e.mkdir(e.Dir, "b")
	if err != nil {
		return err
	}
	if _, err := e.file(b, "f", nil); err != nil {
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.Dir, "a", e.Dir, "b")
	switch st := statusOf(err); st {
	case wire.ErrNotEmpty:
		return nil
	case wire.ErrExist:
		return Warnf("RENAME over a non-empty directory: NFS3ERR_EXIST, knfsd answers NFS3ERR_NOTEMPTY")
	default:
		return fmt.Errorf("RENAME over a non-empty directory: got %v, want NFS3ERR_NOTEMPTY", st)
	}
}

func testRenameIntoSelf(e *Env) error {
	if _, err := e.mkdir(e.Dir, "a"); err != nil {
		return err
	}
	a, err := e.C.Lookup(e.Ctx, e.Dir, "a")
	if err != nil {
		return ok(err, "LOOKUP a")
	}
	_, err = e.C.Rename(e.Ctx, e.Dir, "a", a.FH, "b")
	return want(err, wire.ErrInval, "RENAME of a directory into itself")
}

func testRenameSame(e *Env) error {
	if _, err := e.file(e.Dir, "a", []byte("x")); err != nil {
		return err
	}
	if _, err := e.C.Rename(e.Ctx, e.Dir, "a", e.Dir, "a"); err != nil {
		return ok(err, "RENAME of a file to its own name")
	}
	if _, err := e.C.Lookup(e.Ctx, e.Dir, "a"); err != nil {
		return ok(err, "LOOKUP after RENAME to the same name")
	}
	return nil
}

func testLink(e *Env) error {
	info, err := e.C.Fsinfo(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "FSINFO")
	}
	fh, err := e.file(e.Dir, "f", []byte("shared"))
	if err != nil {
		return err
	}
	res, err := e.C.Link(e.Ctx, fh, e.Dir, "g")
	if info.Properties&wire.FSFLink == 0 {
		return want(err, wire.ErrNotSupp, "LINK without FSF3_LINK")
	}
	if err != nil {
		return ok(err, "LINK")
	}
	if res.Attr.Set && res.Attr.Attr.Nlink != 2 {
		return fmt.Errorf("LINK post-op nlink %d, want 2", res.Attr.Attr.Nlink)
	}
	l, err := e.C.Lookup(e.Ctx, e.Dir, "g")
	if err != nil {
		return ok(err, "LOOKUP g")
	}
	got, err := e.C.ReadAll(e.Ctx, l.FH)
	if err != nil {
		return ok(err, "READ g")
	}
	return sameBytes(got, []byte("shared"), "READ through the link")
}

func testLinkExist(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.file(e.Dir, "g", nil); err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, e.Dir, "g")
	if statusOf(err) == wire.ErrNotSupp {
		return Warnf("LINK not supported")
	}
	return want(err, wire.ErrExist, "LINK over an existing name")
}

func testLinkDir(e *Env) error {
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, d, e.Dir, "g")
	// Strict: ISDIR (RFC 1813 3.3.15 lists it for a directory).
	return oneOfStatus(e, err, "LINK of a directory", wire.ErrIsDir, wire.ErrPerm, wire.ErrNotSupp, wire.ErrInval)
}

func fill(e *Env, n int) (map[string]bool, error) {
	m := map[string]bool{}
	for i := 0; i < n; i++ {
		name := "entry-with-a-longish-name-" + strconv.Itoa(i)
		if _, err := e.C.Create(e.Ctx, e.Dir, name, wire.CreateHow{Mode: wire.Unchecked}); err != nil {
			return nil, ok(err, "CREATE "+name)
		}
		m[name] = true
	}
	return m, nil
}

func testReaddir(e *Env) error {
	want, err := fill(e, 5)
	if err != nil {
		return err
	}
	ents, err := e.C.ReaddirAll(e.Ctx, e.Dir, 8192)
	if err != nil {
		return ok(err, "READDIR")
	}
	got := names(ents)
	dots := 0
	for _, en := range ents {
		if en.Name == "." || en.Name == ".." {
			dots++
		}
	}
	if dots != 2 {
		return Warnf("READDIR listed %d of . and ..", dots)
	}
	if len(got) != len(want) {
		return fmt.Errorf("READDIR listed %d names, want %d", len(got), len(want))
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			return fmt.Errorf("READDIR lacks %q", n)
		}
	}
	return nil
}

// testReaddirCookies reads a directory in small pages and checks that every
// name appears exactly once and that verifier and cookies carry over.
func testReaddirCookies(e *Env) error {
	want, err := fill(e, 60)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return fmt.Errorf("READDIR did not reach eof in 1000 pages")
		}
		res, err := e.C.Readdir(e.Ctx, e.Dir, cookie, verf, 512)
		if err != nil {
			return ok(err, fmt.Sprintf("READDIR page %d (cookie %d)", pages, cookie))
		}
		if len(res.Entries) == 0 && !res.EOF {
			return fmt.Errorf("READDIR page %d: no entries and no eof", pages)
		}
		for _, en := range res.Entries {
			seen[en.Name]++
			cookie = en.Cookie
		}
		verf = res.Verf
		if res.EOF {
			break
		}
	}
	for n := range want {
		if seen[n] != 1 {
			return fmt.Errorf("READDIR in pages of 512 bytes listed %q %d times", n, seen[n])
		}
	}
	if len(seen) != len(want)+2 && len(seen) != len(want) {
		return fmt.Errorf("READDIR listed %d distinct names, want %d (+ . and ..)", len(seen), len(want))
	}
	return nil
}

func testReaddirTooSmall(e *Env) error {
	if _, err := fill(e, 1); err != nil {
		return err
	}
	_, err := e.C.Readdir(e.Ctx, e.Dir, 0, [8]byte{}, 10)
	return want(err, wire.ErrTooSmall, "READDIR with count 10")
}

func testReaddirNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Readdir(e.Ctx, fh, 0, [8]byte{}, 4096)
	return want(err, wire.ErrNotDir, "READDIR of a regular file")
}

func testReaddirStale(e *Env) error {
	fh, err := e.staleDir()
	if err != nil {
		return err
	}
	_, err = e.C.Readdir(e.Ctx, fh, 0, [8]byte{}, 4096)
	return want(err, wire.ErrStale, "READDIR of a removed directory")
}

func testReaddirEmpty(e *Env) error {
	res, err := e.C.Readdir(e.Ctx, e.Dir, 0, [8]byte{}, 4096)
	if err != nil {
		return ok(err, "READDIR of an empty directory")
	}
	if !res.EOF {
		return fmt.Errorf("READDIR of an empty directory without eof")
	}
	if len(names(res.Entries)) != 0 {
		return fmt.Errorf("READDIR of an empty directory listed %v", names(res.Entries))
	}
	return nil
}

func testReaddirplus(e *Env) error {
	want, err := fill(e, 5)
	if err != nil {
		return err
	}
	ents, err := e.C.ReaddirplusAll(e.Ctx, e.Dir, 8192, 32768)
	if err != nil {
		return ok(err, "READDIRPLUS")
	}
	n := 0
	for _, en := range ents {
		if !want[en.Name] {
			continue
		}
		n++
		if !en.FH.Set || !en.Attr.Set {
			return Warnf("READDIRPLUS entry %q without handle or attributes", en.Name)
		}
		a, err := e.attr(en.FH.FH)
		if err != nil {
			return err
		}
		if a.FileID != en.FileID || en.Attr.Attr.FileID != en.FileID {
			return fmt.Errorf("READDIRPLUS entry %q: fileid %d, attributes %d, handle's %d", en.Name, en.FileID, en.Attr.Attr.FileID, a.FileID)
		}
	}
	if n != len(want) {
		return fmt.Errorf("READDIRPLUS listed %d of %d names", n, len(want))
	}
	return nil
}

func testReaddirplusCookies(e *Env) error {
	want, err := fill(e, 40)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	var cookie uint64
	var verf [wire.CookieVerfSize]byte
	for pages := 0; ; pages++ {
		if pages > 1000 {
			return fmt.Errorf("READDIRPLUS did not reach eof in 1000 pages")
		}
		res, err := e.C.Readdirplus(e.Ctx, e.Dir, cookie, verf, 512, 2048)
		if err != nil {
			return ok(err, fmt.Sprintf("READDIRPLUS page %d (cookie %d)", pages, cookie))
		}
		if len(res.Entries) == 0 && !res.EOF {
			return fmt.Errorf("READDIRPLUS page %d: no entries and no eof", pages)
		}
		for _, en := range res.Entries {
			seen[en.Name]++
			cookie = en.Cookie
		}
		verf = res.Verf
		if res.EOF {
			break
		}
	}
	for n := range want {
		if seen[n] != 1 {
			return fmt.Errorf("READDIRPLUS in small pages listed %q %d times", n, seen[n])
		}
	}
	return nil
}

func testReaddirplusTooSmall(e *Env) error {
	if _, err := fill(e, 1); err != nil {
		return err
	}
	_, err := e.C.Readdirplus(e.Ctx, e.Dir, 0, [8]byte{}, 10, 10)
	return want(err, wire.ErrTooSmall, "READDIRPLUS with maxcount 10")
}

func testReaddirplusNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Readdirplus(e.Ctx, fh, 0, [8]byte{}, 4096, 8192)
	return want(err, wire.ErrNotDir, "READDIRPLUS of a regular file")
}

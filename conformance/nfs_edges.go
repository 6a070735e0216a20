package conformance

import (
	"fmt"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Edge cases and error paths of each NFSv3 procedure, in procedure
// order: bad and stale handles, names over NAME_MAX, reads past EOF,
// zero and huge writes, stable-write verifiers, create modes, special
// files, renames and links; then FSINFO, FSSTAT, PATHCONF and ACCESS.

var longName = strings.Repeat("n", 256)

func testReadFarPastEOF(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("abc"))
	if err != nil {
		return err
	}
	r, err := e.C.Read(e.Ctx, fh, 1<<40, 4096)
	if err != nil {
		return ok(err, "READ at 2^40")
	}
	if r.Count != 0 || len(r.Data) != 0 || !r.EOF {
		return fmt.Errorf("READ at 2^40 of a 3-byte file: count %d, %d bytes, eof %v", r.Count, len(r.Data), r.EOF)
	}
	return nil
}

func testWriteZero(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("abc"))
	if err != nil {
		return err
	}
	res, err := e.C.Write(e.Ctx, fh, 100, nil, wire.FileSync)
	if err != nil {
		return ok(err, "WRITE of 0 bytes")
	}
	if res.Count != 0 {
		return fmt.Errorf("WRITE of 0 bytes: count %d", res.Count)
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Size != 3 {
		return fmt.Errorf("WRITE of 0 bytes at 100 changed the size to %d", a.Size)
	}
	return nil
}

func testWriteHuge(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	const off = 1 << 40
	_, err = e.C.Write(e.Ctx, fh, off, []byte("far"), wire.FileSync)
	// Strict: OK; the suite's export (ext4 or tmpfs) holds 2^40-byte
	// sparse files. Other file systems may refuse with FBIG or NOSPC.
	if err := oneOfStatus(e, err, "WRITE at 2^40", wire.OK, wire.ErrFBig, wire.ErrNoSpc); err != nil {
		return err
	}
	if err != nil {
		return nil
	}
	defer e.C.Setattr(e.Ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true}}, nil)
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Size != off+3 {
		return fmt.Errorf("size %d after writing 3 bytes at 2^40", a.Size)
	}
	r, err := e.C.Read(e.Ctx, fh, off-2, 10)
	if err != nil {
		return ok(err, "READ at 2^40")
	}
	return sameBytes(r.Data, []byte("\x00\x00far"), "READ at 2^40-2")
}

func testWriteDataSync(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	res, err := e.C.Write(e.Ctx, fh, 0, pattern(100, 1), wire.DataSync)
	if err != nil {
		return ok(err, "WRITE DATA_SYNC")
	}
	if res.Committed == wire.Unstable {
		return fmt.Errorf("WRITE DATA_SYNC answered UNSTABLE (RFC 1813 3.3.7: committed >= stable)")
	}
	// Strict: FILE_SYNC, gonfsrdma fsyncs (data and metadata) for both
	// stable levels.
	return oneOf(e, "WRITE DATA_SYNC committed", res.Committed, wire.FileSync, wire.DataSync)
}

func testWriteUnstable(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	res, err := e.C.Write(e.Ctx, fh, 0, pattern(100, 1), wire.Unstable)
	if err != nil {
		return ok(err, "WRITE UNSTABLE")
	}
	// RFC 1813 3.3.7 lets a server commit more than asked; gonfsrdma
	// (strict) answers UNSTABLE, it leaves the data to COMMIT.
	return oneOf(e, "WRITE UNSTABLE committed", res.Committed, wire.Unstable, wire.DataSync, wire.FileSync)
}

func testWriteBadHandle(e *Env) error {
	_, err := e.C.Write(e.Ctx, badHandle(), 0, []byte("x"), wire.FileSync)
	return wantBadHandle(err, "WRITE to a malformed handle")
}

func testWriteVerfStable(e *Env) error {
	a, err := e.file(e.Dir, "a", nil)
	if err != nil {
		return err
	}
	b, err := e.file(e.Dir, "b", nil)
	if err != nil {
		return err
	}
	r1, err := e.C.Write(e.Ctx, a, 0, []byte("1"), wire.Unstable)
	if err != nil {
		return ok(err, "WRITE a")
	}
	r2, err := e.C.Write(e.Ctx, b, 0, []byte("2"), wire.FileSync)
	if err != nil {
		return ok(err, "WRITE b")
	}
	if r1.Verf != r2.Verf {
		return fmt.Errorf("write verifiers differ between files and stabilities: %x, %x (RFC 1813 3.3.7: one per server instance)", r1.Verf, r2.Verf)
	}
	c, err := e.C.Commit(e.Ctx, a, 0, 0)
	if err != nil {
		return ok(err, "COMMIT of the whole file")
	}
	if c.Verf != r1.Verf {
		return fmt.Errorf("COMMIT verifier %x, WRITE verifier %x", c.Verf, r1.Verf)
	}
	return nil
}

func testCommitBadHandle(e *Env) error {
	_, err := e.C.Commit(e.Ctx, badHandle(), 0, 0)
	return wantBadHandle(err, "COMMIT of a malformed handle")
}

func testCreateUncheckedKeeps(e *Env) error {
	if _, err := e.file(e.Dir, "f", []byte("keep")); err != nil {
		return err
	}
	if _, err := e.C.Create(e.Ctx, e.Dir, "f", wire.CreateHow{Mode: wire.Unchecked}); err != nil {
		return ok(err, "CREATE UNCHECKED of an existing file, no size")
	}
	l, err := e.C.Lookup(e.Ctx, e.Dir, "f")
	if err != nil {
		return ok(err, "LOOKUP")
	}
	got, err := e.C.ReadAll(e.Ctx, l.FH)
	if err != nil {
		return ok(err, "READ")
	}
	return sameBytes(got, []byte("keep"), "data after CREATE UNCHECKED without size")
}

func testCreateExclusiveAttrs(e *Env) error {
	verf := [8]byte{9, 8, 7, 6, 5, 4, 3, 2}
	res, err := e.C.Create(e.Ctx, e.Dir, "x", wire.CreateHow{Mode: wire.Exclusive, Verf: verf})
	if err != nil {
		return ok(err, "CREATE EXCLUSIVE")
	}
	fh := res.FH.FH
	if !res.FH.Set {
		l, err := e.C.Lookup(e.Ctx, e.Dir, "x")
		if err != nil {
			return ok(err, "LOOKUP")
		}
		fh = l.FH
	}
	// The client then sets the attributes (RFC 1813 3.3.8).
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o640},
		Atime: wire.SetTime{How: wire.SetToServerTime}, Mtime: wire.SetTime{How: wire.SetToServerTime}}, nil); err != nil {
		return ok(err, "SETATTR after EXCLUSIVE CREATE")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeReg || a.Size != 0 || a.Mode&0o777 != 0o640 {
		return fmt.Errorf("after EXCLUSIVE CREATE and SETATTR: type %v size %d mode %o", a.Type, a.Size, a.Mode&0o777)
	}
	if a.Mtime.Sec < 1_600_000_000 {
		return fmt.Errorf("mtime %v after SET_TO_SERVER_TIME: the verifier is still stored in it", a.Mtime)
	}
	return nil
}

func testCreateBadHandle(e *Env) error {
	_, err := e.C.Create(e.Ctx, badHandle(), "f", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0o644)})
	return wantBadHandle(err, "CREATE in a malformed handle")
}

func testMkdirAttrs(e *Env) error {
	tick()
	res, err := e.C.Mkdir(e.Ctx, e.Dir, "d", mode(0o711))
	if err != nil {
		return ok(err, "MKDIR")
	}
	if !res.Attr.Set {
		return Warnf("MKDIR without attributes")
	}
	if a := res.Attr.Attr; a.Type != wire.TypeDir || a.Mode&0o777 != 0o711 {
		return fmt.Errorf("MKDIR attributes type %v mode %o", a.Type, a.Mode&0o777)
	}
	return advanced(res.DirWcc, "advance", "MKDIR dir_wcc")
}

func testMkdirDot(e *Env) error {
	for _, n := range []string{".", ".."} {
		_, err := e.C.Mkdir(e.Ctx, e.Dir, n, mode(0o755))
		if err == nil {
			return fmt.Errorf("MKDIR %q succeeded", n)
		}
		if st := statusOf(err); st != wire.ErrExist {
			return Warnf("MKDIR %q: %v; knfsd answers NFS3ERR_EXIST", n, st)
		}
	}
	return nil
}

func testMkdirStale(e *Env) error {
	return e.wantStaleIn("MKDIR in a removed directory", func(d []byte) error {
		_, err := e.C.Mkdir(e.Ctx, d, "x", mode(0o755))
		return err
	})
}

func testSymlinkLong(e *Env) error {
	target := strings.Repeat("abcdefgh/", 113) + "end" // 1020 bytes
	fh, err := e.symlink(e.Dir, "l", target)
	if err != nil {
		return err
	}
	r, err := e.C.Readlink(e.Ctx, fh)
	if err != nil {
		return ok(err, "READLINK")
	}
	if r.Target != target {
		return fmt.Errorf("READLINK returned %d bytes, SYMLINK sent %d", len(r.Target), len(target))
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeLnk || a.Size != uint64(len(target)) {
		return fmt.Errorf("symlink attributes type %v size %d, want NF3LNK size %d", a.Type, a.Size, len(target))
	}
	return nil
}

func testSymlinkNameTooLong(e *Env) error {
	_, err := e.C.Symlink(e.Ctx, e.Dir, longName, "t", mode(0o777))
	return want(err, wire.ErrNameTooLong, "SYMLINK of a 256-byte name")
}

func testSymlinkStale(e *Env) error {
	return e.wantStaleIn("SYMLINK in a removed directory", func(d []byte) error {
		_, err := e.C.Symlink(e.Ctx, d, "l", "t", mode(0o777))
		return err
	})
}

func testReadlinkStale(e *Env) error {
	fh, err := e.symlink(e.Dir, "l", "target")
	if err != nil {
		return err
	}
	if _, err := e.C.Remove(e.Ctx, e.Dir, "l"); err != nil {
		return ok(err, "REMOVE l")
	}
	_, err = e.C.Readlink(e.Ctx, fh)
	return want(err, wire.ErrStale, "READLINK of a removed symlink")
}

func testReadlinkBadHandle(e *Env) error {
	_, err := e.C.Readlink(e.Ctx, badHandle())
	return wantBadHandle(err, "READLINK of a malformed handle")
}

func testMknodSock(e *Env) error {
	res, err := e.C.Mknod(e.Ctx, e.Dir, "s", wire.TypeSock, mode(0o644), wire.Specdata{})
	if err != nil {
		return ok(err, "MKNOD NF3SOCK")
	}
	fh := res.FH.FH
	if !res.FH.Set {
		l, err := e.C.Lookup(e.Ctx, e.Dir, "s")
		if err != nil {
			return ok(err, "LOOKUP")
		}
		fh = l.FH
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeSock {
		return fmt.Errorf("MKNOD NF3SOCK made type %v", a.Type)
	}
	return nil
}

func testMknodDevice(e *Env) error {
	for _, typ := range []wire.FileType{wire.TypeChr, wire.TypeBlk} {
		name := fmt.Sprintf("dev%d", typ)
		res, err := e.C.Mknod(e.Ctx, e.Dir, name, typ, mode(0o600), wire.Specdata{Major: 1, Minor: 7})
		if e.Cfg.UID != 0 && err != nil {
			// Strict: PERM, mknod(2)'s EPERM for an unprivileged caller.
			if err := oneOfStatus(e, err, fmt.Sprintf("MKNOD type %d as uid %d", typ, e.Cfg.UID), wire.ErrPerm, wire.ErrAcces); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return ok(err, fmt.Sprintf("MKNOD type %d", typ))
		}
		fh := res.FH.FH
		if !res.FH.Set {
			l, err := e.C.Lookup(e.Ctx, e.Dir, name)
			if err != nil {
				return ok(err, "LOOKUP")
			}
			fh = l.FH
		}
		a, err := e.attr(fh)
		if err != nil {
			return err
		}
		if a.Type != typ || a.Rdev.Major != 1 || a.Rdev.Minor != 7 {
			return fmt.Errorf("MKNOD type %d 1:7 made type %v rdev %d:%d", typ, a.Type, a.Rdev.Major, a.Rdev.Minor)
		}
	}
	return nil
}

func testMknodNameTooLong(e *Env) error {
	_, err := e.C.Mknod(e.Ctx, e.Dir, longName, wire.TypeFIFO, mode(0o644), wire.Specdata{})
	return want(err, wire.ErrNameTooLong, "MKNOD of a 256-byte name")
}

func testMknodStale(e *Env) error {
	return e.wantStaleIn("MKNOD in a removed directory", func(d []byte) error {
		_, err := e.C.Mknod(e.Ctx, d, "p", wire.TypeFIFO, mode(0o644), wire.Specdata{})
		return err
	})
}

func testRemoveNameTooLong(e *Env) error {
	_, err := e.C.Remove(e.Ctx, e.Dir, longName)
	return want(err, wire.ErrNameTooLong, "REMOVE of a 256-byte name")
}

func testRemoveStale(e *Env) error {
	return e.wantStaleIn("REMOVE in a removed directory", func(d []byte) error {
		_, err := e.C.Remove(e.Ctx, d, "x")
		return err
	})
}

func testRemoveOpenFile(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("data"))
	if err != nil {
		return err
	}
	if _, err := e.C.Link(e.Ctx, fh, e.Dir, "g"); err != nil {
		if statusOf(err) == wire.ErrNotSupp {
			return Warnf("LINK not supported")
		}
		return ok(err, "LINK")
	}
	if _, err := e.C.Remove(e.Ctx, e.Dir, "f"); err != nil {
		return ok(err, "REMOVE f")
	}
	a, err := e.attr(fh)
	if err != nil {
		return ok(err, "GETATTR through the handle after removing one of two names")
	}
	if a.Nlink != 1 {
		return fmt.Errorf("nlink %d after removing one of two names", a.Nlink)
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ")
	}
	return sameBytes(got, []byte("data"), "data through the surviving name")
}

func testRmdirNameTooLong(e *Env) error {
	_, err := e.C.Rmdir(e.Ctx, e.Dir, longName)
	return want(err, wire.ErrNameTooLong, "RMDIR of a 256-byte name")
}

func testRmdirStale(e *Env) error {
	return e.wantStaleIn("RMDIR in a removed directory", func(d []byte) error {
		_, err := e.C.Rmdir(e.Ctx, d, "x")
		return err
	})
}

func testRenameDirOverEmpty(e *Env) error {
	a, err := e.mkdir(e.Dir, "a")
	if err != nil {
		return err
	}
	if _, err := e.file(a, "inside", nil); err != nil {
		return err
	}
	if _, err := e.mkdir(e.Dir, "b"); err != nil {
		return err
	}
	if _, err := e.C.Rename(e.Ctx, e.Dir, "a", e.Dir, "b"); err != nil {
		return ok(err, "RENAME of a directory over an empty one")
	}
	b, err := e.C.Lookup(e.Ctx, e.Dir, "b")
	if err != nil {
		return ok(err, "LOOKUP b")
	}
	if _, err := e.C.Lookup(e.Ctx, b.FH, "inside"); err != nil {
		return ok(err, "LOOKUP b/inside")
	}
	_, err = e.C.Lookup(e.Ctx, e.Dir, "a")
	return want(err, wire.ErrNoEnt, "LOOKUP a after RENAME")
}

func testRenameIntoSubdir(e *Env) error {
	a, err := e.mkdir(e.Dir, "a")
	if err != nil {
		return err
	}
	b, err := e.mkdir(a, "b")
	if err != nil {
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.Dir, "a", b, "a")
	return want(err, wire.ErrInval, "RENAME of a directory into its own subdirectory")
}

func testRenameNameTooLong(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err := e.C.Rename(e.Ctx, e.Dir, "f", e.Dir, longName)
	return want(err, wire.ErrNameTooLong, "RENAME to a 256-byte name")
}

func testRenameStale(e *Env) error {
	d, err := e.staleDir()
	if err != nil {
		return err
	}
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.Dir, "f", d, "g")
	return want(err, wire.ErrStale, "RENAME into a removed directory")
}

func testRenameDots(e *Env) error {
	if _, err := e.mkdir(e.Dir, "d"); err != nil {
		return err
	}
	d, err := e.C.Lookup(e.Ctx, e.Dir, "d")
	if err != nil {
		return ok(err, "LOOKUP d")
	}
	for _, n := range []string{".", ".."} {
		_, err := e.C.Rename(e.Ctx, d.FH, n, e.Dir, "x")
		if statusOf(err) == wire.OK {
			return fmt.Errorf("RENAME of %q succeeded", n)
		}
		// Strict: PERM, knfsd's answer (nfsd_rename; RFC 1813 3.3.14
		// names none); rename(2) gives INVAL, others ACCES, NOTEMPTY or
		// EXIST.
		if err := oneOfStatus(e, err, fmt.Sprintf("RENAME of %q", n), wire.ErrPerm, wire.ErrInval, wire.ErrAcces, wire.ErrNotEmpty, wire.ErrExist); err != nil {
			return err
		}
	}
	return nil
}

func testLinkCount(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	tick()
	res, err := e.C.Link(e.Ctx, fh, e.Dir, "g")
	if err != nil {
		return ok(err, "LINK")
	}
	if res.Attr.Set && res.Attr.Attr.Nlink != 2 {
		return fmt.Errorf("LINK file attributes nlink %d, want 2", res.Attr.Attr.Nlink)
	}
	if err := advanced(res.DirWcc, "advance", "LINK linkdir_wcc"); err != nil {
		return err
	}
	if _, err := e.C.Link(e.Ctx, fh, e.Dir, "h"); err != nil {
		return ok(err, "second LINK")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Nlink != 3 {
		return fmt.Errorf("nlink %d after two LINKs", a.Nlink)
	}
	g, _ := e.C.Lookup(e.Ctx, e.Dir, "g")
	if g == nil || g.ObjAttr.Attr.FileID != a.FileID {
		return fmt.Errorf("the new name is not the same file")
	}
	return nil
}

func testLinkNameTooLong(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, e.Dir, longName)
	return want(err, wire.ErrNameTooLong, "LINK to a 256-byte name")
}

func testLinkStale(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	d, err := e.staleDir()
	if err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, d, "g")
	if err := want(err, wire.ErrStale, "LINK into a removed directory"); err != nil {
		return err
	}
	return e.wantStaleFile("LINK of a removed file", func(gone []byte) error {
		_, err := e.C.Link(e.Ctx, gone, e.Dir, "h")
		return err
	})
}

func testLinkNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, fh, "g")
	return want(err, wire.ErrNotDir, "LINK into a regular file")
}

func testFsinfoSane(e *Env) error {
	r, err := e.C.Fsinfo(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "FSINFO")
	}
	switch {
	case r.RTMax < r.RTPref || r.WTMax < r.WTPref:
		return fmt.Errorf("FSINFO rtmax %d < rtpref %d or wtmax %d < wtpref %d", r.RTMax, r.RTPref, r.WTMax, r.WTPref)
	case r.RTMult == 0 || r.WTMult == 0 || r.RTPref%r.RTMult != 0:
		return fmt.Errorf("FSINFO rtmult %d wtmult %d (rtpref %d)", r.RTMult, r.WTMult, r.RTPref)
	case r.DTPref == 0:
		return fmt.Errorf("FSINFO dtpref 0")
	case r.MaxFileSize < 1<<31:
		return fmt.Errorf("FSINFO maxfilesize %d", r.MaxFileSize)
	case r.TimeDelta.Sec > 1 || r.TimeDelta.Sec == 1 && r.TimeDelta.Nsec != 0:
		return fmt.Errorf("FSINFO time_delta %v over a second", r.TimeDelta)
	case r.Properties&(wire.FSFLink|wire.FSFSymlink) != wire.FSFLink|wire.FSFSymlink:
		return Warnf("FSINFO properties %#x lack FSF3_LINK or FSF3_SYMLINK", r.Properties)
	}
	if r.RTMax < 1<<20 || r.WTMax < 1<<20 {
		return Warnf("FSINFO rtmax %d wtmax %d: the Linux client's rsize/wsize stay below 1 MiB", r.RTMax, r.WTMax)
	}
	return nil
}

func testFsinfoFile(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.C.Fsinfo(e.Ctx, fh); err != nil {
		return ok(err, "FSINFO of a regular file handle")
	}
	if _, err := e.C.Fsstat(e.Ctx, fh); err != nil {
		return ok(err, "FSSTAT of a regular file handle")
	}
	return nil
}

func testPathconfValues(e *Env) error {
	r, err := e.C.Pathconf(e.Ctx, e.Dir)
	if err != nil {
		return ok(err, "PATHCONF")
	}
	if !r.NoTrunc || r.CaseInsensitive || !r.CasePreserving {
		return fmt.Errorf("PATHCONF no_trunc %v case_insensitive %v case_preserving %v, want true false true", r.NoTrunc, r.CaseInsensitive, r.CasePreserving)
	}
	// RFC 1813 3.3.20 fixes no value for name_max, but the server must
	// keep it: a name_max-byte name is accepted and, with no_trunc, one
	// byte more is NFS3ERR_NAMETOOLONG.
	if r.NameMax == 0 || r.NameMax > 4096 {
		return fmt.Errorf("PATHCONF name_max %d", r.NameMax)
	}
	longest := strings.Repeat("n", int(r.NameMax))
	if _, err := e.C.Create(e.Ctx, e.Dir, longest, wire.CreateHow{Mode: wire.Unchecked}); err != nil {
		return ok(err, fmt.Sprintf("CREATE of a %d-byte name (name_max)", r.NameMax))
	}
	_, err = e.C.Create(e.Ctx, e.Dir, longest+"n", wire.CreateHow{Mode: wire.Unchecked})
	if err := want(err, wire.ErrNameTooLong, fmt.Sprintf("CREATE of a %d-byte name (name_max+1, no_trunc)", r.NameMax+1)); err != nil {
		return err
	}
	if r.NameMax != 255 {
		return Warnf("PATHCONF name_max %d; knfsd reports 255 on Linux file systems", r.NameMax)
	}
	return nil
}

func testFsstatBadHandle(e *Env) error {
	_, err := e.C.Fsstat(e.Ctx, badHandle())
	return wantBadHandle(err, "FSSTAT of a malformed handle")
}

func testPathconfStale(e *Env) error {
	return e.wantStaleFile("PATHCONF of a removed file", func(fh []byte) error {
		_, err := e.C.Pathconf(e.Ctx, fh)
		return err
	})
}

func testFsinfoStale(e *Env) error {
	return e.wantStaleFile("FSINFO of a removed file", func(fh []byte) error {
		_, err := e.C.Fsinfo(e.Ctx, fh)
		return err
	})
}

func testAccessBadHandle(e *Env) error {
	_, err := e.C.Access(e.Ctx, badHandle(), wire.AccessRead)
	return wantBadHandle(err, "ACCESS of a malformed handle")
}

func testRemoveTwice(e *Env) error {
	// REMOVE of a file that is gone by the time of a retransmission
	// from another client: NOENT, and the directory still lists nothing.
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	if _, err := e.C.Remove(e.Ctx, e.Dir, "f"); err != nil {
		return ok(err, "REMOVE")
	}
	res, err := e.C.Remove(e.Ctx, e.Dir, "f")
	if err := want(err, wire.ErrNoEnt, "second REMOVE of the same name"); err != nil {
		return err
	}
	if res != nil && !res.Wcc.After.Set {
		return Warnf("REMOVE NOENT without the directory's post-op attributes")
	}
	return nil
}

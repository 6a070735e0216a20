package conformance

import (
	"fmt"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// NULL, GETATTR, SETATTR, LOOKUP, ACCESS, READLINK, FSSTAT, FSINFO,
// PATHCONF.

func testNull(e *Env) error { return ok(e.C.Null(e.Ctx), "NULL") }

func testGetattrRoot(e *Env) error {
	a, err := e.attr(e.Root)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeDir {
		return fmt.Errorf("export root has type %v, want NF3DIR", a.Type)
	}
	if a.Nlink < 2 {
		return Warnf("export root nlink %d < 2", a.Nlink)
	}
	return nil
}

func testGetattrFile(e *Env) error {
	data := pattern(1000, 3)
	_, a, err := e.fileWithAttr(e.Dir, "f", data)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeReg || a.Size != 1000 || a.Mode&0o7777 != 0o644 || a.Nlink != 1 {
		return fmt.Errorf("attributes of a new 1000-byte 0644 file: type %v size %d mode %o nlink %d", a.Type, a.Size, a.Mode, a.Nlink)
	}
	d, err := e.attr(e.Dir)
	if err != nil {
		return err
	}
	if d.FSID != a.FSID {
		return fmt.Errorf("fsid of file %d differs from its directory's %d", a.FSID, d.FSID)
	}
	if d.FileID == a.FileID {
		return fmt.Errorf("file and directory share fileid %d", a.FileID)
	}
	return nil
}

func testGetattrStale(e *Env) error {
	return e.wantStaleFile("GETATTR of a removed file", func(fh []byte) error {
		_, err := e.C.Getattr(e.Ctx, fh)
		return err
	})
}

func testGetattrBadHandle(e *Env) error {
	_, err := e.C.Getattr(e.Ctx, badHandle())
	return wantBadHandle(err, "GETATTR of a 3-byte handle")
}

func testSetattrMode(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	res, err := e.C.Setattr(e.Ctx, fh, mode(0o600), nil)
	if err != nil {
		return ok(err, "SETATTR mode")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Mode&0o7777 != 0o600 {
		return fmt.Errorf("mode %o after SETATTR 0600", a.Mode)
	}
	if res.Wcc.After.Set && res.Wcc.After.Attr.Mode&0o7777 != 0o600 {
		return fmt.Errorf("wcc post-op mode %o, want 0600", res.Wcc.After.Attr.Mode)
	}
	return nil
}

func testSetattrSize(e *Env) error {
	fh, err := e.file(e.Dir, "f", pattern(5000, 1))
	if err != nil {
		return err
	}
	res, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true, V: 10}}, nil)
	if err != nil {
		return ok(err, "SETATTR size 10")
	}
	if res.Wcc.Before.Set && res.Wcc.Before.Attr.Size != 5000 {
		return fmt.Errorf("wcc pre-op size %d, want 5000", res.Wcc.Before.Attr.Size)
	}
	if res.Wcc.After.Set && res.Wcc.After.Attr.Size != 10 {
		return fmt.Errorf("wcc post-op size %d, want 10", res.Wcc.After.Attr.Size)
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ")
	}
	if err := sameBytes(got, pattern(5000, 1)[:10], "after truncation"); err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true, V: 100000}}, nil); err != nil {
		return ok(err, "SETATTR size 100000")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Size != 100000 {
		return fmt.Errorf("size %d after extending to 100000", a.Size)
	}
	return nil
}

func testSetattrTimes(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Setattr(e.Ctx, fh, wire.Sattr{
		Atime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 2_000_000}},
		Mtime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 1_000_000, Nsec: 5000}},
	}, nil)
	if err != nil {
		return ok(err, "SETATTR times")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Mtime.Sec != 1_000_000 || a.Atime.Sec != 2_000_000 {
		return fmt.Errorf("times after SETATTR: atime %d mtime %d", a.Atime.Sec, a.Mtime.Sec)
	}
	_, err = e.C.Setattr(e.Ctx, fh, wire.Sattr{Mtime: wire.SetTime{How: wire.SetToServerTime}}, nil)
	if err != nil {
		return ok(err, "SETATTR mtime SET_TO_SERVER_TIME")
	}
	if a, err = e.attr(fh); err != nil {
		return err
	}
	if a.Mtime.Sec <= 1_000_000 {
		return fmt.Errorf("mtime %d after SET_TO_SERVER_TIME", a.Mtime.Sec)
	}
	return nil
}

func testSetattrGuard(e *Env) error {
	fh, a, err := e.fileWithAttr(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	good := a.Ctime
	bad := wire.Time{Sec: good.Sec - 1000, Nsec: good.Nsec}
	res, err := e.C.Setattr(e.Ctx, fh, mode(0o600), &bad)
	if err := want(err, wire.ErrNotSync, "SETATTR with a wrong ctime guard"); err != nil {
		return err
	}
	_ = res
	if a2, err := e.attr(fh); err != nil {
		return err
	} else if a2.Mode&0o7777 != 0o644 {
		return fmt.Errorf("mode changed to %o by a refused SETATTR", a2.Mode)
	}
	if _, err := e.C.Setattr(e.Ctx, fh, mode(0o600), &good); err != nil {
		return ok(err, "SETATTR with the right ctime guard")
	}
	return nil
}

func testSetattrStale(e *Env) error {
	return e.wantStaleFile("SETATTR of a removed file", func(fh []byte) error {
		_, err := e.C.Setattr(e.Ctx, fh, mode(0o600), nil)
		return err
	})
}

func testSetattrDirSize(e *Env) error {
	_, err := e.C.Setattr(e.Ctx, e.Dir, wire.Sattr{Size: wire.SetUint64{Set: true, V: 0}}, nil)
	// Strict: ISDIR, as knfsd (a size change needs a regular file).
	return oneOfStatus(e, err, "SETATTR size of a directory", wire.ErrIsDir, wire.ErrInval)
}

func testLookup(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	res, err := e.C.Lookup(e.Ctx, e.Dir, "f")
	if err != nil {
		return ok(err, "LOOKUP f")
	}
	a1, err := e.attr(fh)
	if err != nil {
		return err
	}
	a2, err := e.attr(res.FH)
	if err != nil {
		return err
	}
	if a1.FileID != a2.FileID {
		return fmt.Errorf("LOOKUP handle names fileid %d, CREATE's %d", a2.FileID, a1.FileID)
	}
	if res.ObjAttr.Set && res.ObjAttr.Attr.FileID != a1.FileID {
		return fmt.Errorf("LOOKUP obj_attributes fileid %d, want %d", res.ObjAttr.Attr.FileID, a1.FileID)
	}
	return nil
}

func testLookupDot(e *Env) error {
	sub, err := e.mkdir(e.Dir, "sub")
	if err != nil {
		return err
	}
	dir, err := e.attr(e.Dir)
	if err != nil {
		return err
	}
	res, err := e.C.Lookup(e.Ctx, sub, "..")
	if err != nil {
		return ok(err, "LOOKUP ..")
	}
	a, err := e.attr(res.FH)
	if err != nil {
		return err
	}
	if a.FileID != dir.FileID {
		return fmt.Errorf("LOOKUP .. names fileid %d, want the parent's %d", a.FileID, dir.FileID)
	}
	res, err = e.C.Lookup(e.Ctx, sub, ".")
	if err != nil {
		return ok(err, "LOOKUP .")
	}
	s, err := e.attr(sub)
	if err != nil {
		return err
	}
	if a, err = e.attr(res.FH); err != nil {
		return err
	}
	if a.FileID != s.FileID {
		return fmt.Errorf("LOOKUP . names fileid %d, want %d", a.FileID, s.FileID)
	}
	return nil
}

func testLookupNoEnt(e *Env) error {
	res, err := e.C.Lookup(e.Ctx, e.Dir, "nosuchfile")
	if err := want(err, wire.ErrNoEnt, "LOOKUP of a missing name"); err != nil {
		return err
	}
	if res != nil && !res.DirAttr.Set {
		return Warnf("LOOKUP failure without dir_attributes")
	}
	return nil
}

func testLookupNotDir(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Lookup(e.Ctx, fh, "x")
	return want(err, wire.ErrNotDir, "LOOKUP in a regular file")
}

func testLookupNameTooLong(e *Env) error {
	_, err := e.C.Lookup(e.Ctx, e.Dir, strings.Repeat("n", 256))
	return want(err, wire.ErrNameTooLong, "LOOKUP of a 256-byte name")
}

func testLookupStale(e *Env) error {
	fh, err := e.staleDir()
	if err != nil {
		return err
	}
	_, err = e.C.Lookup(e.Ctx, fh, "x")
	return want(err, wire.ErrStale, "LOOKUP in a removed directory")
}

func testLookupBadHandle(e *Env) error {
	_, err := e.C.Lookup(e.Ctx, badHandle(), "x")
	return wantBadHandle(err, "LOOKUP in a 3-byte handle")
}

func testAccess(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	res, err := e.C.Access(e.Ctx, fh, wire.AccessAll)
	if err != nil {
		return ok(err, "ACCESS")
	}
	if res.Access&^uint32(wire.AccessAll) != 0 {
		return fmt.Errorf("ACCESS granted bits %#x beyond those asked (%#x)", res.Access, wire.AccessAll)
	}
	if res.Access&wire.AccessRead == 0 {
		return fmt.Errorf("ACCESS denies READ of the creator's own 0644 file (%#x)", res.Access)
	}
	res, err = e.C.Access(e.Ctx, fh, wire.AccessRead)
	if err != nil {
		return ok(err, "ACCESS READ")
	}
	if res.Access != wire.AccessRead {
		return fmt.Errorf("ACCESS READ returned %#x", res.Access)
	}
	return nil
}

func testAccessDir(e *Env) error {
	res, err := e.C.Access(e.Ctx, e.Dir, wire.AccessLookup|wire.AccessModify|wire.AccessExtend|wire.AccessDelete)
	if err != nil {
		return ok(err, "ACCESS dir")
	}
	if res.Access&wire.AccessLookup == 0 || res.Access&wire.AccessModify == 0 {
		return fmt.Errorf("ACCESS on the owner's own 0777 directory: %#x", res.Access)
	}
	return nil
}

func testAccessStale(e *Env) error {
	return e.wantStaleFile("ACCESS of a removed file", func(fh []byte) error {
		_, err := e.C.Access(e.Ctx, fh, wire.AccessRead)
		return err
	})
}

func testReadlink(e *Env) error {
	const target = "some/where/../else"
	fh, err := e.symlink(e.Dir, "l", target)
	if err != nil {
		return err
	}
	res, err := e.C.Readlink(e.Ctx, fh)
	if err != nil {
		return ok(err, "READLINK")
	}
	if res.Target != target {
		return fmt.Errorf("READLINK %q, want %q", res.Target, target)
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Type != wire.TypeLnk {
		return fmt.Errorf("symlink has type %v", a.Type)
	}
	return nil
}

func testReadlinkNotLink(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.C.Readlink(e.Ctx, fh)
	return want(err, wire.ErrInval, "READLINK of a regular file")
}

func testFsstat(e *Env) error {
	res, err := e.C.Fsstat(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "FSSTAT")
	}
	if res.FBytes > res.TBytes || res.ABytes > res.FBytes || res.FFiles > res.TFiles || res.AFiles > res.FFiles {
		return fmt.Errorf("FSSTAT inconsistent: tbytes %d fbytes %d abytes %d tfiles %d ffiles %d afiles %d",
			res.TBytes, res.FBytes, res.ABytes, res.TFiles, res.FFiles, res.AFiles)
	}
	return nil
}

func testFsinfo(e *Env) error {
	res, err := e.C.Fsinfo(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "FSINFO")
	}
	if res.RTMax == 0 || res.WTMax == 0 || res.RTPref == 0 || res.WTPref == 0 || res.DTPref == 0 {
		return fmt.Errorf("FSINFO zero sizes: rtmax %d rtpref %d wtmax %d wtpref %d dtpref %d",
			res.RTMax, res.RTPref, res.WTMax, res.WTPref, res.DTPref)
	}
	if res.RTPref > res.RTMax || res.WTPref > res.WTMax {
		return fmt.Errorf("FSINFO preferred sizes above the maxima: rt %d/%d wt %d/%d", res.RTPref, res.RTMax, res.WTPref, res.WTMax)
	}
	if res.Properties&wire.FSFHomogeneous == 0 {
		return Warnf("FSINFO without FSF3_HOMOGENEOUS (properties %#x)", res.Properties)
	}
	return nil
}

func testPathconf(e *Env) error {
	res, err := e.C.Pathconf(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "PATHCONF")
	}
	if res.NameMax == 0 || res.LinkMax == 0 {
		return fmt.Errorf("PATHCONF name_max %d link_max %d", res.NameMax, res.LinkMax)
	}
	return nil
}

func testFsstatStale(e *Env) error {
	return e.wantStaleFile("FSSTAT of a removed file", func(fh []byte) error {
		_, err := e.C.Fsstat(e.Ctx, fh)
		return err
	})
}

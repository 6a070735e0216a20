package conformance

import (
	"fmt"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// wcc_data and attribute consistency (RFC 1813 sections 2.6 and 3.3):
// pre- and post-op attributes that bracket each change, link counts,
// SETATTR of owner, times and size, unique file ids, LOOKUP attributes.

func timeLess(a, b wire.Time) bool {
	return a.Sec < b.Sec || a.Sec == b.Sec && a.Nsec < b.Nsec
}

// tick lets the server clock move past the last change.
func tick() { time.Sleep(20 * time.Millisecond) }

// fullWcc requires both halves of a wcc_data.
func fullWcc(w wire.WccData, what string) error {
	if !w.Before.Set || !w.After.Set {
		return Warnf("%s without full wcc_data (before %v after %v)", what, w.Before.Set, w.After.Set)
	}
	return nil
}

// advanced checks that wcc after-times moved past the before-times.
func advanced(w wire.WccData, mtime, what string) error {
	if err := fullWcc(w, what); err != nil {
		return err
	}
	b, a := w.Before.Attr, w.After.Attr
	if !timeLess(b.Ctime, a.Ctime) {
		return fmt.Errorf("%s: ctime %v -> %v did not advance (RFC 1813 2.6, wcc_data)", what, b.Ctime, a.Ctime)
	}
	switch mtime {
	case "advance":
		if !timeLess(b.Mtime, a.Mtime) {
			return fmt.Errorf("%s: mtime %v -> %v did not advance", what, b.Mtime, a.Mtime)
		}
	case "same":
		if b.Mtime != a.Mtime {
			return fmt.Errorf("%s: mtime changed %v -> %v", what, b.Mtime, a.Mtime)
		}
	}
	return nil
}

func testWccWrite(e *Env) error {
	fh, before, err := e.fileWithAttr(e.Dir, "f", pattern(10, 1))
	if err != nil {
		return err
	}
	tick()
	res, err := e.C.Write(e.Ctx, fh, 10, pattern(10, 2), wire.FileSync)
	if err != nil {
		return ok(err, "WRITE")
	}
	if err := advanced(res.Wcc, "advance", "WRITE"); err != nil {
		return err
	}
	b := res.Wcc.Before.Attr
	if b.Size != before.Size || b.Mtime != before.Mtime || b.Ctime != before.Ctime {
		return fmt.Errorf("WRITE pre-op attributes %+v differ from GETATTR before it (size %d mtime %v ctime %v)", b, before.Size, before.Mtime, before.Ctime)
	}
	after, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a := res.Wcc.After.Attr; a.Size != 20 || a.Mtime != after.Mtime || a.Size != after.Size {
		return fmt.Errorf("WRITE post-op size %d mtime %v, GETATTR size %d mtime %v", a.Size, a.Mtime, after.Size, after.Mtime)
	}
	return nil
}

func testWccSetattrMode(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	tick()
	res, err := e.C.Setattr(e.Ctx, fh, mode(0o600), nil)
	if err != nil {
		return ok(err, "SETATTR mode")
	}
	return advanced(res.Wcc, "same", "SETATTR mode (ctime advances, mtime stays)")
}

func testWccCreateDir(e *Env) error {
	tick()
	res, err := e.C.Create(e.Ctx, e.Dir, "f", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0o644)})
	if err != nil {
		return ok(err, "CREATE")
	}
	if err := advanced(res.DirWcc, "advance", "CREATE dir_wcc"); err != nil {
		return err
	}
	if !res.FH.Set || !res.Attr.Set {
		return Warnf("CREATE without the new handle or attributes (handle %v attr %v)", res.FH.Set, res.Attr.Set)
	}
	if res.Attr.Attr.Type != wire.TypeReg || res.Attr.Attr.Size != 0 || res.Attr.Attr.Mode&0o777 != 0o644 {
		return fmt.Errorf("CREATE attributes: type %v size %d mode %o", res.Attr.Attr.Type, res.Attr.Attr.Size, res.Attr.Attr.Mode)
	}
	return nil
}

func testWccRemoveDir(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	tick()
	res, err := e.C.Remove(e.Ctx, e.Dir, "f")
	if err != nil {
		return ok(err, "REMOVE")
	}
	return advanced(res.Wcc, "advance", "REMOVE dir_wcc")
}

func testWccRename(e *Env) error {
	if _, err := e.file(e.Dir, "f", nil); err != nil {
		return err
	}
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	tick()
	res, err := e.C.Rename(e.Ctx, e.Dir, "f", d, "g")
	if err != nil {
		return ok(err, "RENAME")
	}
	if err := advanced(res.FromWcc, "advance", "RENAME fromdir_wcc"); err != nil {
		return err
	}
	return advanced(res.ToWcc, "advance", "RENAME todir_wcc")
}

func testMkdirNlink(e *Env) error {
	d, err := e.mkdir(e.Dir, "d")
	if err != nil {
		return err
	}
	before, err := e.attr(d)
	if err != nil {
		return err
	}
	if before.Nlink != 2 {
		return Warnf("a new directory has nlink %d; knfsd on Linux file systems gives 2", before.Nlink)
	}
	if _, err := e.mkdir(d, "sub"); err != nil {
		return err
	}
	after, err := e.attr(d)
	if err != nil {
		return err
	}
	if after.Nlink != 3 {
		return Warnf("nlink %d after MKDIR of a subdirectory, want 3 (the sub's ..)", after.Nlink)
	}
	return nil
}

func testSetattrOwner(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	// To the owner's own uid and gid: always allowed.
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{UID: wire.SetUint32{Set: true, V: e.Cfg.UID}, GID: wire.SetUint32{Set: true, V: e.Cfg.GID}}, nil); err != nil {
		return ok(err, "SETATTR uid/gid to the caller's own")
	}
	if e.Cfg.UID != 0 {
		_, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{UID: wire.SetUint32{Set: true, V: e.Cfg.UID + 1}}, nil)
		return want(err, wire.ErrPerm, "SETATTR uid to another user by a non-root owner")
	}
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{UID: wire.SetUint32{Set: true, V: 4321}, GID: wire.SetUint32{Set: true, V: 8765}}, nil); err != nil {
		return ok(err, "SETATTR uid 4321 gid 8765 as root")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.UID != 4321 || a.GID != 8765 {
		return fmt.Errorf("after SETATTR uid 4321 gid 8765: uid %d gid %d", a.UID, a.GID)
	}
	return nil
}

func testSetattrServerTime(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	old := wire.Time{Sec: 1_000_000}
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Atime: wire.SetTime{How: wire.SetToClientTime, Time: old}, Mtime: wire.SetTime{How: wire.SetToClientTime, Time: old}}, nil); err != nil {
		return ok(err, "SETATTR times to 1970")
	}
	res, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Atime: wire.SetTime{How: wire.SetToServerTime}, Mtime: wire.SetTime{How: wire.SetToServerTime}}, nil)
	if err != nil {
		return ok(err, "SETATTR SET_TO_SERVER_TIME")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Mtime.Sec < 1_600_000_000 || a.Atime.Sec < 1_600_000_000 {
		return fmt.Errorf("SET_TO_SERVER_TIME left atime %v mtime %v", a.Atime, a.Mtime)
	}
	if res.Wcc.Before.Set && res.Wcc.Before.Attr.Mtime != old {
		return fmt.Errorf("SETATTR pre-op mtime %v, want the %v set before", res.Wcc.Before.Attr.Mtime, old)
	}
	return nil
}

func testSetattrGuardOK(e *Env) error {
	fh, a, err := e.fileWithAttr(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, mode(0o640), &a.Ctime); err != nil {
		return ok(err, "SETATTR with the current ctime as guard")
	}
	b, err := e.attr(fh)
	if err != nil {
		return err
	}
	if b.Mode&0o777 != 0o640 {
		return fmt.Errorf("mode %o after a guarded SETATTR to 0640", b.Mode&0o777)
	}
	return nil
}

func testSetattrNothing(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("abc"))
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{}, nil); err != nil {
		return ok(err, "SETATTR setting nothing")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Size != 3 || a.Mode&0o777 != 0o644 {
		return fmt.Errorf("SETATTR of nothing changed size %d mode %o", a.Size, a.Mode&0o777)
	}
	return nil
}

func testSetattrExtend(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("abc"))
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true, V: 4096}}, nil); err != nil {
		return ok(err, "SETATTR size 4096")
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ")
	}
	w := append([]byte("abc"), make([]byte, 4093)...)
	return sameBytes(got, w, "file extended by SETATTR size")
}

func testSetattrBadHandle(e *Env) error {
	_, err := e.C.Setattr(e.Ctx, badHandle(), mode(0o644), nil)
	return wantBadHandle(err, "SETATTR of a malformed handle")
}

func testGetattrUnique(e *Env) error {
	a, err := e.file(e.Dir, "a", nil)
	if err != nil {
		return err
	}
	b, err := e.file(e.Dir, "b", nil)
	if err != nil {
		return err
	}
	aa, err := e.attr(a)
	if err != nil {
		return err
	}
	ba, err := e.attr(b)
	if err != nil {
		return err
	}
	da, err := e.attr(e.Dir)
	if err != nil {
		return err
	}
	if aa.FileID == ba.FileID || aa.FileID == da.FileID {
		return fmt.Errorf("fileids not unique: %d, %d, dir %d (RFC 1813 2.6)", aa.FileID, ba.FileID, da.FileID)
	}
	if aa.FSID != ba.FSID || aa.FSID != da.FSID {
		return fmt.Errorf("fsid differs inside one directory: %d, %d, %d", aa.FSID, ba.FSID, da.FSID)
	}
	return nil
}

func testLookupAttrs(e *Env) error {
	_, g, err := e.fileWithAttr(e.Dir, "f", []byte("hello"))
	if err != nil {
		return err
	}
	l, err := e.C.Lookup(e.Ctx, e.Dir, "f")
	if err != nil {
		return ok(err, "LOOKUP")
	}
	if !l.ObjAttr.Set {
		return Warnf("LOOKUP without obj_attributes")
	}
	if l.ObjAttr.Attr.FileID != g.FileID || l.ObjAttr.Attr.Size != 5 || l.ObjAttr.Attr.Type != wire.TypeReg {
		return fmt.Errorf("LOOKUP attributes fileid %d size %d, GETATTR fileid %d size %d", l.ObjAttr.Attr.FileID, l.ObjAttr.Attr.Size, g.FileID, g.Size)
	}
	if !l.DirAttr.Set || l.DirAttr.Attr.Type != wire.TypeDir {
		return Warnf("LOOKUP without directory attributes")
	}
	return nil
}

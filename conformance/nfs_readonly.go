package conformance

import (
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// The read-only export: every modifying procedure is NFS3ERR_ROFS, ACCESS
// grants no MODIFY or EXTEND, and a RENAME or LINK between it and the
// read-write export fails (NFS3ERR_XDEV or NFS3ERR_ROFS).

// roFile returns the handle of a regular file in the read-only export.
func (e *Env) roFile() ([]byte, string, error) {
	ents, err := e.C.ReaddirplusAll(e.Ctx, e.RORoot, 4096, 32768)
	if err != nil {
		return nil, "", ok(err, "READDIRPLUS of the read-only export")
	}
	for _, en := range ents {
		if en.Attr.Set && en.Attr.Attr.Type == wire.TypeReg && en.FH.Set {
			return en.FH.FH, en.Name, nil
		}
	}
	return nil, "", errors.New("the read-only export holds no regular file (see --roexport)")
}

func wantROFS(err error, what string) error {
	return want(err, wire.ErrROFS, what+" on a read-only export")
}

func testROFSCreate(e *Env) error {
	_, err := e.C.Create(e.Ctx, e.RORoot, "conformance-new", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0o644)})
	return wantROFS(err, "CREATE")
}

func testROFSMkdir(e *Env) error {
	_, err := e.C.Mkdir(e.Ctx, e.RORoot, "conformance-new", mode(0o755))
	return wantROFS(err, "MKDIR")
}

func testROFSSymlink(e *Env) error {
	_, err := e.C.Symlink(e.Ctx, e.RORoot, "conformance-new", "t", mode(0o777))
	return wantROFS(err, "SYMLINK")
}

func testROFSMknod(e *Env) error {
	_, err := e.C.Mknod(e.Ctx, e.RORoot, "conformance-new", wire.TypeFIFO, mode(0o644), wire.Specdata{})
	return wantROFS(err, "MKNOD")
}

func testROFSRemove(e *Env) error {
	_, name, err := e.roFile()
	if err != nil {
		return err
	}
	_, err = e.C.Remove(e.Ctx, e.RORoot, name)
	return wantROFS(err, "REMOVE")
}

func testROFSRmdir(e *Env) error {
	_, err := e.C.Rmdir(e.Ctx, e.RORoot, "conformance-none")
	switch statusOf(err) {
	case wire.ErrROFS:
		return nil
	case wire.ErrNoEnt:
		return Warnf("RMDIR of a missing name on a read-only export: NOENT; knfsd checks ROFS first")
	}
	return wantROFS(err, "RMDIR")
}

func testROFSRename(e *Env) error {
	_, name, err := e.roFile()
	if err != nil {
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.RORoot, name, e.RORoot, "conformance-renamed")
	return wantROFS(err, "RENAME")
}

func testROFSLink(e *Env) error {
	fh, _, err := e.roFile()
	if err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, e.RORoot, "conformance-link")
	return wantROFS(err, "LINK")
}

func testROFSWrite(e *Env) error {
	fh, _, err := e.roFile()
	if err != nil {
		return err
	}
	_, err = e.C.Write(e.Ctx, fh, 0, []byte("x"), wire.FileSync)
	return wantROFS(err, "WRITE")
}

func testROFSSetattr(e *Env) error {
	fh, _, err := e.roFile()
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, mode(0o600), nil); wantROFS(err, "SETATTR mode") != nil {
		return wantROFS(err, "SETATTR mode")
	}
	_, err = e.C.Setattr(e.Ctx, fh, wire.Sattr{Size: wire.SetUint64{Set: true}}, nil)
	return wantROFS(err, "SETATTR size")
}

func testROFSRead(e *Env) error {
	fh, _, err := e.roFile()
	if err != nil {
		return err
	}
	if _, err := e.C.Read(e.Ctx, fh, 0, 4096); err != nil {
		return ok(err, "READ on a read-only export")
	}
	res, err := e.C.Access(e.Ctx, fh, wire.AccessRead|wire.AccessModify|wire.AccessExtend)
	if err != nil {
		return ok(err, "ACCESS on a read-only export")
	}
	if res.Access&(wire.AccessModify|wire.AccessExtend) != 0 {
		return fmt.Errorf("ACCESS grants %#x on a read-only export: MODIFY/EXTEND must not be granted (RFC 1813 3.3.4)", res.Access)
	}
	if res.Access&wire.AccessRead == 0 {
		return Warnf("ACCESS does not grant READ of a readable file on a read-only export (granted %#x)", res.Access)
	}
	return nil
}

func testXDevRename(e *Env) error {
	fh, name, err := e.roFile()
	if err != nil {
		return err
	}
	_, err = e.C.Rename(e.Ctx, e.RORoot, name, e.Dir, "moved")
	// Strict: ROFS, knfsd's answer, since the source directory is on a
	// read-only export and that is checked before the exports are
	// compared (RFC 1813 3.3.14 gives no order); XDEV passes the
	// tolerant profile.
	if err := oneOfStatus(e, err, "RENAME across exports", wire.ErrROFS, wire.ErrXDev); err != nil {
		return err
	}
	_, err = e.C.Link(e.Ctx, fh, e.Dir, "linked")
	// Strict: XDEV (RFC 1813 3.3.15): the target directory is writable,
	// the file is in another export. A read-only answer passes the
	// tolerant profile.
	return oneOfStatus(e, err, "LINK across exports", wire.ErrXDev, wire.ErrROFS)
}

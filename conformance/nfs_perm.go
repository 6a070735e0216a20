package conformance

import (
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Permission checks with a second AUTH_SYS identity (RFC 1813 section 4.4).

// other returns a client speaking as a user who is neither the test
// identity nor root.
func (e *Env) other() *client.Client {
	uid := uint32(4242)
	if e.Cfg.UID == uid {
		uid++
	}
	return e.C.WithCred(oncrpc.NewAuthSys("conformance-other", uid, uid))
}

func testPermRead(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("secret"))
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, mode(0o600), nil); err != nil {
		return ok(err, "SETATTR 0600")
	}
	_, err = e.other().Read(e.Ctx, fh, 0, 10)
	return want(err, wire.ErrAcces, "READ of another user's 0600 file")
}

func testPermWrite(e *Env) error {
	fh, err := e.file(e.Dir, "f", []byte("data"))
	if err != nil {
		return err
	}
	_, err = e.other().Write(e.Ctx, fh, 0, []byte("x"), wire.FileSync)
	return want(err, wire.ErrAcces, "WRITE to another user's 0644 file")
}

func testPermCreate(e *Env) error {
	d, err := e.mkdir(e.Dir, "d") // 0755
	if err != nil {
		return err
	}
	_, err = e.other().Create(e.Ctx, d, "x", wire.CreateHow{Mode: wire.Guarded})
	return want(err, wire.ErrAcces, "CREATE in another user's 0755 directory")
}

func testPermAccess(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.C.Setattr(e.Ctx, fh, mode(0o604), nil); err != nil {
		return ok(err, "SETATTR 0604")
	}
	res, err := e.other().Access(e.Ctx, fh, wire.AccessRead|wire.AccessModify|wire.AccessExtend|wire.AccessExecute)
	if err != nil {
		return ok(err, "ACCESS as another user")
	}
	if res.Access != wire.AccessRead {
		return fmt.Errorf("ACCESS of a 0604 file by another user granted %#x, want READ only (%#x)", res.Access, wire.AccessRead)
	}
	return nil
}

func testPermChmod(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	_, err = e.other().Setattr(e.Ctx, fh, mode(0o777), nil)
	return want(err, wire.ErrPerm, "SETATTR mode of another user's file")
}

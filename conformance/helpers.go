package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// want returns nil when err carries status st, a FAIL otherwise.
func want(err error, st wire.Status, what string) error {
	if got := client.StatusOf(err); got != st {
		if got == wire.ErrServerFault && err != nil {
			return fmt.Errorf("%s: %v, want %v", what, err, st)
		}
		return fmt.Errorf("%s: got %v, want %v", what, got, st)
	}
	return nil
}

// ok wraps a failure of a setup or success-path step.
func ok(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func mode(m uint32) wire.Sattr { return wire.Sattr{Mode: wire.SetUint32{Set: true, V: m}} }

// file creates dir/name (GUARDED, mode 0644) holding data.
func (e *Env) file(dir []byte, name string, data []byte) ([]byte, error) {
	res, err := e.C.Create(e.Ctx, dir, name, wire.CreateHow{Mode: wire.Guarded, Attr: mode(0o644)})
	if err != nil {
		return nil, ok(err, "CREATE "+name)
	}
	fh, err := e.madeHandle(res.FH, dir, name)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		if err := e.C.WriteAll(e.Ctx, fh, data); err != nil {
			return nil, ok(err, "WRITE "+name)
		}
	}
	return fh, nil
}

// madeHandle is the handle of dir/name that a CREATE, MKDIR or SYMLINK
// reply returned, fh, or when it returned none (post_op_fh3 may be
// absent, RFC 1813 section 2.6), the one LOOKUP finds.
func (e *Env) madeHandle(fh wire.PostOpFH, dir []byte, name string) ([]byte, error) {
	if fh.Set {
		return fh.FH, nil
	}
	l, err := e.C.Lookup(e.Ctx, dir, name)
	if err != nil {
		return nil, ok(err, "LOOKUP "+name)
	}
	return l.FH, nil
}

// mkdir creates dir/name with mode 0755.
func (e *Env) mkdir(dir []byte, name string) ([]byte, error) {
	res, err := e.C.Mkdir(e.Ctx, dir, name, mode(0o755))
	if err != nil {
		return nil, ok(err, "MKDIR "+name)
	}
	return e.madeHandle(res.FH, dir, name)
}

// symlink creates dir/name pointing at target.
func (e *Env) symlink(dir []byte, name, target string) ([]byte, error) {
	res, err := e.C.Symlink(e.Ctx, dir, name, target, mode(0o777))
	if err != nil {
		return nil, ok(err, "SYMLINK "+name)
	}
	return e.madeHandle(res.FH, dir, name)
}

// attr returns the attributes of fh.
func (e *Env) attr(fh []byte) (wire.Fattr, error) {
	res, err := e.C.Getattr(e.Ctx, fh)
	if err != nil {
		return wire.Fattr{}, ok(err, "GETATTR")
	}
	return res.Attr, nil
}

// fileWithAttr is file, with the new file's attributes (GETATTR).
func (e *Env) fileWithAttr(dir []byte, name string, data []byte) ([]byte, wire.Fattr, error) {
	fh, err := e.file(dir, name, data)
	if err != nil {
		return nil, wire.Fattr{}, err
	}
	a, err := e.attr(fh)
	if err != nil {
		return nil, wire.Fattr{}, err
	}
	return fh, a, nil
}

// stale returns the handle of a file that has been removed.
func (e *Env) stale() ([]byte, error) {
	fh, err := e.file(e.Dir, "gone", nil)
	if err != nil {
		return nil, err
	}
	if _, err := e.C.Remove(e.Ctx, e.Dir, "gone"); err != nil {
		return nil, ok(err, "REMOVE gone")
	}
	return fh, nil
}

// wantStaleFile runs op on the handle of a removed file (stale) and
// wants NFS3ERR_STALE from it.
func (e *Env) wantStaleFile(what string, op func(fh []byte) error) error {
	fh, err := e.stale()
	if err != nil {
		return err
	}
	return want(op(fh), wire.ErrStale, what)
}

// wantStaleIn runs op on the handle of a removed directory (staleDir)
// and wants NFS3ERR_STALE from it.
func (e *Env) wantStaleIn(what string, op func(d []byte) error) error {
	d, err := e.staleDir()
	if err != nil {
		return err
	}
	return want(op(d), wire.ErrStale, what)
}

// staleDir returns the handle of a directory that has been removed.
func (e *Env) staleDir() ([]byte, error) {
	fh, err := e.mkdir(e.Dir, "gonedir")
	if err != nil {
		return nil, err
	}
	if _, err := e.C.Rmdir(e.Ctx, e.Dir, "gonedir"); err != nil {
		return nil, ok(err, "RMDIR gonedir")
	}
	return fh, nil
}

// badHandle is a handle no server can have issued: too short to hold even
// an fsid.
func badHandle() []byte { return []byte{0xff, 0x00, 0xff} }

// oneOf judges got, the answer to what. The tolerant profile accepts
// exact or any of also; the strict profile (Config.Strict) accepts only
// exact: gonfsrdma's answer, its reading of the RFC or knfsd's where the
// RFC leaves the choice open.
func oneOf[T comparable](e *Env, what string, got, exact T, also ...T) error {
	if got == exact {
		return nil
	}
	if slices.Contains(also, got) {
		if !e.Cfg.Strict {
			return nil
		}
		return fmt.Errorf("%s: got %v, want %v (strict profile; the tolerant one also accepts %v)", what, got, exact, also)
	}
	if len(also) > 0 && !e.Cfg.Strict {
		return fmt.Errorf("%s: got %v, want %v or one of %v", what, got, exact, also)
	}
	return fmt.Errorf("%s: got %v, want %v", what, got, exact)
}

// oneOfStatus is oneOf for the nfsstat3 that err carries.
func oneOfStatus(e *Env, err error, what string, exact wire.Status, also ...wire.Status) error {
	got := client.StatusOf(err)
	if got == wire.ErrServerFault && err != nil {
		return fmt.Errorf("%s: %v, want %v", what, err, exact)
	}
	return oneOf(e, what, got, exact, also...)
}

// wantBadHandle accepts NFS3ERR_BADHANDLE and warns on NFS3ERR_STALE.
func wantBadHandle(err error, what string) error {
	switch client.StatusOf(err) {
	case wire.ErrBadHandle:
		return nil
	case wire.ErrStale:
		return Warnf("%s: NFS3ERR_STALE for a malformed handle, want NFS3ERR_BADHANDLE", what)
	}
	return fmt.Errorf("%s: got %v, want NFS3ERR_BADHANDLE", what, client.StatusOf(err))
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/251)
	}
	return b
}

func sameBytes(got, want []byte, what string) error {
	if !bytes.Equal(got, want) {
		if len(got) <= 64 && len(want) <= 64 {
			return fmt.Errorf("%s: got % x, want % x", what, got, want)
		}
		return fmt.Errorf("%s: %d bytes differ from the %d written", what, len(got), len(want))
	}
	return nil
}

// acceptStat returns nil when err is an accepted reply with stat st.
func acceptStat(err error, st oncrpc.AcceptStat, what string) error {
	var ae *oncrpc.AcceptError
	if errors.As(err, &ae) && ae.Stat == st {
		return nil
	}
	return fmt.Errorf("%s: got %v, want %v", what, err, st)
}

// names returns the entry names of a READDIR listing other than . and ..
func names(ents []wire.Entry) map[string]uint64 {
	m := map[string]uint64{}
	for _, en := range ents {
		if en.Name != "." && en.Name != ".." {
			m[en.Name] = en.FileID
		}
	}
	return m
}

func statusOf(err error) wire.Status { return client.StatusOf(err) }

func appendU32(b []byte, v uint32) []byte { return xdr.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return xdr.AppendUint64(b, v) }

// decodeInto decodes a raw result.
func decodeInto(b []byte, res interface{ Decode(*xdr.Reader) error }) error {
	if err := res.Decode(xdr.NewReader(b)); err != nil {
		return fmt.Errorf("malformed reply: %w", err)
	}
	return nil
}

package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// StatusError is an NFS result whose status is not NFS3_OK.
type StatusError struct {
	Proc   uint32
	Status wire.Status
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("nfs %s: %v", procName(e.Proc), e.Status)
}

// Is matches another *StatusError with the same status (the procedure is
// not compared), so errors.Is(err, client.ErrNoEnt) works.
func (e *StatusError) Is(target error) bool {
	t, ok := target.(*StatusError)
	return ok && t.Status == e.Status
}

func procName(p uint32) string {
	if p < wire.NumProcs {
		return wire.ProcNames[p]
	}
	return fmt.Sprintf("proc %d", p)
}

// Sentinels for errors.Is.
var (
	ErrPerm        = &StatusError{Status: wire.ErrPerm}
	ErrNoEnt       = &StatusError{Status: wire.ErrNoEnt}
	ErrIO          = &StatusError{Status: wire.ErrIO}
	ErrAcces       = &StatusError{Status: wire.ErrAcces}
	ErrExist       = &StatusError{Status: wire.ErrExist}
	ErrXDev        = &StatusError{Status: wire.ErrXDev}
	ErrNotDir      = &StatusError{Status: wire.ErrNotDir}
	ErrIsDir       = &StatusError{Status: wire.ErrIsDir}
	ErrInval       = &StatusError{Status: wire.ErrInval}
	ErrFBig        = &StatusError{Status: wire.ErrFBig}
	ErrNoSpc       = &StatusError{Status: wire.ErrNoSpc}
	ErrROFS        = &StatusError{Status: wire.ErrROFS}
	ErrNameTooLong = &StatusError{Status: wire.ErrNameTooLong}
	ErrNotEmpty    = &StatusError{Status: wire.ErrNotEmpty}
	ErrStale       = &StatusError{Status: wire.ErrStale}
	ErrBadHandle   = &StatusError{Status: wire.ErrBadHandle}
	ErrNotSync     = &StatusError{Status: wire.ErrNotSync}
	ErrNotSupp     = &StatusError{Status: wire.ErrNotSupp}
	ErrTooSmall    = &StatusError{Status: wire.ErrTooSmall}
	ErrBadType     = &StatusError{Status: wire.ErrBadType}
)

// StatusOf returns the nfsstat3 an error carries: wire.OK for nil,
// wire.ErrServerFault for errors that are not *StatusError.
func StatusOf(err error) wire.Status {
	if err == nil {
		return wire.OK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return wire.ErrServerFault
}

// Client calls NFSv3 procedures over a Caller. It is safe for concurrent
// use when the Caller is.
type Client struct {
	c    oncrpc.Caller
	cred *oncrpc.OpaqueAuth
	// rsize and wsize bound the READs and WRITEs of the helpers
	// (ReadAll, WriteAll); zero means 1 MiB.
	rsize, wsize uint32
}

// New returns a client over c using c's default credential.
func New(c oncrpc.Caller) *Client { return &Client{c: c} }

// WithCred returns a client sharing the same Caller that sends cred
// (e.g. oncrpc.NewAuthSys(...)) with every call.
func (c *Client) WithCred(cred oncrpc.OpaqueAuth) *Client {
	n := *c
	n.cred = &cred
	return &n
}

// SetIOSize bounds the helpers' READs and WRITEs, as a mount's rsize and
// wsize do: use the server's FSINFO rtmax and wtmax (or rtpref, wtpref).
// Zero keeps 1 MiB. A server may refuse a larger call outright (knfsd's
// TCP transport closes a connection whose record exceeds its maximum).
func (c *Client) SetIOSize(rsize, wsize uint32) {
	c.rsize, c.wsize = rsize, wsize
}

func ioSize(n uint32) int {
	if n == 0 || n > helperIO {
		return helperIO
	}
	return int(n)
}

// Caller returns the underlying Caller.
func (c *Client) Caller() oncrpc.Caller { return c.c }

// decoder is implemented by every result type.
type decoder interface{ Decode(*xdr.Reader) error }

// statusOf is implemented by the results through their Status field.
func check(proc uint32, st wire.Status) error {
	if st == wire.OK {
		return nil
	}
	return &StatusError{Proc: proc, Status: st}
}

// CallRaw sends already-encoded arguments to procedure proc and returns
// the raw results (tests of malformed arguments use it).
func (c *Client) CallRaw(ctx context.Context, proc uint32, args []byte) ([]byte, error) {
	return c.c.Call(ctx, &oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: proc, Cred: c.cred, Args: args})
}

// call sends cc and decodes the results into res.
func (c *Client) call(ctx context.Context, cc *oncrpc.ClientCall, res decoder) error {
	cc.Prog, cc.Vers, cc.Cred = wire.Program, wire.Version, c.cred
	b, err := c.c.Call(ctx, cc)
	if err != nil {
		return err
	}
	if err := res.Decode(xdr.NewReader(b)); err != nil {
		return fmt.Errorf("nfs %s: malformed reply: %w", procName(cc.Proc), err)
	}
	return nil
}

type appender interface{ Append([]byte) []byte }

func (c *Client) simple(ctx context.Context, proc uint32, args appender, res decoder, st *wire.Status) error {
	if err := c.call(ctx, &oncrpc.ClientCall{Proc: proc, Args: args.Append(nil)}, res); err != nil {
		return err
	}
	return check(proc, *st)
}

// Null calls NULL.
func (c *Client) Null(ctx context.Context) error {
	_, err := c.c.Call(ctx, &oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: wire.ProcNull, Cred: c.cred})
	return err
}

// Getattr calls GETATTR.
func (c *Client) Getattr(ctx context.Context, fh []byte) (*wire.GetattrRes, error) {
	res := new(wire.GetattrRes)
	return res, c.simple(ctx, wire.ProcGetattr, &wire.GetattrArgs{FH: fh}, res, &res.Status)
}

// Setattr calls SETATTR; a non-nil guard makes it conditional on the
// object's ctime.
func (c *Client) Setattr(ctx context.Context, fh []byte, attr wire.Sattr, guard *wire.Time) (*wire.SetattrRes, error) {
	args := wire.SetattrArgs{FH: fh, Attr: attr}
	if guard != nil {
		args.Guard, args.Ctime = true, *guard
	}
	res := new(wire.SetattrRes)
	return res, c.simple(ctx, wire.ProcSetattr, &args, res, &res.Status)
}

// Lookup calls LOOKUP.
func (c *Client) Lookup(ctx context.Context, dir []byte, name string) (*wire.LookupRes, error) {
	res := new(wire.LookupRes)
	return res, c.simple(ctx, wire.ProcLookup, &wire.LookupArgs{Dir: dir, Name: name}, res, &res.Status)
}

// Access calls ACCESS with the ACCESS3 bits in mask.
func (c *Client) Access(ctx context.Context, fh []byte, mask uint32) (*wire.AccessRes, error) {
	res := new(wire.AccessRes)
	return res, c.simple(ctx, wire.ProcAccess, &wire.AccessArgs{FH: fh, Access: mask}, res, &res.Status)
}

// Readlink calls READLINK.
func (c *Client) Readlink(ctx context.Context, fh []byte) (*wire.ReadlinkRes, error) {
	res := new(wire.ReadlinkRes)
	args := wire.ReadlinkArgs{FH: fh}
	cc := oncrpc.ClientCall{Proc: wire.ProcReadlink, Args: args.Append(nil), LargeReply: true}
	if err := c.call(ctx, &cc, res); err != nil {
		return nil, err
	}
	return res, check(wire.ProcReadlink, res.Status)
}

// Read calls READ; the transport may place up to count bytes directly.
// res.Data is freshly allocated.
func (c *Client) Read(ctx context.Context, fh []byte, offset uint64, count uint32) (*wire.ReadRes, error) {
	return c.ReadInto(ctx, fh, offset, count, nil)
}

// ReadOverhead is the room a READ reply needs besides its data: the RPC
// reply header (with a verifier of up to 400 bytes) and READ3resok.
const ReadOverhead = 1024

// ReadInto calls READ and reads the reply into buf when the transport can
// (oncrpc.ClientCall.ReplyBuf): buf needs a capacity of at least
// count+ReadOverhead, its length does not matter. res.Data then aliases
// buf, and stays valid until buf is reused; otherwise (a transport that
// ignores ReplyBuf, a nil or smaller buf) it is freshly allocated. buf
// must not be used by anyone else until ReadInto returns, also when it
// fails.
func (c *Client) ReadInto(ctx context.Context, fh []byte, offset uint64, count uint32, buf []byte) (*wire.ReadRes, error) {
	res := new(wire.ReadRes)
	args := wire.ReadArgs{FH: fh, Offset: offset, Count: count}
	cc := oncrpc.ClientCall{Proc: wire.ProcRead, Args: args.Append(nil), ReplyPayloadMax: int(count), ReplyBuf: buf}
	if err := c.call(ctx, &cc, res); err != nil {
		return nil, err
	}
	return res, check(wire.ProcRead, res.Status)
}

// Write calls WRITE; data travels as the call's payload.
func (c *Client) Write(ctx context.Context, fh []byte, offset uint64, data []byte, stable wire.StableHow) (*wire.WriteRes, error) {
	res := new(wire.WriteRes)
	args := wire.WriteArgs{FH: fh, Offset: offset, Count: uint32(len(data)), Stable: stable, Data: data}
	cc := oncrpc.ClientCall{Proc: wire.ProcWrite, Args: args.AppendHead(nil), Payload: data}
	if err := c.call(ctx, &cc, res); err != nil {
		return nil, err
	}
	return res, check(wire.ProcWrite, res.Status)
}

// Create calls CREATE.
func (c *Client) Create(ctx context.Context, dir []byte, name string, how wire.CreateHow) (*wire.CreateRes, error) {
	res := new(wire.CreateRes)
	args := wire.CreateArgs{Where: wire.DirOpArgs{Dir: dir, Name: name}, How: how}
	return res, c.simple(ctx, wire.ProcCreate, &args, res, &res.Status)
}

// Mkdir calls MKDIR.
func (c *Client) Mkdir(ctx context.Context, dir []byte, name string, attr wire.Sattr) (*wire.MkdirRes, error) {
	res := new(wire.MkdirRes)
	args := wire.MkdirArgs{Where: wire.DirOpArgs{Dir: dir, Name: name}, Attr: attr}
	return res, c.simple(ctx, wire.ProcMkdir, &args, res, &res.Status)
}

// Symlink calls SYMLINK.
func (c *Client) Symlink(ctx context.Context, dir []byte, name, target string, attr wire.Sattr) (*wire.SymlinkRes, error) {
	res := new(wire.SymlinkRes)
	args := wire.SymlinkArgs{Where: wire.DirOpArgs{Dir: dir, Name: name}, Attr: attr, Target: target}
	return res, c.simple(ctx, wire.ProcSymlink, &args, res, &res.Status)
}

// Mknod calls MKNOD; spec is used for character and block devices.
func (c *Client) Mknod(ctx context.Context, dir []byte, name string, typ wire.FileType, attr wire.Sattr, spec wire.Specdata) (*wire.MknodRes, error) {
	res := new(wire.MknodRes)
	args := wire.MknodArgs{Where: wire.DirOpArgs{Dir: dir, Name: name}, Type: typ, Attr: attr, Spec: spec}
	return res, c.simple(ctx, wire.ProcMknod, &args, res, &res.Status)
}

// Remove calls REMOVE.
func (c *Client) Remove(ctx context.Context, dir []byte, name string) (*wire.RemoveRes, error) {
	res := new(wire.RemoveRes)
	return res, c.simple(ctx, wire.ProcRemove, &wire.RemoveArgs{Dir: dir, Name: name}, res, &res.Status)
}

// Rmdir calls RMDIR.
func (c *Client) Rmdir(ctx context.Context, dir []byte, name string) (*wire.RmdirRes, error) {
	res := new(wire.RmdirRes)
	return res, c.simple(ctx, wire.ProcRmdir, &wire.RmdirArgs{Dir: dir, Name: name}, res, &res.Status)
}

// Rename calls RENAME.
func (c *Client) Rename(ctx context.Context, fromDir []byte, fromName string, toDir []byte, toName string) (*wire.RenameRes, error) {
	res := new(wire.RenameRes)
	args := wire.RenameArgs{From: wire.DirOpArgs{Dir: fromDir, Name: fromName}, To: wire.DirOpArgs{Dir: toDir, Name: toName}}
	return res, c.simple(ctx, wire.ProcRename, &args, res, &res.Status)
}

// Link calls LINK.
func (c *Client) Link(ctx context.Context, fh, dir []byte, name string) (*wire.LinkRes, error) {
	res := new(wire.LinkRes)
	args := wire.LinkArgs{FH: fh, Link: wire.DirOpArgs{Dir: dir, Name: name}}
	return res, c.simple(ctx, wire.ProcLink, &args, res, &res.Status)
}

// Readdir calls READDIR.
func (c *Client) Readdir(ctx context.Context, dir []byte, cookie uint64, verf [wire.CookieVerfSize]byte, count uint32) (*wire.ReaddirRes, error) {
	res := new(wire.ReaddirRes)
	args := wire.ReaddirArgs{Dir: dir, Cookie: cookie, Verf: verf, Count: count}
	cc := oncrpc.ClientCall{Proc: wire.ProcReaddir, Args: args.Append(nil), LargeReply: true}
	if err := c.call(ctx, &cc, res); err != nil {
		return nil, err
	}
	return res, check(wire.ProcReaddir, res.Status)
}

// Readdirplus calls READDIRPLUS.
func (c *Client) Readdirplus(ctx context.Context, dir []byte, cookie uint64, verf [wire.CookieVerfSize]byte, dirCount, maxCount uint32) (*wire.ReaddirplusRes, error) {
	res := new(wire.ReaddirplusRes)
	args := wire.ReaddirplusArgs{Dir: dir, Cookie: cookie, Verf: verf, DirCount: dirCount, MaxCount: maxCount}
	cc := oncrpc.ClientCall{Proc: wire.ProcReaddirplus, Args: args.Append(nil), LargeReply: true}
	if err := c.call(ctx, &cc, res); err != nil {
		return nil, err
	}
	return res, check(wire.ProcReaddirplus, res.Status)
}

// Fsstat calls FSSTAT.
func (c *Client) Fsstat(ctx context.Context, fh []byte) (*wire.FsstatRes, error) {
	res := new(wire.FsstatRes)
	return res, c.simple(ctx, wire.ProcFsstat, &wire.FsstatArgs{FH: fh}, res, &res.Status)
}

// Fsinfo calls FSINFO.
func (c *Client) Fsinfo(ctx context.Context, fh []byte) (*wire.FsinfoRes, error) {
	res := new(wire.FsinfoRes)
	return res, c.simple(ctx, wire.ProcFsinfo, &wire.FsinfoArgs{FH: fh}, res, &res.Status)
}

// Pathconf calls PATHCONF.
func (c *Client) Pathconf(ctx context.Context, fh []byte) (*wire.PathconfRes, error) {
	res := new(wire.PathconfRes)
	return res, c.simple(ctx, wire.ProcPathconf, &wire.PathconfArgs{FH: fh}, res, &res.Status)
}

// Commit calls COMMIT.
func (c *Client) Commit(ctx context.Context, fh []byte, offset uint64, count uint32) (*wire.CommitRes, error) {
	res := new(wire.CommitRes)
	return res, c.simple(ctx, wire.ProcCommit, &wire.CommitArgs{FH: fh, Offset: offset, Count: count}, res, &res.Status)
}

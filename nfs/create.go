package nfs

import (
	"context"
	"errors"
	"io/fs"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Modes of objects created without a mode in sattr3.
const (
	defaultFileMode    = 0644
	exclusiveFileMode  = 0600 // the client sets the real mode by SETATTR
	defaultDirMode     = 0755
	defaultSymlinkMode = 0777
	defaultSpecialMode = 0644
)

// create is CREATE, RFC 1813 section 3.3.8. UNCHECKED opens an existing
// regular file (applying a size from sattr3), GUARDED fails with
// NFS3ERR_EXIST, EXCLUSIVE stores the verifier in the backend so that a
// retransmission succeeds with the same file while another verifier gets
// NFS3ERR_EXIST.
func (s *Server) create(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.CreateArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.CreateRes
	var buf fhBuf
	res.Status = s.doCreate(call, &args, &res, &buf)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doCreate(call *oncrpc.Call, args *wire.CreateArgs, res *wire.CreateRes, buf *fhBuf) wire.Status {
	var rq req
	var dir vfs.Attr
	name := args.Where.Name
	if st := s.beginDirChange(call, "CREATE", args.Where.Dir, name, &rq, &dir, &res.DirWcc); st != wire.OK {
		return st
	}
	if isDotName(name) {
		return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
	}
	sa := &args.How.Attr
	if args.How.Mode == wire.Exclusive {
		h, _, err := rq.fs.Create(rq.cred, rq.h, name, exclusiveFileMode, false, true, args.How.Verf)
		if err != nil {
			res.DirWcc.After = rq.postOp(rq.h)
			return s.status("CREATE", err)
		}
		return rq.finishCreate(h, res, buf)
	}
	h, a, err := rq.fs.Create(rq.cred, rq.h, name, modeOr(sa, defaultFileMode), true, false, [8]byte{})
	// known is the file's attributes as Create (or Lookup) returned
	// them, for the reply, until a SetAttr changes them (nil: fetch).
	known := &a
	switch {
	case err == nil:
		if v := newAttrsToSet(&rq, &a, sa); !isEmptySetAttr(&v) {
			known, err = nil, rq.fs.SetAttr(rq.cred, h, v)
		}
	case args.How.Mode == wire.Unchecked && errors.Is(err, fs.ErrExist):
		h, a, err = rq.fs.Lookup(rq.cred, rq.h, name)
		if err != nil {
			break
		}
		if a.Type != vfs.TypeReg {
			res.DirWcc.After = rq.postOp(rq.h)
			return wire.ErrExist
		}
		if sa.Size.Set {
			if st := permit(&rq.cred, &a, mayWrite, true); st != wire.OK {
				res.DirWcc.After = rq.postOp(rq.h)
				return st
			}
			size := sa.Size.V
			known, err = nil, rq.fs.SetAttr(rq.cred, h, vfs.SetAttr{Size: &size})
		}
	}
	if err != nil {
		res.DirWcc.After = rq.postOp(rq.h)
		return s.status("CREATE", err)
	}
	return rq.finishCreateAttr(h, known, res, buf)
}

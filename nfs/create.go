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
	name := args.Where.Name
	if st := s.resolve(call, args.Where.Dir, &rq); st != wire.OK {
		return st
	}
	// dc, when the backend has it, takes the directory's attributes
	// around its own create into da; else dirPreOp takes them first.
	var dc vfs.DirAttrChanger
	var da vfs.DirAttrs
	if !isDotName(name) {
		dc = dirChanger(&rq, name)
	}
	if dc == nil {
		var dir vfs.Attr
		if st := s.dirPreOp("CREATE", &rq, name, &dir, &res.DirWcc); st != wire.OK {
			return st
		}
		if isDotName(name) {
			return wire.ErrExist // as knfsd's nfsd_create, nfsd_link, nfsd_symlink
		}
	}
	sa := &args.How.Attr
	if args.How.Mode == wire.Exclusive {
		h, _, err, st := s.createIn(&rq, dc, &da, name, exclusiveFileMode, false, true, args.How.Verf, &res.DirWcc)
		if st != wire.OK {
			return st
		}
		if err != nil {
			res.DirWcc.After = rq.dirPost(&da)
			return s.status("CREATE", err)
		}
		return rq.finishCreateAttr(h, nil, &da, res, buf)
	}
	h, a, err, st := s.createIn(&rq, dc, &da, name, modeOr(sa, defaultFileMode), true, false, [8]byte{}, &res.DirWcc)
	if st != wire.OK {
		return st
	}
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
			res.DirWcc.After = rq.dirPost(&da)
			return wire.ErrExist
		}
		if sa.Size.Set {
			if st := permit(&rq.cred, &a, mayWrite, true); st != wire.OK {
				res.DirWcc.After = rq.dirPost(&da)
				return st
			}
			size := sa.Size.V
			known, err = nil, rq.fs.SetAttr(rq.cred, h, vfs.SetAttr{Size: &size})
		}
	}
	if err != nil {
		res.DirWcc.After = rq.dirPost(&da)
		return s.status("CREATE", err)
	}
	return rq.finishCreateAttr(h, known, &da, res, buf)
}

// createIn is the backend's Create of name in rq's directory: through
// dc, when not nil, with the directory's attributes into da and its
// pre-op attributes into wcc (changedDir: st not OK is the answer, when
// the backend changed nothing and the directory's checks refuse), else
// plain Create after dirPreOp.
func (s *Server) createIn(rq *req, dc vfs.DirAttrChanger, da *vfs.DirAttrs, name string, mode uint32, guarded, exclusive bool, verf [8]byte, wcc *wire.WccData) (vfs.Handle, vfs.Attr, error, wire.Status) {
	if dc == nil {
		h, a, err := rq.fs.Create(rq.cred, rq.h, name, mode, guarded, exclusive, verf)
		return h, a, err, wire.OK
	}
	h, a, d, err := dc.CreateDirAttrs(rq.cred, rq.h, name, mode, guarded, exclusive, verf)
	*da = d
	st, err := s.changedDir("CREATE", rq, name, da, err, wcc)
	return h, a, err, st
}

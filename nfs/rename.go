package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// rename is RENAME, RFC 1813 section 3.3.14. Both directories must be in
// one export (else NFS3ERR_XDEV); handles of renamed files stay valid.
// An empty, "." or ".." name on either side is NFS3ERR_PERM, knfsd's
// answer (the RFC names none), checked after each directory's access and
// read-only checks and before the export comparison, in knfsd's order.
func (s *Server) rename(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.RenameArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.RenameRes
	res.Status = s.doRename(call, &args, &res)
	reply.Head = res.Append(reply.Head)
	return nil
}

func badRenameName(name string) bool { return name == "" || isDotName(name) }

func (s *Server) doRename(call *oncrpc.Call, args *wire.RenameArgs, res *wire.RenameRes) wire.Status {
	var from, to req
	var fromDir, toDir vfs.Attr
	if st := s.beginDirChange(call, "RENAME", args.From.Dir, args.From.Name, &from, &fromDir, &res.FromWcc); st != wire.OK {
		return st
	}
	if st := s.beginDirChange(call, "RENAME", args.To.Dir, args.To.Name, &to, &toDir, &res.ToWcc); st != wire.OK {
		return st
	}
	if badRenameName(args.From.Name) || badRenameName(args.To.Name) {
		return wire.ErrPerm
	}
	if from.ex != to.ex {
		return wire.ErrXDev
	}
	// Permissions (both directories, the sticky rule on the source and
	// on a replaced target, write permission on a directory that changes
	// parent) are the backend's.
	err := from.fs.Rename(from.cred, from.h, args.From.Name, to.h, args.To.Name)
	res.FromWcc.After = from.postOp(from.h)
	res.ToWcc.After = to.postOp(to.h)
	return s.status("RENAME", err)
}

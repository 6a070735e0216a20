package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// lookup is LOOKUP, RFC 1813 section 3.3.3: search permission on the
// directory; "." and ".." resolve in the backend (".." of the export root
// is the root).
func (s *Server) lookup(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.LookupArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.LookupRes
	var buf fhBuf
	res.Status = s.doLookup(call, &args, &res, &buf)
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doLookup(call *oncrpc.Call, args *wire.LookupArgs, res *wire.LookupRes, buf *fhBuf) wire.Status {
	var rq req
	if st := s.resolve(call, args.Dir, &rq); st != wire.OK {
		return st
	}
	if dl, ok := rq.fs.(vfs.DirLookuper); ok && len(args.Name) <= wire.MaxName {
		h, a, dir, haveDir, err := dl.LookupDirAttr(rq.cred, rq.h, args.Name)
		if haveDir {
			res.DirAttr = rq.attrOp(&dir)
			if dir.Type != vfs.TypeDir {
				return wire.ErrNotDir
			}
		}
		if err != nil {
			return s.status("LOOKUP", err)
		}
		return s.lookupFound(&rq, res, buf, h, &a)
	}
	dir, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return s.status("LOOKUP", err)
	}
	res.DirAttr = rq.attrOp(&dir)
	if dir.Type != vfs.TypeDir {
		return wire.ErrNotDir
	}
	if len(args.Name) > wire.MaxName {
		return wire.ErrNameTooLong
	}
	// Search permission is the backend's to check, as the caller.
	h, a, err := rq.fs.Lookup(rq.cred, rq.h, args.Name)
	if err != nil {
		return s.status("LOOKUP", err)
	}
	return s.lookupFound(&rq, res, buf, h, &a)
}

// lookupFound fills a successful LOOKUP's object handle and attributes.
func (s *Server) lookupFound(rq *req, res *wire.LookupRes, buf *fhBuf, h vfs.Handle, a *vfs.Attr) wire.Status {
	if res.FH = makeHandle(buf, rq.ex.FSID, h); res.FH == nil {
		return wire.ErrServerFault
	}
	res.ObjAttr = rq.attrOp(a)
	return wire.OK
}

package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// readlink is READLINK, RFC 1813 section 3.3.5. The target goes inline in
// the reply head (RFC 8267 allows direct placement; the Linux client
// offers a Reply chunk instead).
func (s *Server) readlink(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.ReadlinkArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.ReadlinkRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		res.Status = s.doReadlink(&rq, &res)
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doReadlink(rq *req, res *wire.ReadlinkRes) wire.Status {
	a, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return s.status("READLINK", err)
	}
	res.Attr = rq.attrOp(&a)
	if a.Type != vfs.TypeLnk {
		return wire.ErrInval
	}
	target, err := rq.fs.ReadLink(rq.h)
	if err != nil {
		return s.status("READLINK", err)
	}
	if len(target) > wire.MaxPath {
		return wire.ErrNameTooLong
	}
	res.Target = target
	return wire.OK
}

package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// getattr is GETATTR, RFC 1813 section 3.3.1. No permission is needed.
func (s *Server) getattr(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.GetattrArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.GetattrRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		a, err := rq.fs.GetAttr(rq.h)
		if res.Status = s.status("GETATTR", err); res.Status == wire.OK {
			toFattr(rq.ex.FSID, &a, &res.Attr)
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

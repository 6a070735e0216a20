package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// access is ACCESS, RFC 1813 section 3.3.4: the bits asked for that
// the caller's identity has, from the mode bits (checkAccess).
func (s *Server) access(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.AccessArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.AccessRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		a, err := rq.fs.GetAttr(rq.h)
		if res.Status = s.status("ACCESS", err); res.Status == wire.OK {
			res.Attr = rq.attrOp(&a)
			res.Access = checkAccess(&rq.cred, &a, rq.ro, args.Access&wire.AccessAll)
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// linkMax is PATHCONF's linkmax (ext4's limit).
const linkMax = 65000

// pathconf is PATHCONF, RFC 1813 section 3.3.20: POSIX names up to 255
// bytes, not truncated, chown restricted, case-sensitive and
// case-preserving.
func (s *Server) pathconf(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.PathconfArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.PathconfRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		a, err := rq.fs.GetAttr(rq.h)
		if res.Status = s.status("PATHCONF", err); res.Status == wire.OK {
			res.Attr = rq.attrOp(&a)
			res.LinkMax = linkMax
			res.NameMax = wire.MaxName
			res.NoTrunc = true
			res.ChownRestricted = true
			res.CaseInsensitive = false
			res.CasePreserving = true
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// rmdir is RMDIR, RFC 1813 section 3.3.13.
func (s *Server) rmdir(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.RmdirArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.RmdirRes
	res.Status = s.doUnlink(call, "RMDIR", &args, &res.Wcc, true)
	reply.Head = res.Append(reply.Head)
	return nil
}

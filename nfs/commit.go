package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// commit is COMMIT, RFC 1813 section 3.3.21: the whole file goes to
// stable storage (offset and count are advisory; fsync, data and
// metadata) and the reply carries the write verifier. On an async export
// COMMIT answers without a sync, as knfsd does.
func (s *Server) commit(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.CommitArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.CommitRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		res.Status = s.doCommit(&rq, &res)
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doCommit(rq *req, res *wire.CommitRes) wire.Status {
	if st := s.openWrite(rq, "COMMIT", &res.Wcc); st != wire.OK {
		return st
	}
	if !rq.ex.Async {
		if err := rq.fs.Commit(rq.h); err != nil {
			res.Wcc.After = rq.postOp(rq.h)
			return s.status("COMMIT", err)
		}
	}
	res.Wcc.After = rq.postOp(rq.h)
	res.Verf = s.verf
	return wire.OK
}

package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// fsstat is FSSTAT, RFC 1813 section 3.3.18, from the backend's FSStat.
// invarsec is 0: the numbers may change at any time.
func (s *Server) fsstat(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.FsstatArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.FsstatRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		a, err := rq.fs.GetAttr(rq.h)
		if res.Status = s.status("FSSTAT", err); res.Status == wire.OK {
			res.Attr = rq.attrOp(&a)
			st, err := rq.fs.FSStat()
			if res.Status = s.status("FSSTAT", err); res.Status == wire.OK {
				res.TBytes, res.FBytes, res.ABytes = st.TotalBytes, st.FreeBytes, st.AvailBytes
				res.TFiles, res.FFiles, res.AFiles = st.TotalFiles, st.FreeFiles, st.AvailFiles
			}
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

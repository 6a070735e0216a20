package nfs

import (
	"context"
	"math"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// spliceMin is the smallest READ that is spliced rather than copied: below
// it the copy costs less than the pipe round trip and the separate send
// (copied replies share one writev with their neighbours).
const spliceMin = 64 << 10

// read is READ, RFC 1813 section 3.3.6. On a transport that can splice
// (TCP) and a backend with kernel files, the file's pages go from the page
// cache to the socket without passing through user memory (Reply.
// SpliceFile). Otherwise the data is read straight into a buffer from
// reply.AllocPayload (on RDMA, registered memory that goes to the client's
// Write chunk) and attached with SetPayload; it is never copied in user
// space. count is clamped to wire.MaxData (FSINFO rtmax).
func (s *Server) read(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.ReadArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.ReadRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		res.Status = s.doRead(&rq, &args, &res, reply)
	}
	reply.Head = res.AppendHead(reply.Head)
	if res.Status == wire.OK {
		reply.SetPayload(res.Data)
		rq.ex.Stats.countRead(call.Conn.Transport, res.Count)
	}
	return nil
}

func (s *Server) doRead(rq *req, args *wire.ReadArgs, res *wire.ReadRes, reply *oncrpc.Reply) wire.Status {
	if ar, ok := rq.fs.(vfs.AttrReader); ok && args.Count > 0 && args.Offset <= math.MaxInt64 {
		return s.readWithAttr(ar, rq, args, res, reply)
	}
	a, st := s.readableAttr(rq, res)
	if st != wire.OK {
		return st
	}
	count := min(args.Count, wire.MaxData)
	if args.Offset > math.MaxInt64 || count == 0 {
		res.EOF = args.Offset >= a.Size
		res.Data = reply.AllocPayload(0)
		return wire.OK
	}
	if count >= spliceMin && reply.CanSplice() {
		if fr, ok := rq.fs.(vfs.FDReader); ok {
			n, eof, err := fr.ReadFD(rq.h, int64(args.Offset), int(count), reply.SpliceFile)
			if err == nil {
				res.Count = uint32(n)
				res.EOF = eof
				return wire.OK
			}
			// Nothing is attached after a failed splice; the copying
			// read below gives the error its proper status.
		}
	}
	buf := reply.AllocPayload(int(count))
	n, eof, err := rq.fs.ReadAt(rq.h, buf, int64(args.Offset))
	if err != nil {
		return s.status("READ", err)
	}
	res.Count = uint32(n)
	res.EOF = eof
	res.Data = buf[:n]
	return wire.OK
}

// readableAttr gets the file's attributes (into res too) and the status
// READ answers before any data: the backend's error, not a regular file,
// or no read permission for the caller.
func (s *Server) readableAttr(rq *req, res *wire.ReadRes) (vfs.Attr, wire.Status) {
	a, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return a, s.status("READ", err)
	}
	res.Attr = rq.attrOp(&a)
	if st := regularFile(a.Type); st != wire.OK {
		return a, st
	}
	return a, permitRead(&rq.cred, &a)
}

// readWithAttr is doRead on a backend whose read returns the attributes
// (vfs.AttrReader): one backend call instead of GetAttr and ReadAt. The
// permission check comes after the read, on the attributes it returned;
// a refused READ's data is never attached. A failed read asks GetAttr
// for the attributes and the status doRead would have given.
func (s *Server) readWithAttr(ar vfs.AttrReader, rq *req, args *wire.ReadArgs, res *wire.ReadRes, reply *oncrpc.Reply) wire.Status {
	buf := reply.AllocPayload(int(min(args.Count, wire.MaxData)))
	n, eof, a, err := ar.ReadAtAttr(rq.h, buf, int64(args.Offset))
	if err != nil {
		if _, st := s.readableAttr(rq, res); st != wire.OK {
			return st
		}
		return s.status("READ", err)
	}
	res.Attr = rq.attrOp(&a)
	if st := permitRead(&rq.cred, &a); st != wire.OK {
		return st
	}
	res.Count = uint32(n)
	res.EOF = eof
	res.Data = buf[:n]
	return wire.OK
}

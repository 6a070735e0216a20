package nfs

import (
	"context"
	"errors"
	"math"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Transfer sizes FSINFO offers: they decide the Linux client's rsize and
// wsize. dtpref is knfsd's: its maximum block size, the same as rtmax
// (fs/nfsd/nfs3proc.c nfsd3_proc_fsinfo). The Linux client (fs/nfs/client.c
// nfs_server_set_fsinfo, 5.18 and later) takes as its largest READDIR and
// READDIRPLUS count dtpref rounded down to a power of two, at most 1 MiB
// and at most rsize, and fs/nfs/dir.c starts a listing at one page and
// doubles the count each time a reply filled its buffer. A dtpref of
// 64 KiB held it there (some 190 entries of 200-byte names a
// READDIRPLUS), so it listed big directories in many more calls than
// against knfsd, interleaved with `rm -rf`'s REMOVEs.
const (
	ioMax     = wire.MaxData
	ioMult    = 4096
	dirPref   = maxDirReply
	maxFileSz = math.MaxInt64
)

// linkProbeName is the name the FSINFO probe would link the root as.
const linkProbeName = ".gonfsrdma-link-probe"

// fsinfo is FSINFO, RFC 1813 section 3.3.19.
func (s *Server) fsinfo(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.FsinfoArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.FsinfoRes
	var rq req
	if res.Status = s.resolve(call, args.FH, &rq); res.Status == wire.OK {
		a, err := rq.fs.GetAttr(rq.h)
		if res.Status = s.status("FSINFO", err); res.Status == wire.OK {
			res.Attr = rq.attrOp(&a)
			res.RTMax, res.RTPref, res.RTMult = ioMax, ioMax, ioMult
			res.WTMax, res.WTPref, res.WTMult = ioMax, ioMax, ioMult
			res.DTPref = dirPref
			res.MaxFileSize = maxFileSz
			res.TimeDelta = wire.Time{Sec: 0, Nsec: 1}
			res.Properties = wire.FSFSymlink | wire.FSFHomogeneous | wire.FSFCanSetTime
			if supportsLinks(rq.fs, rq.ex.FS.Root()) {
				res.Properties |= wire.FSFLink
			}
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

func supportsLinks(fs vfs.FS, root vfs.Handle) bool {
	if ls, ok := fs.(vfs.LinkSupporter); ok {
		return ls.SupportsLinks()
	}
	return !errors.Is(fs.Link(vfs.Cred{}, root, root, linkProbeName), vfs.ErrNotSupported)
}

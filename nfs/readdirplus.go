package nfs

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// readdirplus is READDIRPLUS, RFC 1813 section 3.3.17. maxcount bounds
// the entries of the READDIRPLUS3resok with its list end and eof, as
// count does READDIR's (dirBudget). dircount is ignored, as knfsd ignores it
// (fs/nfsd/nfs3xdr.c): Linux clients before 5.18 send a dircount of an
// eighth of maxcount (later ones send dircount = maxcount), and keeping to
// it cut a page of 200-byte names to about a fifth of what knfsd sends
// them, five READDIRPLUS round trips for knfsd's one. Cookie
// verifiers are treated as by READDIR. An entry that vanishes between
// listing and lookup goes out without attributes and handle.
func (s *Server) readdirplus(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.ReaddirplusArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.ReaddirplusRes
	var rq req
	if res.Status = s.resolve(call, args.Dir, &rq); res.Status == wire.OK {
		res.Status = s.doReaddirplus(&rq, &args, reply, call.MaxReply(), &res.DirAttr)
		if res.Status == wire.OK {
			return nil
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

func (s *Server) doReaddirplus(rq *req, args *wire.ReaddirplusArgs, reply *oncrpc.Reply, maxReply int, dirAttr *wire.PostOpAttr) wire.Status {
	start := len(reply.Head)
	var b []byte
	var buf fhBuf
	// The entries' handles and attributes need search permission on the
	// directory, which the backend checks once, as the caller (LOOKUP of
	// "."). The per-entry lookups then run as the server: a name lookup
	// checks nothing else, and an identity switch per entry would cost
	// more than the lookup. Without search permission the entries go
	// without handle and attributes, as knfsd sends them.
	var searchErr error
	lookup := func(name string) (vfs.Handle, vfs.Attr, error) { return rq.fs.Lookup(vfs.Cred{}, rq.h, name) }
	var eof bool
	var st wire.Status
	list := func() {
		eof, st = s.listDir(rq, "READDIRPLUS", args.Cookie, args.Verf, args.MaxCount, reply, maxReply, dirAttr, plusEntrySize,
			func(verf uint64) {
				b = appendDirResOKHead(reply.Head, dirAttr, verf)
				_, _, searchErr = rq.fs.Lookup(rq.cred, rq.h, ".")
			},
			func(e *vfs.DirEntry, room int) (int, bool) {
				ep := wire.EntryPlus{FileID: e.FileID, Name: e.Name, Cookie: e.Cookie}
				if searchErr == nil {
					if h, a, err := lookup(e.Name); err == nil {
						if fh := makeHandle(&buf, rq.ex.FSID, h); fh != nil {
							ep.Attr = rq.attrOp(&a)
							ep.FH = wire.PostOpFH{Set: true, FH: fh}
						}
					}
				}
				sz := wire.EntrySize(e.Name) + 4 + 4
				if ep.Attr.Set {
					sz += wire.FattrSize
				}
				if ep.FH.Set {
					sz += 4 + xdr.PaddedLen(len(ep.FH.FH))
				}
				if sz > room {
					return 0, false
				}
				b = ep.Append(b)
				return sz, true
			})
	}
	// A backend that can resolves the directory once for all the
	// entries' lookups (vfs.EntryLooker) rather than once per entry.
	ran := false
	if el, ok := rq.fs.(vfs.EntryLooker); ok {
		_ = el.LookupEntries(rq.h, func(l func(string) (vfs.Handle, vfs.Attr, error)) {
			lookup, ran = l, true
			list()
		})
	}
	if !ran {
		list()
	}
	if st != wire.OK {
		reply.Head = reply.Head[:start]
		return st
	}
	reply.Head = wire.AppendDirListEnd(b, eof)
	return wire.OK
}

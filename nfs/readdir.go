package nfs

import (
	"context"
	"encoding/binary"
	"errors"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Directory listing limits.
const (
	// maxDirReply caps count / maxcount: no READDIR reply is larger.
	maxDirReply = wire.MaxData
	// minEntrySize is the smallest entry3: value_follows, fileid, a
	// one-byte name, cookie.
	minEntrySize = 4 + 8 + 8 + 8
	// maxDirBatch caps the entries asked of the backend at once.
	maxDirBatch = 4096
	// dirResFixed is the part of READDIR3resok / READDIRPLUS3resok that
	// is not entries: post_op_attr with attributes, cookieverf, the final
	// value_follows FALSE and eof.
	dirResFixed = 4 + wire.FattrSize + wire.CookieVerfSize + 4 + 4
)

// readdir is READDIR, RFC 1813 section 3.3.16. count bounds the encoded
// READDIR3resok (attributes, verifier, entries, list end, eof). Cookies
// and the cookie verifier come from the backend (vfs.FS.ReadDir), which
// refuses a cookie it cannot honour, or one sent with a verifier other
// than its own, with NFS3ERR_BAD_COOKIE (the Linux client then restarts
// the listing). A verifier of zero with a nonzero cookie is accepted, as
// knfsd accepts any.
func (s *Server) readdir(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.ReaddirArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.ReaddirRes
	var rq req
	if res.Status = s.resolve(call, args.Dir, &rq); res.Status == wire.OK {
		res.Status = s.doReaddir(&rq, &args, reply, call.Conn, &res.DirAttr)
		if res.Status == wire.OK {
			return nil
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

// dirBudget clamps a client's count to what the server and the transport
// can send.
func dirBudget(count uint32, reply *oncrpc.Reply, conn *oncrpc.ConnInfo) int {
	n := int(min(count, maxDirReply))
	if conn != nil && conn.Caps.MaxReply > 0 {
		n = min(n, conn.Caps.MaxReply-len(reply.Head)-4)
	}
	return n
}

// openDir checks that rq names a readable directory and fills attr.
func (s *Server) openDir(rq *req, proc string, attr *wire.PostOpAttr) (wire.Status, bool) {
	a, err := rq.fs.GetAttr(rq.h)
	if err != nil {
		return s.status(proc, err), false
	}
	*attr = rq.attrOp(&a)
	if a.Type != vfs.TypeDir {
		return wire.ErrNotDir, false
	}
	return permit(&rq.cred, &a, mayRead, false), true
}

func (s *Server) doReaddir(rq *req, args *wire.ReaddirArgs, reply *oncrpc.Reply, conn *oncrpc.ConnInfo, dirAttr *wire.PostOpAttr) wire.Status {
	entries, verf, eof, budget, st := s.listDir(rq, "READDIR", args.Cookie, args.Verf, args.Count, reply, conn, dirAttr)
	if st != wire.OK {
		return st
	}
	start := len(reply.Head)
	b := appendDirResOKHead(reply.Head, dirAttr, verf)
	used := 0
	for i := range entries {
		e := &entries[i]
		sz := wire.EntrySize(e.Name)
		if used+sz > budget {
			if i == 0 {
				reply.Head = b[:start]
				return wire.ErrTooSmall
			}
			eof = false
			break
		}
		used += sz
		b = wire.AppendEntry(b, e.FileID, e.Name, e.Cookie)
	}
	reply.Head = wire.AppendDirListEnd(b, eof)
	return wire.OK
}

// listDir is the start READDIR and READDIRPLUS share: it checks that rq
// names a readable directory (filling dirAttr), turns the client's count
// into the budget for entries and lists from cookie as many entries as
// could fit it.
func (s *Server) listDir(rq *req, proc string, cookie uint64, cverf [wire.CookieVerfSize]byte, count uint32, reply *oncrpc.Reply, conn *oncrpc.ConnInfo, dirAttr *wire.PostOpAttr) (entries []vfs.DirEntry, verf uint64, eof bool, budget int, st wire.Status) {
	if st, _ := s.openDir(rq, proc, dirAttr); st != wire.OK {
		return nil, 0, false, 0, st
	}
	budget = dirBudget(count, reply, conn) - dirResFixed
	if budget < minEntrySize {
		return nil, 0, false, 0, wire.ErrTooSmall
	}
	entries, verf, eof, err := rq.fs.ReadDir(rq.h, cookie, binary.BigEndian.Uint64(cverf[:]), min(budget/minEntrySize+1, maxDirBatch))
	if errors.Is(err, vfs.ErrBadCookie) {
		s.log.Debug("stale readdir cookie", zap.String("proc", proc), zap.Uint64("cookie", cookie), zap.Binary("verf", cverf[:]))
		return nil, 0, false, 0, wire.ErrBadCookie
	}
	if err != nil {
		return nil, 0, false, 0, s.status(proc, err)
	}
	return entries, verf, eof, budget, wire.OK
}

// appendDirResOKHead appends the head of a READDIR3resok or
// READDIRPLUS3resok: status OK, the directory's attributes and the
// cookie verifier (big-endian).
func appendDirResOKHead(b []byte, dirAttr *wire.PostOpAttr, verf uint64) []byte {
	b = xdr.AppendUint32(b, uint32(wire.OK))
	b = dirAttr.Append(b)
	return xdr.AppendUint64(b, verf)
}

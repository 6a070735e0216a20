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
	// maxDirReply caps count / maxcount: no READDIR reply is larger. It
	// is knfsd's cap, its maximum block size (fs/nfsd/nfs3proc.c
	// nfsd3_init_dirlist_pages clamps count to svc_max_payload), and the
	// FSINFO dtpref: the Linux client asks for at most that.
	maxDirReply = wire.MaxData
	// minEntrySize is the smallest entry3: value_follows, fileid, a
	// one-byte name, cookie.
	minEntrySize = 4 + 8 + 8 + 8
	// maxDirBatch caps the entries asked of the backend in one ReadDir
	// call, and so the entries (names included) a call holds at once.
	// It does not cap a page: a reply that has room for more goes on
	// with further calls from the last cookie (1 MiB holds some 32,000
	// short READDIR entries, 6,000 READDIRPLUS ones; knfsd fills the
	// page whatever the count of entries).
	maxDirBatch = 4096
	// plusEntrySize is the smallest READDIRPLUS entry with attributes
	// and a handle (of one byte), what a batch of READDIRPLUS is sized
	// by: the backend stats each entry it lists (and READDIRPLUS looks
	// each up), so a batch sized by minEntrySize fetched some five times
	// the entries a page holds and threw most away. An entry sent
	// without them (a directory the caller may not search, or a name
	// gone meanwhile) is smaller, and the page then takes one more batch.
	plusEntrySize = minEntrySize + 4 + wire.FattrSize + 4 + 4 + 4
	// dirResHead is the part of READDIR3resok / READDIRPLUS3resok before
	// the entries: post_op_attr with attributes and cookieverf.
	dirResHead = 4 + wire.FattrSize + wire.CookieVerfSize
	// dirListEnd is the part after them: the final value_follows FALSE
	// and eof.
	dirListEnd = 4 + 4
)

// readdir is READDIR, RFC 1813 section 3.3.16. count bounds the entries
// of the READDIR3resok with its list end and eof, as knfsd counts it and
// as the Linux client receives it (dirBudget). Cookies and the cookie
// verifier come from the backend (vfs.FS.ReadDir), which refuses a cookie
// it cannot honour, or one sent with a verifier other than its own, with
// NFS3ERR_BAD_COOKIE (the Linux client then restarts the listing). A
// verifier of zero with a nonzero cookie is accepted, as knfsd accepts
// any.
func (s *Server) readdir(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	var r xdr.Reader
	var args wire.ReaddirArgs
	if args.Decode(call.ArgsReader(&r)) != nil {
		return oncrpc.ErrGarbageArgs
	}
	var res wire.ReaddirRes
	var rq req
	if res.Status = s.resolve(call, args.Dir, &rq); res.Status == wire.OK {
		res.Status = s.doReaddir(&rq, &args, reply, call.MaxReply(), &res.DirAttr)
		if res.Status == wire.OK {
			return nil
		}
	}
	reply.Head = res.Append(reply.Head)
	return nil
}

// dirBudget is the room a page of count bytes has for its entries. count
// is read as knfsd reads it (fs/nfsd/nfs3proc.c nfsd3_init_dirlist_pages:
// the entries, the list end and eof get count bytes, clamped to its
// maximum payload; the status, directory attributes and verifier go
// before them, outside count), which is how the Linux client receives
// the reply: the header into its head buffer (NFS3_readdirres_sz) and
// count bytes of pages for the rest (fs/nfs/nfs3xdr.c
// nfs3_xdr_enc_readdir3args / readdirplus3args, prepare_reply_buffer).
// RFC 1813 sections 3.3.16 and 3.3.17 count the header in too; a page cut
// that way leaves 100 bytes of the client's buffer unused, a fewer entry
// in some replies than knfsd sends. The transport's limit (maxReply,
// what an RDMA Reply chunk holds) bounds the whole reply.
func dirBudget(count uint32, reply *oncrpc.Reply, maxReply int) int {
	n := int(min(count, maxDirReply)) - dirListEnd
	if maxReply > 0 {
		n = min(n, maxReply-len(reply.Head)-4-dirResHead-dirListEnd)
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

func (s *Server) doReaddir(rq *req, args *wire.ReaddirArgs, reply *oncrpc.Reply, maxReply int, dirAttr *wire.PostOpAttr) wire.Status {
	start := len(reply.Head)
	var b []byte
	eof, st := s.listDir(rq, "READDIR", args.Cookie, args.Verf, args.Count, reply, maxReply, dirAttr, minEntrySize,
		func(verf uint64) { b = appendDirResOKHead(reply.Head, dirAttr, verf) },
		func(e *vfs.DirEntry, room int) (int, bool) {
			sz := wire.EntrySize(e.Name)
			if sz > room {
				return 0, false
			}
			b = wire.AppendEntry(b, e.FileID, e.Name, e.Cookie)
			return sz, true
		})
	if st != wire.OK {
		reply.Head = reply.Head[:start]
		return st
	}
	reply.Head = wire.AppendDirListEnd(b, eof)
	return wire.OK
}

// listDir is what READDIR and READDIRPLUS share: it checks that rq names
// a readable directory (filling dirAttr), turns the client's count into
// the budget for entries, calls begin with the cookie verifier of the
// page once the backend gave it, and hands the entries from cookie on to
// add, with the budget still free, until add refuses one (the page is
// full) or the directory ends (eof). add returns the bytes the entry
// took. Entries come from the backend in batches of at most maxDirBatch,
// each resumed from the last cookie added, so a page of any size holds
// at most one batch at a time. A refused first entry is
// NFS3ERR_TOOSMALL. entrySize is the size by which the budget left is
// turned into the entries a batch asks for (minEntrySize for READDIR,
// plusEntrySize for READDIRPLUS).
func (s *Server) listDir(rq *req, proc string, cookie uint64, cverf [wire.CookieVerfSize]byte, count uint32, reply *oncrpc.Reply, maxReply int, dirAttr *wire.PostOpAttr,
	entrySize int, begin func(verf uint64), add func(e *vfs.DirEntry, room int) (int, bool)) (eof bool, st wire.Status) {
	if st, _ := s.openDir(rq, proc, dirAttr); st != wire.OK {
		return false, st
	}
	budget := dirBudget(count, reply, maxReply)
	if budget < minEntrySize {
		return false, wire.ErrTooSmall
	}
	askVerf := binary.BigEndian.Uint64(cverf[:])
	var verf uint64
	used, added := 0, 0
	for batch := 0; ; batch++ {
		// one entry more than could fit, so that a full page still
		// learns whether the directory ends there
		entries, v, end, err := rq.fs.ReadDir(rq.h, cookie, askVerf, min((budget-used)/entrySize+1, maxDirBatch))
		if batch > 0 && (err != nil || v != verf) {
			// the page ends with the entries it has: the client
			// resumes from the last one, and the backend answers
			// that call as it can (BAD_COOKIE, a restart)
			s.log.Debug("directory listing ends its page early", zap.String("proc", proc), zap.Uint64("cookie", cookie), zap.Error(err))
			return false, wire.OK
		}
		if errors.Is(err, vfs.ErrBadCookie) {
			s.log.Debug("stale readdir cookie", zap.String("proc", proc), zap.Uint64("cookie", cookie), zap.Binary("verf", cverf[:]))
			return false, wire.ErrBadCookie
		}
		if err != nil {
			return false, s.status(proc, err)
		}
		if batch == 0 {
			verf, askVerf = v, v
			begin(verf)
		}
		for i := range entries {
			n, ok := add(&entries[i], budget-used)
			if !ok {
				if added == 0 {
					return false, wire.ErrTooSmall
				}
				return false, wire.OK
			}
			used += n
			added++
			cookie = entries[i].Cookie
		}
		if end || len(entries) == 0 {
			return end, wire.OK
		}
	}
}

// appendDirResOKHead appends the head of a READDIR3resok or
// READDIRPLUS3resok: status OK, the directory's attributes and the
// cookie verifier (big-endian).
func appendDirResOKHead(b []byte, dirAttr *wire.PostOpAttr, verf uint64) []byte {
	b = xdr.AppendUint32(b, uint32(wire.OK))
	b = dirAttr.Append(b)
	return xdr.AppendUint64(b, verf)
}

package conformance

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	rdmaproto "github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// RPC-over-RDMA version 1 (RFC 8166) on the wire: hand-built transport
// headers sent with rdmaclient.Client.RoundTripRaw, replies decoded with
// rdmaproto.Header.Decode and checked field by field.
//
// Ownership: each test opens its own client connection and registered
// buffer and closes both (the buffer after the connection) before it
// returns.

// rdmaPeer is a raw RPC-over-RDMA connection with one registered buffer
// the server may RDMA Read and Write.
type rdmaPeer struct {
	e   *Env
	c   *rdmaclient.Client
	buf *rdmaclient.Buffer
}

const rdmaBufSize = 256 << 10

// rdmaDial opens a client connection with cfg (zero fields: defaults) and
// registers a buffer.
func (e *Env) rdmaDial(cfg rdmaclient.Config) (*rdmaPeer, error) {
	if cfg.Cred.Flavor == 0 && cfg.Cred.Body == nil {
		cfg.Cred = e.Cred
	}
	c, err := e.Cfg.DialRDMA(e.Ctx, e.NFSAddr, cfg)
	if err != nil {
		return nil, ok(err, "connecting over RPC-over-RDMA")
	}
	b, err := c.RegisterBuffer(rdmaBufSize)
	if err != nil {
		c.Close()
		return nil, ok(err, "registering a buffer")
	}
	return &rdmaPeer{e: e, c: c, buf: b}, nil
}

func (p *rdmaPeer) close() {
	p.c.Close()
	p.buf.Close()
}

// hdr builds an rdma_msg header with credits 32 (RFC 8166 section 4.2.4).
func rdmaHdr(xid uint32, proc rdmaproto.Proc, rl []rdmaproto.ReadSegment, wl []rdmaproto.Chunk, rc rdmaproto.Chunk) []byte {
	b := rdmaproto.AppendFixed(nil, xid, 32, proc)
	b = rdmaproto.AppendReadList(b, rl)
	b = rdmaproto.AppendWriteList(b, wl)
	return rdmaproto.AppendReplyChunk(b, rc)
}

// words appends raw XDR words.
func words(b []byte, ws ...uint32) []byte {
	for _, w := range ws {
		b = xdr.AppendUint32(b, w)
	}
	return b
}

// roundTrip sends hdr+msg and decodes the reply's transport header; the
// fixed words are checked (same XID, version 1, credits >= 1: RFC 8166
// sections 4.1, 3.3.1).
func (p *rdmaPeer) roundTrip(hdr, msg []byte) (*rdmaproto.Header, []byte, error) {
	xid := uint32(hdr[0])<<24 | uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3])
	rh, rm, err := p.c.RoundTripRaw(p.e.Ctx, hdr, msg)
	if err != nil {
		return nil, nil, ok(err, "RPC-over-RDMA round trip")
	}
	h := new(rdmaproto.Header)
	if err := h.Decode(xdr.NewReader(rh), rdmaproto.DefaultLimits); err != nil {
		return nil, nil, fmt.Errorf("reply transport header does not decode: %v (% x)", err, rh[:min(len(rh), 64)])
	}
	if h.XID != xid {
		return nil, nil, fmt.Errorf("reply transport XID %#x, call %#x (RFC 8166 4.2.4)", h.XID, xid)
	}
	if h.Vers != 1 {
		return nil, nil, fmt.Errorf("reply rdma_vers %d, want 1 (RFC 8166 4.2.4)", h.Vers)
	}
	if h.Credits < 1 {
		return nil, nil, fmt.Errorf("reply to %v grants %d credits, want >= 1 (RFC 8166 3.3.1)", xid, h.Credits)
	}
	return h, rm, nil
}

// wantRDMAError checks an RDMA_ERROR reply with code (RFC 8166 4.5).
func wantRDMAError(h *rdmaproto.Header, code rdmaproto.ErrCode, what string) error {
	if h.Proc != rdmaproto.ProcError {
		return fmt.Errorf("%s: reply %v, want RDMA_ERROR %v (RFC 8166 4.5)", what, h.Proc, code)
	}
	if h.Err != code {
		return fmt.Errorf("%s: RDMA_ERROR %v, want %v (RFC 8166 4.5)", what, h.Err, code)
	}
	if code == rdmaproto.ErrVers && (h.VersLow != 1 || h.VersHigh != 1) {
		return fmt.Errorf("%s: ERR_VERS range %d-%d, want 1-1 (RFC 8166 4.5)", what, h.VersLow, h.VersHigh)
	}
	return nil
}

// wantMsgEmpty checks an inline RDMA_MSG reply with all lists empty.
func wantMsgEmpty(h *rdmaproto.Header, what string) error {
	if h.Proc != rdmaproto.ProcMsg {
		return fmt.Errorf("%s: reply %v, want RDMA_MSG (RFC 8166 4.2.4)", what, h.Proc)
	}
	if len(h.ReadList) != 0 || len(h.WriteList) != 0 || h.HasReply {
		return fmt.Errorf("%s: RDMA_MSG reply with %d read segments, %d write chunks, reply chunk %v; want all empty (RFC 8166 3.5)",
			what, len(h.ReadList), len(h.WriteList), h.HasReply)
	}
	return nil
}

// alive checks that the connection still answers a NULL.
func (p *rdmaPeer) alive(after string) error {
	ctx, cancel := context.WithTimeout(p.e.Ctx, 5*time.Second)
	defer cancel()
	_, err := p.c.Call(ctx, &oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: wire.ProcNull})
	if err != nil {
		return Warnf("NULL on the same connection after %s: %v (the server dropped the connection)", after, err)
	}
	return nil
}

// rpcResults checks an RPC reply message for xid and returns its results.
// inlineResults checks an RDMA_MSG reply with empty chunk lists and
// decodes its RPC results (for call xid) into res.
func inlineResults(h *rdmaproto.Header, msg []byte, xid uint32, what string, res interface{ Decode(*xdr.Reader) error }) error {
	if err := wantMsgEmpty(h, what); err != nil {
		return err
	}
	b, err := rpcResults(msg, xid)
	if err != nil {
		return err
	}
	return decodeInto(b, res)
}

func rpcResults(msg []byte, xid uint32) ([]byte, error) {
	rh, _, err := oncrpc.DecodeReplyHeader(msg)
	if err != nil {
		return nil, ok(err, "decoding the RPC reply")
	}
	if rh.XID != xid {
		return nil, fmt.Errorf("RPC reply XID %#x, call %#x", rh.XID, xid)
	}
	return oncrpc.ParseReply(msg)
}

func (p *rdmaPeer) nullMsg(xid uint32) []byte {
	return callMsg(xid, wire.Program, wire.Version, wire.ProcNull, oncrpc.OpaqueAuth{}, nil)
}

func (p *rdmaPeer) nfsMsg(xid, proc uint32, args []byte) []byte {
	return callMsg(xid, wire.Program, wire.Version, proc, p.e.Cred, args)
}

func testRDMANull(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	xid := p.c.NextXID()
	h, msg, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nullMsg(xid))
	if err != nil {
		return err
	}
	if err := wantMsgEmpty(h, "NULL"); err != nil {
		return err
	}
	res, err := rpcResults(msg, xid)
	if err != nil {
		return err
	}
	if len(res) != 0 {
		return fmt.Errorf("NULL returned %d bytes of results", len(res))
	}
	return nil
}

func testRDMAErrVers(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	xid := p.c.NextXID()
	hdr := words(nil, xid, 2, 32, uint32(rdmaproto.ProcMsg), 0, 0, 0)
	rh, _, err := p.c.RoundTripRaw(p.e.Ctx, hdr, p.nullMsg(xid))
	if err != nil {
		return ok(err, "RPC-over-RDMA round trip")
	}
	// Decoded by hand: the reply's rdma_vers is what this test is about,
	// and a strict decoder refuses anything but 1.
	if len(rh) < 28 {
		return fmt.Errorf("ERR_VERS reply of %d bytes (% x), want 7 words (RFC 8166 4.5)", len(rh), rh)
	}
	w := func(i int) uint32 { return binary.BigEndian.Uint32(rh[4*i:]) }
	switch {
	case w(0) != xid:
		return fmt.Errorf("reply transport XID %#x, call %#x (RFC 8166 4.2.4)", w(0), xid)
	case w(2) < 1:
		return fmt.Errorf("ERR_VERS reply grants %d credits, want >= 1 (RFC 8166 3.3.1)", w(2))
	case w(3) != uint32(rdmaproto.ProcError) || w(4) != uint32(rdmaproto.ErrVers):
		return fmt.Errorf("rdma_vers 2: proc %d err %d, want RDMA_ERROR ERR_VERS (RFC 8166 4.5)", w(3), w(4))
	case w(5) != 1 || w(6) != 1:
		return fmt.Errorf("ERR_VERS range %d-%d, want 1-1 (RFC 8166 4.5)", w(5), w(6))
	case w(1) != 1:
		if err := p.alive("ERR_VERS"); err != nil {
			return err
		}
		return Warnf("the ERR_VERS reply's rdma_vers is %d (the caller's), not 1; knfsd 6.1 echoes it too", w(1))
	}
	return p.alive("ERR_VERS")
}

// errChunkForm is a malformed call header that must be answered ERR_CHUNK.
type errChunkForm struct {
	what string
	// build returns the header and inline message for xid; the peer's
	// buffer is there to point segments at.
	build func(p *rdmaPeer, xid uint32) (hdr, msg []byte)
}

// writeHead is a WRITE call up to the data's length word, for Read-chunk
// position tests.
func (p *rdmaPeer) writeHead(xid uint32, fh []byte, n int) []byte {
	a := wire.WriteArgs{FH: fh, Count: uint32(n), Stable: wire.FileSync, Data: make([]byte, n)}
	return p.nfsMsg(xid, wire.ProcWrite, a.AppendHead(nil))
}

var errChunkForms = map[string]errChunkForm{
	"msgp": {"RDMA_MSGP (RFC 8166 4.5: deprecated, ERR_CHUNK)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return words(nil, xid, 1, 32, uint32(rdmaproto.ProcMsgP), 0, 0, 0, 0, 0), p.nullMsg(xid)
	}},
	"proc": {"rdma_proc 7 (RFC 8166 4.2.4, 4.5)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return words(nil, xid, 1, 32, 7, 0, 0, 0), p.nullMsg(xid)
	}},
	"discrim": {"a Read list entry word of 2 (RFC 8166 4.2.2.1: an optional item is 0 or 1)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return words(nil, xid, 1, 32, uint32(rdmaproto.ProcMsg), 2, 0, 0, 0), p.nullMsg(xid)
	}},
	"wdiscrim": {"a Write list entry word of 7 (RFC 8166 4.2.2.2)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return words(nil, xid, 1, 32, uint32(rdmaproto.ProcMsg), 0, 7, 0), p.nullMsg(xid)
	}},
	"segcount": {"a Write chunk claiming 20 segments in a header holding 2 (RFC 8166 4.2.2.2)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		b := words(nil, xid, 1, 32, uint32(rdmaproto.ProcMsg), 0, 1, 20)
		b = rdmaproto.AppendSegment(b, p.buf.Segment(0, 512))
		b = rdmaproto.AppendSegment(b, p.buf.Segment(512, 512))
		return b, nil
	}},
	"replycount": {"a Reply chunk claiming 1000 segments in a short header (RFC 8166 4.2.2.2)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		b := words(nil, xid, 1, 32, uint32(rdmaproto.ProcMsg), 0, 0, 1, 1000)
		return rdmaproto.AppendSegment(b, p.buf.Segment(0, 4096)), nil
	}},
	"truncated": {"a header that ends after the fixed words (RFC 8166 4.2.4)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return rdmaproto.AppendFixed(nil, xid, 32, rdmaproto.ProcMsg), nil
	}},
	"unaligned": {"a Read chunk position not a multiple of 4 (RFC 8166 3.4.5)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		msg := p.writeHead(xid, p.e.Dir, 100)
		rl := []rdmaproto.ReadSegment{{Position: uint32(len(msg)) - 2, Segment: p.buf.Segment(0, 100)}}
		return rdmaHdr(xid, rdmaproto.ProcMsg, rl, nil, nil), msg
	}},
	"pastend": {"a Read chunk position past the inline message (RFC 8166 3.4.5)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		msg := p.writeHead(xid, p.e.Dir, 100)
		rl := []rdmaproto.ReadSegment{{Position: uint32(len(msg)) + 64, Segment: p.buf.Segment(0, 100)}}
		return rdmaHdr(xid, rdmaproto.ProcMsg, rl, nil, nil), msg
	}},
	"poszero": {"a position-zero Read chunk in RDMA_MSG (RFC 8166 3.5.3)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		msg := p.nullMsg(xid)
		rl := []rdmaproto.ReadSegment{{Position: 0, Segment: p.buf.Segment(0, 100)}}
		return rdmaHdr(xid, rdmaproto.ProcMsg, rl, nil, nil), msg
	}},
	"nomsgbare": {"RDMA_NOMSG without a position-zero Read chunk (RFC 8166 3.5.3, 4.2.4)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		return rdmaHdr(xid, rdmaproto.ProcNoMsg, nil, nil, nil), nil
	}},
	"order": {"Read chunks out of position order (RFC 8166 3.4.5: ordered by position)", func(p *rdmaPeer, xid uint32) ([]byte, []byte) {
		msg := p.writeHead(xid, p.e.Dir, 8)
		rl := []rdmaproto.ReadSegment{
			{Position: uint32(len(msg)), Segment: p.buf.Segment(0, 8)},
			{Position: 4, Segment: p.buf.Segment(8, 8)},
		}
		return rdmaHdr(xid, rdmaproto.ProcMsg, rl, nil, nil), msg
	}},
}

func testRDMAErrChunk(form string) func(*Env) error {
	return func(e *Env) error {
		f := errChunkForms[form]
		p, err := e.rdmaDial(rdmaclient.Config{})
		if err != nil {
			return err
		}
		defer p.close()
		xid := p.c.NextXID()
		hdr, msg := f.build(p, xid)
		h, _, err := p.roundTrip(hdr, msg)
		if err != nil {
			return err
		}
		if err := wantRDMAError(h, rdmaproto.ErrChunk, f.what); err != nil {
			return err
		}
		return p.alive("ERR_CHUNK")
	}
}

func testRDMADone(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	// A first call learns the server's credit grant: the DONE below holds
	// one credit for good, since it is never answered.
	if err := p.alive("connecting"); err != nil {
		return fmt.Errorf("%v", err)
	}
	xid := p.c.NextXID()
	ctx, cancel := context.WithTimeout(e.Ctx, 500*time.Millisecond)
	defer cancel()
	rh, _, err := p.c.RoundTripRaw(ctx, rdmaproto.AppendFixed(nil, xid, 32, rdmaproto.ProcDone), nil)
	if err == nil {
		var h rdmaproto.Header
		h.Decode(xdr.NewReader(rh), rdmaproto.DefaultLimits)
		return fmt.Errorf("RDMA_DONE was answered (%v): RFC 8166 4.2.4 deprecates it, knfsd drops it", h.Proc)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return ok(err, "after RDMA_DONE")
	}
	if err := p.alive("RDMA_DONE"); err != nil {
		return fmt.Errorf("%v", err)
	}
	return nil
}

func testRDMACredits(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{Credits: 8})
	if err != nil {
		return err
	}
	defer p.close()
	// Every reply, errors included, is checked by roundTrip; ask for
	// several and for an error in a row.
	for i := 0; i < 4; i++ {
		xid := p.c.NextXID()
		if _, _, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nullMsg(xid)); err != nil {
			return err
		}
		xid = p.c.NextXID()
		h, _, err := p.roundTrip(words(nil, xid, 1, 32, 9, 0, 0, 0), p.nullMsg(xid))
		if err != nil {
			return err
		}
		if err := wantRDMAError(h, rdmaproto.ErrChunk, "rdma_proc 9"); err != nil {
			return err
		}
	}
	return nil
}

// bigDir fills dir with n files whose names are 100 bytes long.
func (e *Env) bigDir(n int) ([]byte, map[string]bool, error) {
	d, err := e.mkdir(e.Dir, "big")
	if err != nil {
		return nil, nil, err
	}
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%03d%s", i, strings.Repeat("n", 97))
		if _, err := e.C.Create(e.Ctx, d, name, wire.CreateHow{Mode: wire.Unchecked, Attr: mode(0o644)}); err != nil {
			return nil, nil, ok(err, "CREATE "+name)
		}
		want[name] = true
	}
	return d, want, nil
}

func readdirArgs(fh []byte, count uint32) []byte {
	a := wire.ReaddirArgs{Dir: fh, Count: count}
	return a.Append(nil)
}

// readdirFits accepts the two answers a server may give a READDIR whose
// full reply is larger than the client's inline receive size and no Reply
// chunk: ERR_CHUNK, or a shorter listing that fits (RFC 1813 3.3.16 lets
// the server return fewer entries than count allows). The strict profile
// wants gonfsrdma's answer: the shorter listing, as knfsd, which sizes
// READDIR replies to what the client can receive.
func readdirFits(e *Env, h *rdmaproto.Header, msg []byte, xid uint32, what string) error {
	if h.Proc == rdmaproto.ProcError {
		if err := wantRDMAError(h, rdmaproto.ErrChunk, what); err != nil {
			return err
		}
		return oneOf(e, what, "ERR_CHUNK", "a shorter listing", "ERR_CHUNK")
	}
	var rd wire.ReaddirRes
	if err := inlineResults(h, msg, xid, what, &rd); err != nil {
		return err
	}
	if rd.Status != wire.OK {
		return fmt.Errorf("%s: %v", what, rd.Status)
	}
	return nil
}

// readlinkNoChunk checks that a READLINK whose reply cannot go inline and
// that offers no chunk is ERR_CHUNK.
func (p *rdmaPeer) readlinkNoChunk(fh []byte, what string) error {
	xid := p.c.NextXID()
	h, _, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nfsMsg(xid, wire.ProcReadlink, wire.AppendFH(nil, fh)))
	if err != nil {
		return err
	}
	return wantRDMAError(h, rdmaproto.ErrChunk, what)
}

func testRDMANoReplyChunk(e *Env) error {
	d, _, err := e.bigDir(48)
	if err != nil {
		return err
	}
	l, err := e.symlink(e.Dir, "l", strings.Repeat("x", 4000))
	if err != nil {
		return err
	}
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.readlinkNoChunk(l, "READLINK of a 4000-byte target, no Reply or Write chunk, 4096-byte inline"); err != nil {
		return err
	}
	if err := p.alive("ERR_CHUNK for a reply too large to go inline"); err != nil {
		return err
	}
	xid := p.c.NextXID()
	h, msg, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nfsMsg(xid, wire.ProcReaddir, readdirArgs(d, 32768)))
	if err != nil {
		return err
	}
	return readdirFits(e, h, msg, xid, "READDIR of ~6 KB with no Reply chunk")
}

func testRDMASmallInline(e *Env) error {
	d, _, err := e.bigDir(12)
	if err != nil {
		return err
	}
	l, err := e.symlink(e.Dir, "l", strings.Repeat("x", 2000))
	if err != nil {
		return err
	}
	// The client receives at most 1024 bytes inline: a larger reply must
	// not be Sent (the Receive would fail and the connection die).
	p, err := e.rdmaDial(rdmaclient.Config{InlineRecv: 1024})
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.readlinkNoChunk(l, "READLINK of a 2000-byte target to a client receiving 1024 bytes inline"); err != nil {
		return err
	}
	xid := p.c.NextXID()
	h, msg, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nfsMsg(xid, wire.ProcReaddir, readdirArgs(d, 8192)))
	if err != nil {
		return err
	}
	if err := readdirFits(e, h, msg, xid, "READDIR of ~1.8 KB to a client receiving 1024 bytes inline"); err != nil {
		return err
	}
	xid = p.c.NextXID()
	h, _, err = p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, nil), p.nfsMsg(xid, wire.ProcGetattr, wire.AppendFH(nil, d)))
	if err != nil {
		return ok(err, "GETATTR after the refused READLINK")
	}
	return wantMsgEmpty(h, "GETATTR to a 1024-byte inline client")
}

func testRDMAReplyChunk(e *Env) error {
	d, want, err := e.bigDir(48)
	if err != nil {
		return err
	}
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	xid := p.c.NextXID()
	// A two-segment Reply chunk.
	rc := rdmaproto.Chunk{p.buf.Segment(0, 4096), p.buf.Segment(8192, 60000)}
	h, inline, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, rc), p.nfsMsg(xid, wire.ProcReaddir, readdirArgs(d, 32768)))
	if err != nil {
		return err
	}
	if h.Proc != rdmaproto.ProcNoMsg {
		return fmt.Errorf("large READDIR with a Reply chunk: reply %v, want RDMA_NOMSG (RFC 8166 3.5.3)", h.Proc)
	}
	if len(h.ReadList) != 0 || len(h.WriteList) != 0 || !h.HasReply || len(inline) != 0 {
		return fmt.Errorf("RDMA_NOMSG reply: %d read segments, %d write chunks, reply chunk %v, %d inline bytes; want only the Reply chunk (RFC 8166 4.2.4)",
			len(h.ReadList), len(h.WriteList), h.HasReply, len(inline))
	}
	if len(h.ReplyChunk) != len(rc) {
		return fmt.Errorf("Reply chunk echoed with %d segments, offered %d (RFC 8166 3.4.6)", len(h.ReplyChunk), len(rc))
	}
	var flat []byte
	for i, s := range h.ReplyChunk {
		if s.Handle != rc[i].Handle || s.Offset != rc[i].Offset || s.Length > rc[i].Length {
			return fmt.Errorf("Reply chunk segment %d echoed as %+v, offered %+v (RFC 8166 3.4.6)", i, s, rc[i])
		}
		off := int(s.Offset - rc[0].Offset)
		flat = append(flat, p.buf.Bytes()[off:off+int(s.Length)]...)
	}
	if h.ReplyChunk[0].Length != 4096 {
		return fmt.Errorf("first Reply chunk segment used %d of 4096 bytes before the second (RFC 8166 3.4.6)", h.ReplyChunk[0].Length)
	}
	res, err := rpcResults(flat, xid)
	if err != nil {
		return err
	}
	var rd wire.ReaddirRes
	if err := decodeInto(res, &rd); err != nil {
		return err
	}
	if rd.Status != wire.OK {
		return fmt.Errorf("READDIR through the Reply chunk: %v", rd.Status)
	}
	got := names(rd.Entries)
	if len(got) != len(want) || !rd.EOF {
		return fmt.Errorf("READDIR through the Reply chunk: %d names, eof %v; want %d and eof", len(got), rd.EOF, len(want))
	}
	return nil
}

func testRDMAReplyChunkUnused(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	xid := p.c.NextXID()
	rc := rdmaproto.Chunk{p.buf.Segment(0, 65536)}
	p.fill(4096, 0xee)
	h, msg, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, nil, rc), p.nfsMsg(xid, wire.ProcGetattr, wire.AppendFH(nil, e.Root)))
	if err != nil {
		return err
	}
	var g wire.GetattrRes
	if err := inlineResults(h, msg, xid, "GETATTR offered a Reply chunk", &g); err != nil {
		return err
	}
	if g.Status != wire.OK || g.Attr.Type != wire.TypeDir {
		return fmt.Errorf("GETATTR of the root: %v, type %v", g.Status, g.Attr.Type)
	}
	if !bytes.Equal(p.buf.Bytes()[:4096], bytes.Repeat([]byte{0xee}, 4096)) {
		return fmt.Errorf("the server wrote into a Reply chunk it did not use")
	}
	return nil
}

// readReply splits a READ reply sent with a Write chunk: the results up
// to and including the opaque length word, which must end the message.
func readReplyHead(res []byte) (st wire.Status, count uint32, eof bool, dataLen uint32, rest int, err error) {
	r := xdr.NewReader(res)
	st = wire.Status(r.Uint32())
	var pa wire.PostOpAttr
	pa.Decode(r)
	if st != wire.OK {
		return st, 0, false, 0, r.Len(), r.Err()
	}
	count = r.Uint32()
	eof = r.Bool()
	dataLen = r.Uint32()
	return st, count, eof, dataLen, r.Len(), r.Err()
}

// checkEcho compares the echoed Write list with the offered chunk and the
// lengths expected (RFC 8166 3.4.6, 4.2.2.2).
func checkEcho(h *rdmaproto.Header, offered rdmaproto.Chunk, lens []uint32) error {
	if h.Proc != rdmaproto.ProcMsg || len(h.ReadList) != 0 || h.HasReply {
		return fmt.Errorf("reply %v with %d read segments, reply chunk %v; want RDMA_MSG (RFC 8166 4.2.4)", h.Proc, len(h.ReadList), h.HasReply)
	}
	if len(h.WriteList) != 1 {
		return fmt.Errorf("reply Write list has %d chunks, the call offered 1 (RFC 8166 3.4.6: echoed)", len(h.WriteList))
	}
	c := h.WriteList[0]
	if len(c) != len(offered) {
		return fmt.Errorf("echoed Write chunk has %d segments, offered %d (RFC 8166 3.4.6)", len(c), len(offered))
	}
	for i, s := range c {
		if s.Handle != offered[i].Handle || s.Offset != offered[i].Offset || s.Length != lens[i] {
			return fmt.Errorf("echoed segment %d: handle %#x length %d offset %#x; want handle %#x length %d offset %#x (RFC 8166 3.4.6)",
				i, s.Handle, s.Length, s.Offset, offered[i].Handle, lens[i], offered[i].Offset)
		}
	}
	return nil
}

func (p *rdmaPeer) fill(n int, v byte) {
	b := p.buf.Bytes()[:n]
	for i := range b {
		b[i] = v
	}
}

// rdmaFilePeer makes the file "f" holding data in the test directory and
// dials a new RPC-over-RDMA peer; the caller closes the peer.
func (e *Env) rdmaFilePeer(data []byte) (fh []byte, p *rdmaPeer, err error) {
	if fh, err = e.file(e.Dir, "f", data); err != nil {
		return nil, nil, err
	}
	if p, err = e.rdmaDial(rdmaclient.Config{}); err != nil {
		return nil, nil, err
	}
	return fh, p, nil
}

// readIntoWriteChunk sends a READ of count bytes of fh at off as RDMA_MSG
// offering the Write chunk wc and returns the call's XID with the reply's
// header and RPC message.
func (p *rdmaPeer) readIntoWriteChunk(fh []byte, off uint64, count uint32, wc rdmaproto.Chunk) (xid uint32, h *rdmaproto.Header, msg []byte, err error) {
	xid = p.c.NextXID()
	h, msg, err = p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, nil, []rdmaproto.Chunk{wc}, nil), p.nfsMsg(xid, wire.ProcRead, readArgs(fh, off, count)))
	return xid, h, msg, err
}

func readArgs(fh []byte, off uint64, n uint32) []byte {
	a := wire.ReadArgs{FH: fh, Offset: off, Count: n}
	return a.Append(nil)
}

func testRDMAReadChunk3(e *Env) error {
	data := pattern(10000, 3)
	fh, p, err := e.rdmaFilePeer(data)
	if err != nil {
		return err
	}
	defer p.close()
	p.fill(16384, 0xee)
	wc := rdmaproto.Chunk{p.buf.Segment(0, 4000), p.buf.Segment(4000, 4000), p.buf.Segment(8000, 4000)}
	xid, h, msg, err := p.readIntoWriteChunk(fh, 0, 10000, wc)
	if err != nil {
		return err
	}
	if err := checkEcho(h, wc, []uint32{4000, 4000, 2000}); err != nil {
		return err
	}
	res, err := rpcResults(msg, xid)
	if err != nil {
		return err
	}
	st, count, _, dlen, rest, err := readReplyHead(res)
	if err != nil || st != wire.OK {
		return fmt.Errorf("READ: status %v, %v", st, err)
	}
	if count != 10000 || dlen != 10000 || rest != 0 {
		return fmt.Errorf("inline READ reply: count %d, data length %d, %d bytes after it; want 10000, 10000, 0 (RFC 8166 3.4.6: the data is removed, its length kept)", count, dlen, rest)
	}
	if err := sameBytes(p.buf.Bytes()[:10000], data, "READ data in the Write chunk"); err != nil {
		return err
	}
	if !bytes.Equal(p.buf.Bytes()[10000:16384], bytes.Repeat([]byte{0xee}, 6384)) {
		return fmt.Errorf("the server wrote past the 10000 bytes READ into the Write chunk")
	}
	return nil
}

func testRDMAReadShort(e *Env) error {
	data := pattern(3000, 5)
	fh, p, err := e.rdmaFilePeer(data)
	if err != nil {
		return err
	}
	defer p.close()
	p.fill(8192, 0xee)
	for _, tc := range []struct {
		off  uint64
		want int
	}{{0, 3000}, {3000, 0}} {
		wc := rdmaproto.Chunk{p.buf.Segment(0, 8192)}
		xid, h, msg, err := p.readIntoWriteChunk(fh, tc.off, 8192, wc)
		if err != nil {
			return err
		}
		if err := checkEcho(h, wc, []uint32{uint32(tc.want)}); err != nil {
			return fmt.Errorf("READ at %d of a 3000-byte file: %v", tc.off, err)
		}
		res, err := rpcResults(msg, xid)
		if err != nil {
			return err
		}
		st, count, eof, dlen, rest, err := readReplyHead(res)
		if err != nil || st != wire.OK {
			return fmt.Errorf("READ: status %v, %v", st, err)
		}
		if int(count) != tc.want || int(dlen) != tc.want || !eof || rest != 0 {
			return fmt.Errorf("READ at %d: count %d, length %d, eof %v, %d trailing bytes; want %d, %d, eof, 0", tc.off, count, dlen, eof, rest, tc.want, tc.want)
		}
	}
	if err := sameBytes(p.buf.Bytes()[:3000], data, "READ data"); err != nil {
		return err
	}
	if !bytes.Equal(p.buf.Bytes()[3000:8192], bytes.Repeat([]byte{0xee}, 5192)) {
		return fmt.Errorf("the server wrote past the 3000 bytes read")
	}
	return nil
}

func testRDMAReadError(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	wc := rdmaproto.Chunk{p.buf.Segment(0, 4096), p.buf.Segment(4096, 4096)}
	xid, h, msg, err := p.readIntoWriteChunk(e.Dir, 0, 8192, wc)
	if err != nil {
		return err
	}
	if h.Proc == rdmaproto.ProcMsg && len(h.WriteList) == 0 {
		return Warnf("error READ reply has an empty Write list; knfsd echoes the chunk with zero lengths (RFC 8166 3.4.6)")
	}
	if err := checkEcho(h, wc, []uint32{0, 0}); err != nil {
		return err
	}
	res, err := rpcResults(msg, xid)
	if err != nil {
		return err
	}
	st, _, _, _, rest, err := readReplyHead(res)
	if err != nil {
		return err
	}
	if st != wire.ErrIsDir {
		return fmt.Errorf("READ of a directory: %v, want NFS3ERR_ISDIR", st)
	}
	if rest != 0 {
		return fmt.Errorf("%d bytes after the error READ result", rest)
	}
	return nil
}

func testRDMAReadChunkSmall(e *Env) error {
	fh, p, err := e.rdmaFilePeer(pattern(8192, 1))
	if err != nil {
		return err
	}
	defer p.close()
	p.fill(8192, 0xee)
	wc := rdmaproto.Chunk{p.buf.Segment(0, 4096)}
	_, h, _, err := p.readIntoWriteChunk(fh, 0, 8192, wc)
	if err != nil {
		return err
	}
	if err := wantRDMAError(h, rdmaproto.ErrChunk, "READ of 8192 bytes into a 4096-byte Write chunk"); err != nil {
		return err
	}
	if !bytes.Equal(p.buf.Bytes()[4096:8192], bytes.Repeat([]byte{0xee}, 4096)) {
		return fmt.Errorf("the server wrote past the Write chunk")
	}
	return p.alive("ERR_CHUNK")
}

// rdmaWrite sends a WRITE whose data travels in a Read chunk at the data's
// XDR position, split into segs segments.
func (e *Env) rdmaWrite(p *rdmaPeer, fh []byte, data []byte, segs []int) error {
	copy(p.buf.Bytes(), data)
	xid := p.c.NextXID()
	msg := p.writeHead(xid, fh, len(data))
	var rl []rdmaproto.ReadSegment
	off := 0
	for _, n := range segs {
		rl = append(rl, rdmaproto.ReadSegment{Position: uint32(len(msg)), Segment: p.buf.Segment(off, n)})
		off += n
	}
	h, rm, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcMsg, rl, nil, nil), msg)
	if err != nil {
		return err
	}
	var w wire.WriteRes
	if err := inlineResults(h, rm, xid, "WRITE reply", &w); err != nil {
		return err
	}
	if w.Status != wire.OK || w.Count != uint32(len(data)) {
		return fmt.Errorf("WRITE through a Read chunk: %v, count %d of %d", w.Status, w.Count, len(data))
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ back")
	}
	return sameBytes(got, data, "data written through a Read chunk")
}

func testRDMAWriteChunk(e *Env) error {
	fh, p, err := e.rdmaFilePeer(nil)
	if err != nil {
		return err
	}
	defer p.close()
	// 5001 bytes: the client leaves out the XDR pad (RFC 8166 3.4.5).
	return e.rdmaWrite(p, fh, pattern(5001, 7), []int{5001})
}

func testRDMAWriteSplit(e *Env) error {
	fh, p, err := e.rdmaFilePeer(nil)
	if err != nil {
		return err
	}
	defer p.close()
	return e.rdmaWrite(p, fh, pattern(9000, 11), []int{4096, 4096, 808})
}

func testRDMANoMsgCall(e *Env) error {
	p, err := e.rdmaDial(rdmaclient.Config{})
	if err != nil {
		return err
	}
	defer p.close()
	target := strings.Repeat("t/", 2000)
	xid := p.c.NextXID()
	a := wire.SymlinkArgs{Where: wire.DirOpArgs{Dir: e.Dir, Name: "l"}, Attr: mode(0o777), Target: target}
	call := p.nfsMsg(xid, wire.ProcSymlink, a.Append(nil))
	copy(p.buf.Bytes(), call)
	rl := []rdmaproto.ReadSegment{{Position: 0, Segment: p.buf.Segment(0, len(call))}}
	h, msg, err := p.roundTrip(rdmaHdr(xid, rdmaproto.ProcNoMsg, rl, nil, nil), nil)
	if err != nil {
		return err
	}
	var cr wire.CreateRes
	if err := inlineResults(h, msg, xid, "SYMLINK sent as RDMA_NOMSG", &cr); err != nil {
		return err
	}
	if cr.Status != wire.OK {
		return fmt.Errorf("SYMLINK with a 4000-byte target by RDMA_NOMSG: %v", cr.Status)
	}
	l, err := e.C.Lookup(e.Ctx, e.Dir, "l")
	if err != nil {
		return ok(err, "LOOKUP l")
	}
	rl2, err := e.C.Readlink(e.Ctx, l.FH)
	if err != nil {
		return ok(err, "READLINK")
	}
	if rl2.Target != target {
		return fmt.Errorf("READLINK returned %d bytes, the SYMLINK sent %d", len(rl2.Target), len(target))
	}
	return nil
}

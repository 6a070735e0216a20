package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaproto "github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// RPC-over-RDMA connection set-up (RFC 8797 private data) over a bare
// verbs connection the test drives itself.
//
// Ownership: a verbsPeer's regions are registered on its connection and
// deregistered by close after the connection is closed.

type verbsPeer struct {
	vc         verbs.Conn
	recv, send *verbs.MR
	size       int // bytes per Receive buffer
	nrecv      int
}

// dialVerbs connects with priv as the CM REQ private data and posts four
// Receives of recvSize bytes before connecting.
func (e *Env) dialVerbs(priv []byte, recvSize int) (*verbsPeer, error) {
	p := &verbsPeer{size: recvSize, nrecv: 4}
	params := verbs.ConnParams{
		Config:      verbs.Config{MaxSendWR: 8, MaxRecvWR: p.nrecv, MaxSendSGE: 1, MaxRecvSGE: 1},
		PrivateData: priv, ResponderResources: 16,
		RetryCount: 6, // as the Linux client: Soft-RoCE drops packets under load
		Prepare: func(vc verbs.Conn) error {
			m, err := vc.Register(p.nrecv*recvSize, verbs.AccessLocalWrite)
			if err != nil {
				return err
			}
			p.recv = m
			for i := 0; i < p.nrecv; i++ {
				if err := p.repost(vc, i); err != nil {
					return err
				}
			}
			return nil
		},
	}
	vc, err := e.Cfg.DialVerbs(e.Ctx, e.NFSAddr, params)
	if err != nil {
		if p.recv != nil {
			p.recv.Deregister()
		}
		return nil, ok(err, "connecting")
	}
	p.vc = vc
	if p.send, err = vc.Register(8192, verbs.AccessLocalWrite); err != nil {
		p.close()
		return nil, ok(err, "registering")
	}
	return p, nil
}

func (p *verbsPeer) repost(vc verbs.Conn, i int) error {
	return vc.PostRecv([]verbs.RecvWR{{ID: uint64(i), SGL: []verbs.SGE{p.recv.SGE(i*p.size, p.size)}}})
}

func (p *verbsPeer) close() {
	if p.vc != nil {
		p.vc.Close()
	}
	if p.recv != nil {
		p.recv.Deregister()
	}
	if p.send != nil {
		p.send.Deregister()
	}
}

// roundTrip Sends b and returns the next message received (a copy).
func (p *verbsPeer) roundTrip(e *Env, b []byte) ([]byte, error) {
	copy(p.send.Bytes(), b)
	err := p.vc.PostSend([]verbs.SendWR{{ID: 100, Opcode: verbs.OpSend, SGL: []verbs.SGE{p.send.SGE(0, len(b))}, Signaled: true}})
	if err != nil {
		return nil, ok(err, "posting the Send")
	}
	wcs := make([]verbs.Completion, 8)
	for {
		n, err := p.vc.Poll(e.Ctx, wcs)
		if err != nil {
			return nil, ok(err, "waiting for the reply")
		}
		for _, wc := range wcs[:n] {
			if !wc.Recv {
				if wc.Status != verbs.WCSuccess {
					return nil, fmt.Errorf("Send completed with %v", wc.Status)
				}
				continue
			}
			if wc.Status != verbs.WCSuccess {
				return nil, fmt.Errorf("Receive of %d bytes completed with %v: the server Sent more than the receive size (RFC 8166 3.3.2)", p.size, wc.Status)
			}
			i := int(wc.WRID)
			out := append([]byte(nil), p.recv.Slice(i*p.size, int(wc.ByteLen))...)
			if err := p.repost(p.vc, i); err != nil {
				return nil, ok(err, "re-posting")
			}
			return out, nil
		}
	}
}

func testRDMAPrivateData(e *Env) error {
	priv := rdmaproto.PrivateData{SendSize: 4096, RecvSize: 4096}.Append(nil)
	p, err := e.dialVerbs(priv, 4096)
	if err != nil {
		return err
	}
	defer p.close()
	pd := p.vc.PeerPrivateData()
	if len(pd) < rdmaproto.PrivateDataSize {
		return fmt.Errorf("REP private data is %d bytes, want the 8-byte rpcrdma_connect_private (RFC 8797 4)", len(pd))
	}
	if m := binary.BigEndian.Uint32(pd); m != rdmaproto.PrivateDataMagic {
		return fmt.Errorf("REP private data magic %#08x, want 0xf6ab0e18 (RFC 8797 4)", m)
	}
	if pd[4] != 1 {
		return fmt.Errorf("REP private data version %d, want 1 (RFC 8797 4)", pd[4])
	}
	if pd[5]&^0x01 != 0 {
		return fmt.Errorf("REP private data flags %#02x set reserved bits (RFC 8797 4)", pd[5])
	}
	sp, _ := rdmaproto.ParsePrivateData(pd)
	if sp.RecvSize < 4096 {
		return Warnf("server receive size %d: the Linux client sends 4096-byte calls (RFC 8797 4)", sp.RecvSize)
	}
	// The server must not Send more than our 4096 bytes: a NULL works.
	xid := uint32(0x5151)
	b := rdmaproto.AppendFixed(nil, xid, 4, rdmaproto.ProcMsg)
	b = words(b, 0, 0, 0)
	b = append(b, callMsg(xid, wire.Program, wire.Version, wire.ProcNull, oncrpc.OpaqueAuth{}, nil)...)
	reply, err := p.roundTrip(e, b)
	if err != nil {
		return err
	}
	var h rdmaproto.Header
	if err := h.Decode(xdr.NewReader(reply), rdmaproto.DefaultLimits); err != nil {
		return ok(err, "decoding the NULL reply header")
	}
	if h.XID != xid || h.Proc != rdmaproto.ProcMsg || h.Credits < 1 {
		return fmt.Errorf("NULL reply: xid %#x proc %v credits %d", h.XID, h.Proc, h.Credits)
	}
	return nil
}

func testRDMANoPrivateData(e *Env) error {
	// Without private data both sides assume 1024-byte inline messages
	// (RFC 8166 3.3.3): a 2 KB READLINK reply may not be Sent inline.
	l, err := e.symlink(e.Dir, "l", strings.Repeat("x", 2000))
	if err != nil {
		return err
	}
	p, err := e.dialVerbs(nil, 1024)
	if err != nil {
		return err
	}
	defer p.close()
	xid := uint32(0x6161)
	b := rdmaproto.AppendFixed(nil, xid, 4, rdmaproto.ProcMsg)
	b = words(b, 0, 0, 0)
	b = append(b, callMsg(xid, wire.Program, wire.Version, wire.ProcReadlink, e.Cred, wire.AppendFH(nil, l))...)
	reply, err := p.roundTrip(e, b)
	if err != nil {
		return err
	}
	var h rdmaproto.Header
	if err := h.Decode(xdr.NewReader(reply), rdmaproto.DefaultLimits); err != nil {
		return ok(err, "decoding the reply header")
	}
	if err := wantRDMAError(&h, rdmaproto.ErrChunk, "READLINK of a 2000-byte target with 1024-byte inline and no chunks"); err != nil {
		return err
	}
	if h.Credits < 1 {
		return errors.New("RDMA_ERROR grants 0 credits (RFC 8166 3.3.1)")
	}
	return nil
}

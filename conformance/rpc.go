package conformance

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ONC RPC (RFC 5531) and record marking, sent raw to the NFS port over TCP.

const lastFragment = 1 << 31

// callMsg builds a whole call message.
func callMsg(xid, prog, vers, proc uint32, cred oncrpc.OpaqueAuth, args []byte) []byte {
	h := oncrpc.CallHeader{XID: xid, Prog: prog, Vers: vers, Proc: proc, Cred: cred}
	return append(oncrpc.AppendCallHeader(nil, &h), args...)
}

// rawCall sends msg on a new connection to the NFS port and decodes the
// reply header.
func (e *Env) rawCall(msg []byte) (oncrpc.ReplyHeader, []byte, error) {
	c, err := e.DialRaw(e.RPCAddr)
	if err != nil {
		return oncrpc.ReplyHeader{}, nil, ok(err, "connecting")
	}
	defer c.Close()
	xid := binary.BigEndian.Uint32(msg)
	reply, err := c.RoundTrip(e.Ctx, xid, msg)
	if err != nil {
		return oncrpc.ReplyHeader{}, nil, ok(err, "waiting for the reply")
	}
	rh, off, err := oncrpc.DecodeReplyHeader(reply)
	if err != nil {
		return rh, nil, ok(err, "decoding the reply header")
	}
	if rh.XID != xid {
		return rh, nil, fmt.Errorf("reply XID %#x, call XID %#x", rh.XID, xid)
	}
	return rh, reply[off:], nil
}

func wantAccept(rh oncrpc.ReplyHeader, st oncrpc.AcceptStat, what string) error {
	if rh.ReplyStat != oncrpc.MsgAccepted {
		return fmt.Errorf("%s: MSG_DENIED (reject_stat %d, auth_stat %v), want MSG_ACCEPTED %v", what, rh.RejectStat, rh.AuthStat, st)
	}
	if rh.AcceptStat != st {
		return fmt.Errorf("%s: accept_stat %v, want %v", what, rh.AcceptStat, st)
	}
	return nil
}

func wantAuthError(rh oncrpc.ReplyHeader, st oncrpc.AuthStat, what string) error {
	if rh.ReplyStat != oncrpc.MsgDenied || rh.RejectStat != oncrpc.AuthErrorStat {
		return fmt.Errorf("%s: reply_stat %d reject_stat %d accept_stat %v, want MSG_DENIED AUTH_ERROR %v",
			what, rh.ReplyStat, rh.RejectStat, rh.AcceptStat, st)
	}
	if rh.AuthStat != st {
		return fmt.Errorf("%s: auth_stat %v, want %v", what, rh.AuthStat, st)
	}
	return nil
}

func testRPCNull(e *Env) error {
	rh, res, err := e.rawCall(callMsg(0x1001, wire.Program, wire.Version, wire.ProcNull, oncrpc.OpaqueAuth{}, nil))
	if err != nil {
		return err
	}
	if err := wantAccept(rh, oncrpc.Success, "NULL with AUTH_NONE"); err != nil {
		return err
	}
	if len(res) != 0 {
		return fmt.Errorf("NULL returned %d bytes of results", len(res))
	}
	if rh.Verf.Flavor != oncrpc.AuthNone {
		return Warnf("reply verifier flavor %d for an AUTH_NONE call", rh.Verf.Flavor)
	}
	return nil
}

func testRPCVersion(e *Env) error {
	msg := callMsg(0x1002, wire.Program, wire.Version, wire.ProcNull, oncrpc.OpaqueAuth{}, nil)
	binary.BigEndian.PutUint32(msg[8:], 3)
	rh, _, err := e.rawCall(msg)
	if err != nil {
		return err
	}
	if rh.ReplyStat != oncrpc.MsgDenied || rh.RejectStat != oncrpc.RPCMismatch {
		return fmt.Errorf("RPC version 3: reply_stat %d reject_stat %d, want MSG_DENIED RPC_MISMATCH", rh.ReplyStat, rh.RejectStat)
	}
	if rh.Low > 2 || rh.High < 2 {
		return fmt.Errorf("RPC_MISMATCH range %d-%d excludes version 2", rh.Low, rh.High)
	}
	return nil
}

func testRPCProgUnavail(e *Env) error {
	rh, _, err := e.rawCall(callMsg(0x1003, 0x20000777, 1, 0, oncrpc.OpaqueAuth{}, nil))
	if err != nil {
		return err
	}
	return wantAccept(rh, oncrpc.ProgUnavail, "call to program 0x20000777")
}

func testRPCProgMismatch(e *Env) error {
	for _, v := range []uint32{1, 4, 99} {
		rh, _, err := e.rawCall(callMsg(0x1004+v, wire.Program, v, 0, oncrpc.OpaqueAuth{}, nil))
		if err != nil {
			return err
		}
		if rh.ReplyStat == oncrpc.MsgAccepted && rh.AcceptStat == oncrpc.Success && v != 99 {
			continue // a server may support other NFS versions
		}
		if err := wantAccept(rh, oncrpc.ProgMismatch, fmt.Sprintf("NFS version %d", v)); err != nil {
			return err
		}
		if rh.Low > 3 || rh.High < 3 {
			return fmt.Errorf("PROG_MISMATCH range %d-%d excludes NFS version 3", rh.Low, rh.High)
		}
	}
	return nil
}

func testRPCProcUnavail(e *Env) error {
	rh, _, err := e.rawCall(callMsg(0x1005, wire.Program, wire.Version, wire.NumProcs, e.Cred, nil))
	if err != nil {
		return err
	}
	return wantAccept(rh, oncrpc.ProcUnavail, "NFSv3 procedure 22")
}

func testRPCGarbage(e *Env) error {
	// GETATTR3args is an nfs_fh3; two bytes cannot be one.
	rh, _, err := e.rawCall(callMsg(0x1006, wire.Program, wire.Version, wire.ProcGetattr, e.Cred, []byte{0, 0}))
	if err != nil {
		return err
	}
	if err := wantAccept(rh, oncrpc.GarbageArgs, "GETATTR with 2 bytes of arguments"); err != nil {
		return err
	}
	// An nfs_fh3 longer than NFS3_FHSIZE.
	args := xdr.AppendOpaque(nil, make([]byte, 65))
	rh, _, err = e.rawCall(callMsg(0x1007, wire.Program, wire.Version, wire.ProcGetattr, e.Cred, args))
	if err != nil {
		return err
	}
	return wantAccept(rh, oncrpc.GarbageArgs, "GETATTR of a 65-byte handle")
}

func testRPCTooManyGIDs(e *Env) error {
	gids := make([]uint32, 17)
	for i := range gids {
		gids[i] = uint32(1000 + i)
	}
	cred := oncrpc.NewAuthSys("conformance", e.Cfg.UID, e.Cfg.GID, gids...)
	rh, _, err := e.rawCall(callMsg(0x1008, wire.Program, wire.Version, wire.ProcGetattr, cred, wire.AppendFH(nil, e.Root)))
	if err != nil {
		return err
	}
	return wantAuthError(rh, oncrpc.AuthBadCred, "AUTH_SYS with 17 gids")
}

func testRPCLongMachineName(e *Env) error {
	cred := oncrpc.NewAuthSys(strings.Repeat("m", 256), e.Cfg.UID, e.Cfg.GID)
	rh, _, err := e.rawCall(callMsg(0x1009, wire.Program, wire.Version, wire.ProcGetattr, cred, wire.AppendFH(nil, e.Root)))
	if err != nil {
		return err
	}
	return wantAuthError(rh, oncrpc.AuthBadCred, "AUTH_SYS with a 256-byte machine name")
}

func testRPCUnknownFlavor(e *Env) error {
	cred := oncrpc.OpaqueAuth{Flavor: 0x7777, Body: []byte{1, 2, 3, 4}}
	rh, _, err := e.rawCall(callMsg(0x100a, wire.Program, wire.Version, wire.ProcGetattr, cred, wire.AppendFH(nil, e.Root)))
	if err != nil {
		return err
	}
	if rh.ReplyStat == oncrpc.MsgDenied && rh.RejectStat == oncrpc.AuthErrorStat {
		switch rh.AuthStat {
		case oncrpc.AuthBadCred, oncrpc.AuthRejectedCred, oncrpc.AuthTooWeak, oncrpc.AuthFailed:
			return nil
		}
	}
	return fmt.Errorf("credential flavor 0x7777: reply_stat %d reject_stat %d auth_stat %v accept_stat %v, want AUTH_ERROR",
		rh.ReplyStat, rh.RejectStat, rh.AuthStat, rh.AcceptStat)
}

func testRPCAuthSysGetattr(e *Env) error {
	rh, res, err := e.rawCall(callMsg(0x100b, wire.Program, wire.Version, wire.ProcGetattr, e.Cred, wire.AppendFH(nil, e.Root)))
	if err != nil {
		return err
	}
	if err := wantAccept(rh, oncrpc.Success, "GETATTR with AUTH_SYS"); err != nil {
		return err
	}
	var g wire.GetattrRes
	if err := decodeInto(res, &g); err != nil {
		return err
	}
	if g.Status != wire.OK {
		return fmt.Errorf("GETATTR of the root: %v", g.Status)
	}
	return nil
}

// rawConn is a TCP connection for record-marking tests.
type rawConn struct{ net.Conn }

func (e *Env) dialRawConn() (*rawConn, error) {
	var d net.Dialer
	c, err := d.DialContext(e.Ctx, "tcp", e.RPCAddr)
	if err != nil {
		return nil, ok(err, "connecting")
	}
	if dl, ok := e.Ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return &rawConn{c}, nil
}

// readRecord reads one whole record, however many fragments it has.
func (c *rawConn) readRecord() ([]byte, error) {
	var rec []byte
	for {
		var mark [4]byte
		if _, err := io.ReadFull(c, mark[:]); err != nil {
			return nil, err
		}
		m := binary.BigEndian.Uint32(mark[:])
		n := int(m &^ lastFragment)
		if n > 1<<24 {
			return nil, fmt.Errorf("fragment of %d bytes", n)
		}
		frag := make([]byte, n)
		if _, err := io.ReadFull(c, frag); err != nil {
			return nil, err
		}
		rec = append(rec, frag...)
		if m&lastFragment != 0 {
			return rec, nil
		}
	}
}

// fragments splits msg into records of at most size bytes each.
func fragments(msg []byte, size int) []byte {
	var b []byte
	for len(msg) > 0 {
		n := min(size, len(msg))
		m := uint32(n)
		if n == len(msg) {
			m |= lastFragment
		}
		b = binary.BigEndian.AppendUint32(b, m)
		b = append(b, msg[:n]...)
		msg = msg[n:]
	}
	return b
}

func testRPCFragments(e *Env) error {
	c, err := e.dialRawConn()
	if err != nil {
		return err
	}
	defer c.Close()
	msg := callMsg(0x100c, wire.Program, wire.Version, wire.ProcGetattr, e.Cred, wire.AppendFH(nil, e.Root))
	// One fragment per 4 bytes, written separately.
	b := fragments(msg, 4)
	for len(b) > 0 {
		n := min(8, len(b))
		if _, err := c.Write(b[:n]); err != nil {
			return ok(err, "writing")
		}
		b = b[n:]
		time.Sleep(time.Millisecond)
	}
	reply, err := c.readRecord()
	if err != nil {
		return ok(err, "reading the reply to a call in many fragments")
	}
	rh, off, err := oncrpc.DecodeReplyHeader(reply)
	if err != nil {
		return ok(err, "decoding the reply")
	}
	if err := wantAccept(rh, oncrpc.Success, "GETATTR sent in 4-byte fragments"); err != nil {
		return err
	}
	var g wire.GetattrRes
	if err := decodeInto(reply[off:], &g); err != nil {
		return err
	}
	if g.Status != wire.OK {
		return fmt.Errorf("GETATTR in fragments: %v", g.Status)
	}
	return nil
}

func testRPCPipeline(e *Env) error {
	c, err := e.dialRawConn()
	if err != nil {
		return err
	}
	defer c.Close()
	const n = 16
	var b []byte
	for i := uint32(0); i < n; i++ {
		msg := callMsg(0x2000+i, wire.Program, wire.Version, wire.ProcGetattr, e.Cred, wire.AppendFH(nil, e.Root))
		b = append(b, fragments(msg, len(msg))...)
	}
	if _, err := c.Write(b); err != nil {
		return ok(err, "writing")
	}
	seen := map[uint32]bool{}
	for i := 0; i < n; i++ {
		reply, err := c.readRecord()
		if err != nil {
			return ok(err, fmt.Sprintf("reading reply %d of %d pipelined calls", i+1, n))
		}
		rh, _, err := oncrpc.DecodeReplyHeader(reply)
		if err != nil {
			return ok(err, "decoding a reply")
		}
		if rh.XID < 0x2000 || rh.XID >= 0x2000+n || seen[rh.XID] {
			return fmt.Errorf("unexpected or repeated reply XID %#x", rh.XID)
		}
		seen[rh.XID] = true
	}
	return nil
}

func testRPCIgnoreReply(e *Env) error {
	c, err := e.dialRawConn()
	if err != nil {
		return err
	}
	defer c.Close()
	// A REPLY message sent to a server is not a call: it must be dropped,
	// and the connection must keep working.
	bogus := oncrpc.AppendAcceptedHeader(nil, 0x3000, oncrpc.Success)
	msg := callMsg(0x3001, wire.Program, wire.Version, wire.ProcNull, oncrpc.OpaqueAuth{}, nil)
	b := append(fragments(bogus, len(bogus)), fragments(msg, len(msg))...)
	if _, err := c.Write(b); err != nil {
		return ok(err, "writing")
	}
	reply, err := c.readRecord()
	if err != nil {
		return ok(err, "reading")
	}
	rh, _, err := oncrpc.DecodeReplyHeader(reply)
	if err != nil {
		return ok(err, "decoding")
	}
	if rh.XID != 0x3001 {
		return fmt.Errorf("first reply has XID %#x: the server answered a REPLY message", rh.XID)
	}
	return wantAccept(rh, oncrpc.Success, "NULL after a stray REPLY")
}

func testRPCShortHeader(e *Env) error {
	c, err := e.dialRawConn()
	if err != nil {
		return err
	}
	defer c.Close()
	// A record too short for a call header; the server may answer with an
	// error, drop it, or close the connection, but must survive.
	short := []byte{0, 0, 0x40, 0x01, 0, 0, 0, 0, 0, 0, 0, 2}
	if _, err := c.Write(fragments(short, len(short))); err != nil {
		return ok(err, "writing")
	}
	c.Close()
	cc, err := e.DialRaw(e.RPCAddr)
	if err != nil {
		return ok(err, "reconnecting after a truncated call")
	}
	defer cc.Close()
	_, err = cc.Call(e.Ctx, &oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: wire.ProcNull})
	return ok(err, "NULL after a truncated call")
}

package adversary

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Authentication flavors, RFC 5531 section 8.2.
const (
	AuthNone = 0
	AuthSys  = 1
)

// Cred is the credential a Conn sends with every call. With Flavor
// AuthSys the body is an authsys_parms (RFC 5531 appendix A) built from
// the fields, with no limit applied: a machine name longer than 255
// bytes or more than 16 gids go out as they are. Raw, when not nil, is
// sent as the body instead.
type Cred struct {
	Flavor  uint32
	Stamp   uint32
	Machine string
	UID     uint32
	GID     uint32
	GIDs    []uint32
	Raw     []byte
}

// Sys is an AUTH_SYS credential from machine "adversary".
func Sys(uid, gid uint32, gids ...uint32) Cred {
	return Cred{Flavor: AuthSys, Machine: "adversary", UID: uid, GID: gid, GIDs: gids}
}

func (c *Cred) body() []byte {
	if c.Raw != nil || c.Flavor != AuthSys {
		return c.Raw
	}
	var e encoder
	e.u32(c.Stamp)
	e.str(c.Machine)
	e.u32(c.UID)
	e.u32(c.GID)
	e.u32(uint32(len(c.GIDs)))
	for _, g := range c.GIDs {
		e.u32(g)
	}
	return e.b
}

// Reply status values, RFC 5531 section 9.
const (
	msgAccepted  = 0
	msgDenied    = 1
	acceptOK     = 0
	progMismatch = 2
	rpcMismatch  = 0
	authError    = 1
)

// RPCError is a reply that carries no procedure results: an accepted
// reply whose accept_stat is not SUCCESS, or a denied one (RFC 5531
// section 9, accept_stat, reject_stat and auth_stat).
type RPCError struct {
	Denied     bool
	AcceptStat uint32 // when !Denied
	RejectStat uint32 // when Denied: 0 RPC_MISMATCH, 1 AUTH_ERROR
	AuthStat   uint32 // when RejectStat is AUTH_ERROR
}

func (e *RPCError) Error() string {
	if !e.Denied {
		return fmt.Sprintf("rpc: accepted, accept_stat %d", e.AcceptStat)
	}
	if e.RejectStat == authError {
		return fmt.Sprintf("rpc: denied, auth_stat %d", e.AuthStat)
	}
	return fmt.Sprintf("rpc: denied, reject_stat %d", e.RejectStat)
}

// Accept and auth status values the tests look for.
const (
	GarbageArgs = 4 // accept_stat GARBAGE_ARGS
	AuthBadCred = 1 // auth_stat AUTH_BADCRED
	AuthTooWeak = 5 // auth_stat AUTH_TOOWEAK
)

// MaxRecord bounds a reply record this client accepts.
const MaxRecord = 4 << 20

// Conn is one TCP connection to an ONC RPC server speaking record
// marking (RFC 5531 section 11). It is not safe for concurrent use:
// each goroutine of a test has its own Conn.
type Conn struct {
	nc      net.Conn
	Cred    Cred
	Timeout time.Duration // per call, default 10s
	xid     uint32
	rec     []byte // the last reply record; Reply.Results aliases it
}

// Dial connects to server from source address localIP (empty: any).
func Dial(ctx context.Context, server net.Addr, localIP string) (*Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	nc, err := d.DialContext(ctx, "tcp", server.String())
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, Cred: Sys(65534, 65534), Timeout: 10 * time.Second, xid: uint32(time.Now().UnixNano())}, nil
}

// NetConn is the underlying connection, for tests that write raw bytes
// or hold the connection idle.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// EncodeCall returns one complete record (mark included) of a call
// message, RFC 5531 section 9: xid, CALL, rpcvers 2, prog, vers, proc,
// credential, an AUTH_NONE verifier, then args.
func EncodeCall(xid uint32, cred *Cred, prog, vers, proc uint32, args []byte) []byte {
	var e encoder
	e.u32(0) // record mark, filled below
	e.u32(xid)
	e.u32(0) // CALL
	e.u32(2)
	e.u32(prog)
	e.u32(vers)
	e.u32(proc)
	e.u32(cred.Flavor)
	e.opaque(cred.body())
	e.u32(AuthNone)
	e.u32(0)
	e.b = append(e.b, args...)
	binary.BigEndian.PutUint32(e.b, 1<<31|uint32(len(e.b)-4))
	return e.b
}

// Send writes one call and returns its xid without reading the reply.
func (c *Conn) Send(prog, vers, proc uint32, args []byte) (uint32, error) {
	c.xid++
	rec := EncodeCall(c.xid, &c.Cred, prog, vers, proc, args)
	c.nc.SetWriteDeadline(time.Now().Add(c.Timeout))
	_, err := c.nc.Write(rec)
	return c.xid, err
}

// Call sends a call and waits for the reply with its xid. Results alias
// the Conn's record buffer and are valid until the next call on c.
func (c *Conn) Call(prog, vers, proc uint32, args []byte) ([]byte, error) {
	xid, err := c.Send(prog, vers, proc, args)
	if err != nil {
		return nil, err
	}
	c.nc.SetReadDeadline(time.Now().Add(c.Timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		if err := c.readRecord(); err != nil {
			return nil, err
		}
		gotXID, res, err := ParseReply(c.rec)
		if err != nil {
			var re *RPCError
			if !errors.As(err, &re) {
				return nil, err
			}
		}
		if gotXID == xid {
			return res, err
		}
		// A reply to an earlier call sent with Send: skip it.
	}
}

// readRecord reads fragments until the last one into c.rec.
func (c *Conn) readRecord() error {
	c.rec = c.rec[:0]
	var mark [4]byte
	for {
		if _, err := io.ReadFull(c.nc, mark[:]); err != nil {
			return err
		}
		m := binary.BigEndian.Uint32(mark[:])
		n := int(m & 0x7fffffff)
		if len(c.rec)+n > MaxRecord {
			return fmt.Errorf("adversary: reply record over %d bytes", MaxRecord)
		}
		off := len(c.rec)
		c.rec = append(c.rec, make([]byte, n)...)
		if _, err := io.ReadFull(c.nc, c.rec[off:]); err != nil {
			return err
		}
		if m&(1<<31) != 0 {
			return nil
		}
	}
}

// ParseReply decodes a reply message (RFC 5531 section 9) and returns
// its xid and the procedure results, a sub-slice of msg. A reply without
// results is an *RPCError; anything malformed another error.
func ParseReply(msg []byte) (uint32, []byte, error) {
	d := decoder{b: msg}
	xid := d.u32()
	if mtype := d.u32(); d.err == nil && mtype != 1 {
		return xid, nil, decodeError("not a REPLY")
	}
	switch d.u32() {
	case msgAccepted:
		d.u32()       // verifier flavor
		d.opaque(400) // verifier body, RFC 5531 section 8.2
		st := d.u32() // accept_stat
		if d.err != nil {
			return xid, nil, d.err
		}
		if st != acceptOK {
			return xid, nil, &RPCError{AcceptStat: st}
		}
		return xid, msg[d.off:], nil
	case msgDenied:
		rs := d.u32()
		re := &RPCError{Denied: true, RejectStat: rs}
		if rs == authError {
			re.AuthStat = d.u32()
		}
		if d.err != nil {
			return xid, nil, d.err
		}
		return xid, nil, re
	}
	if d.err != nil {
		return xid, nil, d.err
	}
	return xid, nil, decodeError("reply_stat not 0 or 1")
}

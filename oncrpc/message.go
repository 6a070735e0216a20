package oncrpc

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// RPCVersion is the only ONC RPC protocol version (RFC 5531 section 9).
const RPCVersion = 2

// msg_type, RFC 5531 section 9.
const (
	MsgCall  = 0
	MsgReply = 1
)

// reply_stat, RFC 5531 section 9.
const (
	MsgAccepted = 0
	MsgDenied   = 1
)

// AcceptStat is accept_stat, RFC 5531 section 9.
type AcceptStat uint32

// accept_stat values.
const (
	Success      AcceptStat = 0
	ProgUnavail  AcceptStat = 1
	ProgMismatch AcceptStat = 2
	ProcUnavail  AcceptStat = 3
	GarbageArgs  AcceptStat = 4
	SystemErr    AcceptStat = 5
)

func (s AcceptStat) String() string {
	switch s {
	case Success:
		return "SUCCESS"
	case ProgUnavail:
		return "PROG_UNAVAIL"
	case ProgMismatch:
		return "PROG_MISMATCH"
	case ProcUnavail:
		return "PROC_UNAVAIL"
	case GarbageArgs:
		return "GARBAGE_ARGS"
	case SystemErr:
		return "SYSTEM_ERR"
	}
	return fmt.Sprintf("accept_stat(%d)", uint32(s))
}

// reject_stat, RFC 5531 section 9.
const (
	RPCMismatch   = 0
	AuthErrorStat = 1
)

// AuthStat is auth_stat, RFC 5531 section 9.
type AuthStat uint32

// auth_stat values.
const (
	AuthOK           AuthStat = 0
	AuthBadCred      AuthStat = 1
	AuthRejectedCred AuthStat = 2
	AuthBadVerf      AuthStat = 3
	AuthRejectedVerf AuthStat = 4
	AuthTooWeak      AuthStat = 5
	AuthInvalidResp  AuthStat = 6
	AuthFailed       AuthStat = 7
)

func (s AuthStat) String() string {
	names := [...]string{"AUTH_OK", "AUTH_BADCRED", "AUTH_REJECTEDCRED", "AUTH_BADVERF",
		"AUTH_REJECTEDVERF", "AUTH_TOOWEAK", "AUTH_INVALIDRESP", "AUTH_FAILED"}
	if int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("auth_stat(%d)", uint32(s))
}

// Authentication flavors, RFC 5531 section 8.2 and appendix A.
const (
	AuthNone  = 0
	AuthSys   = 1
	AuthShort = 2
)

// MaxAuthBytes is the largest opaque_auth body (RFC 5531 section 8.2).
const MaxAuthBytes = 400

// OpaqueAuth is opaque_auth, RFC 5531 section 8.2. Body is a sub-slice of
// the decoded message.
type OpaqueAuth struct {
	Flavor uint32
	Body   []byte
}

// Append appends the XDR form of a.
func (a OpaqueAuth) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, a.Flavor)
	return xdr.AppendOpaque(b, a.Body)
}

func decodeOpaqueAuth(r *xdr.Reader) OpaqueAuth {
	return OpaqueAuth{Flavor: r.Uint32(), Body: r.Opaque(MaxAuthBytes)}
}

// CallHeader is the fixed part of call_body (RFC 5531 section 9) with the
// message's xid and type.
type CallHeader struct {
	XID     uint32
	RPCVers uint32
	Prog    uint32
	Vers    uint32
	Proc    uint32
	Cred    OpaqueAuth
	Verf    OpaqueAuth
}

// HeaderError describes a call whose header could not be used. XIDValid
// tells whether a reply can be addressed to it.
type HeaderError struct {
	XID      uint32
	XIDValid bool
	NotCall  bool // a REPLY, or another msg_type: dropped silently
	// Auth is AuthBadCred or AuthBadVerf when the credential or verifier
	// claims a body longer than MaxAuthBytes (RFC 5531 section 8.2): an
	// authentication error rather than garbage.
	Auth AuthStat
	Err  error
}

func (e *HeaderError) Error() string { return "oncrpc: bad call header: " + e.Err.Error() }
func (e *HeaderError) Unwrap() error { return e.Err }

// DecodeCallHeader decodes the RPC call header at the start of msg and
// returns it with the offset at which the procedure arguments begin.
func DecodeCallHeader(msg []byte) (CallHeader, int, error) {
	var h CallHeader
	r := xdr.NewReader(msg)
	h.XID = r.Uint32()
	mtype := r.Uint32()
	if r.Err() != nil {
		return h, 0, &HeaderError{Err: r.Err()}
	}
	if mtype != MsgCall {
		return h, 0, &HeaderError{XID: h.XID, XIDValid: true, NotCall: true, Err: fmt.Errorf("msg_type %d is not CALL", mtype)}
	}
	h.RPCVers = r.Uint32()
	h.Prog = r.Uint32()
	h.Vers = r.Uint32()
	h.Proc = r.Uint32()
	h.Cred = decodeOpaqueAuth(r)
	if err := r.Err(); err != nil {
		return h, 0, authHeaderError(h.XID, err, AuthBadCred)
	}
	h.Verf = decodeOpaqueAuth(r)
	if err := r.Err(); err != nil {
		return h, 0, authHeaderError(h.XID, err, AuthBadVerf)
	}
	return h, r.Offset(), nil
}

// PeekCallProc reads the program, version and procedure of the RPC call
// at the start of msg from the fixed words of its header (call_body, RFC
// 5531 section 9: xid, mtype, rpcvers, prog, vers, proc) without decoding
// the credential. ok is false when msg is too short or not a call.
func PeekCallProc(msg []byte) (prog, vers, proc uint32, ok bool) {
	const fixedWords = 6
	if len(msg) < fixedWords*4 || binary.BigEndian.Uint32(msg[4:]) != MsgCall {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint32(msg[12:]), binary.BigEndian.Uint32(msg[16:]), binary.BigEndian.Uint32(msg[20:]), true
}

// PeekXID returns the XID of the RPC message at the start of msg (RFC 5531
// section 9), or false when msg is too short to carry one.
func PeekXID(msg []byte) (uint32, bool) {
	if len(msg) < 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(msg), true
}

// authHeaderError classifies a failure to decode the credential or the
// verifier: a body over MaxAuthBytes is an authentication error (stat),
// anything else garbage. Kept off the success path: errors.As allocates.
func authHeaderError(xid uint32, err error, stat AuthStat) *HeaderError {
	he := &HeaderError{XID: xid, XIDValid: true, Err: err}
	var le *xdr.LengthError
	if errors.As(err, &le) {
		he.Auth = stat
	}
	return he
}

// AppendCallHeader appends a call header (RFC 5531 section 9).
func AppendCallHeader(b []byte, h *CallHeader) []byte {
	b = xdr.AppendUint32(b, h.XID)
	b = xdr.AppendUint32(b, MsgCall)
	b = xdr.AppendUint32(b, RPCVersion)
	b = xdr.AppendUint32(b, h.Prog)
	b = xdr.AppendUint32(b, h.Vers)
	b = xdr.AppendUint32(b, h.Proc)
	b = h.Cred.Append(b)
	return h.Verf.Append(b)
}

// AppendAcceptedHeader appends the reply header of an accepted call up to and
// including accept_stat; the caller appends what the status carries (results
// for SUCCESS, mismatch_info for PROG_MISMATCH). The verifier is AUTH_NONE.
func AppendAcceptedHeader(b []byte, xid uint32, stat AcceptStat) []byte {
	b = xdr.AppendUint32(b, xid)
	b = xdr.AppendUint32(b, MsgReply)
	b = xdr.AppendUint32(b, MsgAccepted)
	b = xdr.AppendUint32(b, AuthNone)
	b = xdr.AppendUint32(b, 0)
	return xdr.AppendUint32(b, uint32(stat))
}

// AppendProgMismatch appends a PROG_MISMATCH reply with the supported range.
func AppendProgMismatch(b []byte, xid, low, high uint32) []byte {
	b = AppendAcceptedHeader(b, xid, ProgMismatch)
	b = xdr.AppendUint32(b, low)
	return xdr.AppendUint32(b, high)
}

// AppendRPCMismatch appends a MSG_DENIED RPC_MISMATCH reply naming version 2.
func AppendRPCMismatch(b []byte, xid uint32) []byte {
	b = xdr.AppendUint32(b, xid)
	b = xdr.AppendUint32(b, MsgReply)
	b = xdr.AppendUint32(b, MsgDenied)
	b = xdr.AppendUint32(b, RPCMismatch)
	b = xdr.AppendUint32(b, RPCVersion)
	return xdr.AppendUint32(b, RPCVersion)
}

// AppendAuthError appends a MSG_DENIED AUTH_ERROR reply with its reason.
func AppendAuthError(b []byte, xid uint32, stat AuthStat) []byte {
	b = xdr.AppendUint32(b, xid)
	b = xdr.AppendUint32(b, MsgReply)
	b = xdr.AppendUint32(b, MsgDenied)
	b = xdr.AppendUint32(b, AuthErrorStat)
	return xdr.AppendUint32(b, uint32(stat))
}

// ReplyHeader is a decoded reply header (client side).
type ReplyHeader struct {
	XID        uint32
	ReplyStat  uint32
	AcceptStat AcceptStat // when ReplyStat == MsgAccepted
	RejectStat uint32     // when ReplyStat == MsgDenied
	AuthStat   AuthStat   // when RejectStat == AuthErrorStat
	Low, High  uint32     // PROG_MISMATCH or RPC_MISMATCH range
	Verf       OpaqueAuth
}

// DecodeReplyHeader decodes a reply message header and returns the offset of
// the results (meaningful only for an accepted SUCCESS reply).
func DecodeReplyHeader(msg []byte) (ReplyHeader, int, error) {
	var h ReplyHeader
	r := xdr.NewReader(msg)
	h.XID = r.Uint32()
	if t := r.Uint32(); r.Err() == nil && t != MsgReply {
		return h, 0, fmt.Errorf("oncrpc: msg_type %d is not REPLY", t)
	}
	h.ReplyStat = r.Uint32()
	switch h.ReplyStat {
	case MsgAccepted:
		h.Verf = decodeOpaqueAuth(r)
		h.AcceptStat = AcceptStat(r.Uint32())
		if h.AcceptStat == ProgMismatch {
			h.Low, h.High = r.Uint32(), r.Uint32()
		}
	case MsgDenied:
		h.RejectStat = r.Uint32()
		switch h.RejectStat {
		case RPCMismatch:
			h.Low, h.High = r.Uint32(), r.Uint32()
		case AuthErrorStat:
			h.AuthStat = AuthStat(r.Uint32())
		default:
			r.SetErr(fmt.Errorf("oncrpc: unknown reject_stat %d", h.RejectStat))
		}
	default:
		r.SetErr(fmt.Errorf("oncrpc: unknown reply_stat %d", h.ReplyStat))
	}
	if err := r.Err(); err != nil {
		return h, 0, err
	}
	return h, r.Offset(), nil
}

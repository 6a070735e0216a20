package oncrpc

import (
	"errors"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// AUTH_SYS limits, RFC 5531 appendix A.
const (
	MaxMachineName = 255
	MaxAuthSysGIDs = 16
)

// AuthSysCred is authsys_parms, RFC 5531 appendix A. MachineName is a
// sub-slice of the call buffer; GIDs uses the fixed array to avoid
// allocating on every call.
type AuthSysCred struct {
	Stamp       uint32
	MachineName []byte
	UID         uint32
	GID         uint32
	NGIDs       int
	GIDArray    [MaxAuthSysGIDs]uint32
}

// GIDs returns the supplementary group IDs.
func (c *AuthSysCred) GIDs() []uint32 { return c.GIDArray[:c.NGIDs] }

// ErrBadAuthSys reports an authsys_parms body that does not decode or breaks
// the RFC limits.
var ErrBadAuthSys = errors.New("oncrpc: malformed AUTH_SYS credential")

// DecodeAuthSys decodes an AUTH_SYS credential body. The whole body must be
// consumed: trailing bytes are malformed too.
func DecodeAuthSys(body []byte, c *AuthSysCred) error {
	var r xdr.Reader
	r.Reset(body)
	c.Stamp = r.Uint32()
	c.MachineName = r.Opaque(MaxMachineName)
	c.UID = r.Uint32()
	c.GID = r.Uint32()
	n := r.Count(MaxAuthSysGIDs, 4)
	for i := 0; i < n; i++ {
		c.GIDArray[i] = r.Uint32()
	}
	c.NGIDs = n
	if r.Err() != nil || r.Len() != 0 {
		c.NGIDs = 0
		return ErrBadAuthSys
	}
	return nil
}

// AppendAuthSys appends an authsys_parms body.
func AppendAuthSys(b []byte, c *AuthSysCred) []byte {
	b = xdr.AppendUint32(b, c.Stamp)
	b = xdr.AppendOpaque(b, c.MachineName)
	b = xdr.AppendUint32(b, c.UID)
	b = xdr.AppendUint32(b, c.GID)
	gids := c.GIDs()
	b = xdr.AppendUint32(b, uint32(len(gids)))
	for _, g := range gids {
		b = xdr.AppendUint32(b, g)
	}
	return b
}

// NewAuthSys returns an AUTH_SYS opaque_auth for a client.
func NewAuthSys(machine string, uid, gid uint32, gids ...uint32) OpaqueAuth {
	c := AuthSysCred{MachineName: []byte(machine), UID: uid, GID: gid}
	c.NGIDs = copy(c.GIDArray[:], gids)
	b := AppendAuthSys(nil, &c)
	// Encode extra gids beyond the limit verbatim so tests can send them.
	if len(gids) > MaxAuthSysGIDs {
		b = b[:len(b)-4*(MaxAuthSysGIDs+1)]
		b = xdr.AppendUint32(b, uint32(len(gids)))
		for _, g := range gids {
			b = xdr.AppendUint32(b, g)
		}
	}
	return OpaqueAuth{Flavor: AuthSys, Body: b}
}

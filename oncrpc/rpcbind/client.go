package rpcbind

import (
	"context"
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ErrNotRegistered is returned by GetPort and GetAddr when the program is
// not registered (port 0 or an empty address in the reply).
var ErrNotRegistered = errors.New("rpcbind: program not registered")

func call(ctx context.Context, c oncrpc.Caller, vers, proc uint32, args []byte) (*xdr.Reader, error) {
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: Prog, Vers: vers, Proc: proc, Args: args})
	if err != nil {
		return nil, err
	}
	return xdr.NewReader(res), nil
}

func isProgMismatch(err error) bool {
	var ae *oncrpc.AcceptError
	return errors.As(err, &ae) && ae.Stat == oncrpc.ProgMismatch
}

func decodeBool(r *xdr.Reader) (bool, error) {
	v := r.Bool()
	if err := r.Err(); err != nil {
		return false, fmt.Errorf("rpcbind: bad reply: %w", err)
	}
	return v, nil
}

// Null calls the NULL procedure of version vers.
func Null(ctx context.Context, c oncrpc.Caller, vers uint32) error {
	_, err := call(ctx, c, vers, ProcNull, nil)
	return err
}

// GetPort asks a portmapper (version 2, PMAPPROC_GETPORT) for the port of
// prog and vers over prot (ProtoTCP or ProtoUDP).
func GetPort(ctx context.Context, c oncrpc.Caller, prog, vers, prot uint32) (uint16, error) {
	m := PortMapping{Prog: prog, Vers: vers, Prot: prot}
	r, err := call(ctx, c, VersPmap, PmapProcGetPort, m.Append(nil))
	if err != nil {
		return 0, err
	}
	port := r.Uint32()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("rpcbind: bad GETPORT reply: %w", err)
	}
	if port == 0 {
		return 0, ErrNotRegistered
	}
	if port > 0xffff {
		return 0, fmt.Errorf("rpcbind: GETPORT returned port %d", port)
	}
	return uint16(port), nil
}

// PmapSet registers m with PMAPPROC_SET (version 2) and returns the
// server's answer.
func PmapSet(ctx context.Context, c oncrpc.Caller, m PortMapping) (bool, error) {
	r, err := call(ctx, c, VersPmap, PmapProcSet, m.Append(nil))
	if err != nil {
		return false, err
	}
	return decodeBool(r)
}

// PmapUnset removes prog and vers with PMAPPROC_UNSET (version 2; both
// protocols).
func PmapUnset(ctx context.Context, c oncrpc.Caller, prog, vers uint32) (bool, error) {
	m := PortMapping{Prog: prog, Vers: vers}
	r, err := call(ctx, c, VersPmap, PmapProcUnset, m.Append(nil))
	if err != nil {
		return false, err
	}
	return decodeBool(r)
}

// PmapDump returns the version 2 mapping list (PMAPPROC_DUMP).
func PmapDump(ctx context.Context, c oncrpc.Caller) ([]PortMapping, error) {
	r, err := call(ctx, c, VersPmap, PmapProcDump, nil)
	if err != nil {
		return nil, err
	}
	return DecodePmapList(r)
}

// rpcbCall calls proc with an rpcb argument over version 4, falling back to
// version 3 when the server only has older versions.
func rpcbCall(ctx context.Context, c oncrpc.Caller, proc uint32, m *Mapping) (*xdr.Reader, error) {
	var args []byte
	if m != nil {
		args = m.Append(nil)
	}
	r, err := call(ctx, c, Vers4, proc, args)
	if isProgMismatch(err) {
		r, err = call(ctx, c, Vers3, proc, args)
	}
	return r, err
}

// GetAddr asks rpcbind (RPCBPROC_GETADDR, version 4 or else 3) for the
// universal address of prog on netid. rpcbind answers with another
// version's address when vers is not registered; use GetVersAddr for an
// exact match.
func GetAddr(ctx context.Context, c oncrpc.Caller, prog, vers uint32, netid string) (string, error) {
	return getAddr(ctx, c, ProcGetAddr, prog, vers, netid)
}

// GetVersAddr asks rpcbind version 4 (RPCBPROC_GETVERSADDR) for the
// address of exactly prog and vers on netid.
func GetVersAddr(ctx context.Context, c oncrpc.Caller, prog, vers uint32, netid string) (string, error) {
	return getAddr(ctx, c, ProcGetVersAddr, prog, vers, netid)
}

func getAddr(ctx context.Context, c oncrpc.Caller, proc, prog, vers uint32, netid string) (string, error) {
	m := Mapping{Prog: prog, Vers: vers, Netid: netid}
	var r *xdr.Reader
	var err error
	if proc == ProcGetVersAddr {
		r, err = call(ctx, c, Vers4, proc, m.Append(nil))
	} else {
		r, err = rpcbCall(ctx, c, proc, &m)
	}
	if err != nil {
		return "", err
	}
	a := r.String(MaxString)
	if err := r.Err(); err != nil {
		return "", fmt.Errorf("rpcbind: bad GETADDR reply: %w", err)
	}
	if a == "" {
		return "", ErrNotRegistered
	}
	return a, nil
}

// GetAddrList returns every address of prog and vers (RPCBPROC_GETADDRLIST,
// version 4).
func GetAddrList(ctx context.Context, c oncrpc.Caller, prog, vers uint32) ([]Entry, error) {
	m := Mapping{Prog: prog, Vers: vers}
	r, err := call(ctx, c, Vers4, ProcGetAddrList, m.Append(nil))
	if err != nil {
		return nil, err
	}
	return DecodeEntryList(r)
}

// Dump returns rpcbind's whole table (RPCBPROC_DUMP, version 4 or else 3).
func Dump(ctx context.Context, c oncrpc.Caller) ([]Mapping, error) {
	r, err := rpcbCall(ctx, c, ProcDump, nil)
	if err != nil {
		return nil, err
	}
	return DecodeRPCBList(r)
}

// GetTime returns the server's time in seconds since the epoch
// (RPCBPROC_GETTIME).
func GetTime(ctx context.Context, c oncrpc.Caller) (uint32, error) {
	r, err := rpcbCall(ctx, c, ProcGetTime, nil)
	if err != nil {
		return 0, err
	}
	t := r.Uint32()
	return t, r.Err()
}

// Set registers m (RPCBPROC_SET), as libtirpc's rpcb_set does: version 4,
// else version 3, else, for a "tcp" or "udp" mapping, PMAPPROC_SET version
// 2. One table backs every version on the server, so registering through
// one version is enough. It returns the server's answer: false when the
// mapping exists already or the server refused it.
func Set(ctx context.Context, c oncrpc.Caller, m Mapping) (bool, error) {
	r, err := rpcbCall(ctx, c, ProcSet, &m)
	if isProgMismatch(err) {
		pm, perr := pmapOf(m)
		if perr != nil {
			return false, err
		}
		return PmapSet(ctx, c, pm)
	}
	if err != nil {
		return false, err
	}
	return decodeBool(r)
}

// Unset removes the registration of prog and vers on netid (every netid
// when empty) with RPCBPROC_UNSET, falling back like Set (version 2 removes
// both tcp and udp).
func Unset(ctx context.Context, c oncrpc.Caller, prog, vers uint32, netid string) (bool, error) {
	m := Mapping{Prog: prog, Vers: vers, Netid: netid}
	r, err := rpcbCall(ctx, c, ProcUnset, &m)
	if isProgMismatch(err) {
		return PmapUnset(ctx, c, prog, vers)
	}
	if err != nil {
		return false, err
	}
	return decodeBool(r)
}

// pmapOf converts a tcp or udp mapping to a version 2 one.
func pmapOf(m Mapping) (PortMapping, error) {
	prot := uint32(0)
	switch m.Netid {
	case NetidTCP:
		prot = ProtoTCP
	case NetidUDP:
		prot = ProtoUDP
	default:
		return PortMapping{}, fmt.Errorf("rpcbind: netid %q has no version 2 form", m.Netid)
	}
	ap, err := ParseUaddr(m.Addr)
	if err != nil {
		return PortMapping{}, err
	}
	return PortMapping{Prog: m.Prog, Vers: m.Vers, Prot: prot, Port: uint32(ap.Port())}, nil
}

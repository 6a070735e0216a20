package rpcbind

import (
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Program number, versions and well-known port (RFC 1833 sections 2.2 and
// 3).
const (
	Prog     = 100000
	VersPmap = 2 // PMAP_VERS, the portmapper protocol (RFC 1833 section 3)
	Vers3    = 3 // RPCBVERS (RFC 1833 section 2.2)
	Vers4    = 4 // RPCBVERS4 (RFC 1833 section 2.2)
	Port     = 111
)

// Portmapper procedures, version 2 (RFC 1833 section 3.2).
const (
	PmapProcNull    = 0
	PmapProcSet     = 1
	PmapProcUnset   = 2
	PmapProcGetPort = 3
	PmapProcDump    = 4
	PmapProcCallit  = 5
)

// rpcbind procedures, versions 3 and 4 (RFC 1833 section 2.2).
const (
	ProcNull        = 0
	ProcSet         = 1
	ProcUnset       = 2
	ProcGetAddr     = 3
	ProcDump        = 4
	ProcCallit      = 5 // RPCBPROC_CALLIT in v3, RPCBPROC_BCAST in v4
	ProcGetTime     = 6
	ProcUaddr2Taddr = 7
	ProcTaddr2Uaddr = 8
	ProcGetVersAddr = 9  // v4 only
	ProcIndirect    = 10 // v4 only
	ProcGetAddrList = 11 // v4 only
	ProcGetStat     = 12 // v4 only
)

// MaxString bounds each string of an rpcb argument (netid, universal
// address, owner) on input. RFC 1833 leaves them unbounded; the longest
// IPv6 universal address is 53 bytes.
const MaxString = 255

// pmapSize and minRPCBSize are the smallest encodings of a pmap and an rpcb
// (three empty strings), used to bound list decoding.
const (
	pmapSize    = 16
	minRPCBSize = 20
)

// PortMapping is struct pmap, RFC 1833 section 3.1: a version 2
// registration. Prot is ProtoTCP or ProtoUDP.
type PortMapping struct {
	Prog, Vers, Prot, Port uint32
}

// Append appends the XDR form of m.
func (m *PortMapping) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, m.Prog)
	b = xdr.AppendUint32(b, m.Vers)
	b = xdr.AppendUint32(b, m.Prot)
	return xdr.AppendUint32(b, m.Port)
}

// Decode decodes a pmap.
func (m *PortMapping) Decode(r *xdr.Reader) error {
	m.Prog = r.Uint32()
	m.Vers = r.Uint32()
	m.Prot = r.Uint32()
	m.Port = r.Uint32()
	return r.Err()
}

// Mapping is struct rpcb, RFC 1833 section 2.1: a version 3 and 4
// registration. Addr is a universal address (see FormatUaddr) and Owner is
// informational.
type Mapping struct {
	Prog, Vers uint32
	Netid      string
	Addr       string
	Owner      string
}

// NewMapping returns the mapping of prog and vers on netid at the wildcard
// address of port (see AnyUaddr).
func NewMapping(prog, vers uint32, netid string, port uint16) Mapping {
	return Mapping{Prog: prog, Vers: vers, Netid: netid, Addr: AnyUaddr(netid, port)}
}

// Append appends the XDR form of m.
func (m *Mapping) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, m.Prog)
	b = xdr.AppendUint32(b, m.Vers)
	b = xdr.AppendString(b, m.Netid)
	b = xdr.AppendString(b, m.Addr)
	return xdr.AppendString(b, m.Owner)
}

// Decode decodes an rpcb, each string at most MaxString bytes.
func (m *Mapping) Decode(r *xdr.Reader) error {
	m.Prog = r.Uint32()
	m.Vers = r.Uint32()
	m.Netid = r.String(MaxString)
	m.Addr = r.String(MaxString)
	m.Owner = r.String(MaxString)
	return r.Err()
}

// AppendPmapList appends a pmaplist_ptr (RFC 1833 section 3.1): each entry
// preceded by TRUE, the list closed by FALSE.
func AppendPmapList(b []byte, l []PortMapping) []byte {
	for i := range l {
		b = xdr.AppendBool(b, true)
		b = l[i].Append(b)
	}
	return xdr.AppendBool(b, false)
}

// DecodePmapList decodes a pmaplist_ptr.
func DecodePmapList(r *xdr.Reader) ([]PortMapping, error) {
	var l []PortMapping
	for r.Bool() {
		if r.Len() < pmapSize {
			r.SetErr(xdr.ErrShort)
			break
		}
		var m PortMapping
		m.Decode(r)
		l = append(l, m)
	}
	return l, r.Err()
}

// AppendRPCBList appends an rpcblist_ptr (RFC 1833 section 2.1, struct
// rp__list).
func AppendRPCBList(b []byte, l []Mapping) []byte {
	for i := range l {
		b = xdr.AppendBool(b, true)
		b = l[i].Append(b)
	}
	return xdr.AppendBool(b, false)
}

// DecodeRPCBList decodes an rpcblist_ptr.
func DecodeRPCBList(r *xdr.Reader) ([]Mapping, error) {
	var l []Mapping
	for r.Bool() {
		if r.Len() < minRPCBSize {
			r.SetErr(xdr.ErrShort)
			break
		}
		var m Mapping
		m.Decode(r)
		l = append(l, m)
	}
	return l, r.Err()
}

// Transport semantics of struct rpcb_entry (RFC 1833 section 2.1, the
// NC_TPI_* values of netconfig).
const (
	SemanticsCLTS    = 1 // connectionless (UDP)
	SemanticsCOTS    = 2
	SemanticsCOTSOrd = 3 // connection-oriented with orderly release (TCP)
)

// Entry is struct rpcb_entry, RFC 1833 section 2.1: one address of a
// service as returned by RPCBPROC_GETADDRLIST (version 4).
type Entry struct {
	MAddr     string // r_maddr, merged universal address
	Netid     string // r_nc_netid
	Semantics uint32 // r_nc_semantics
	ProtoFmly string // r_nc_protofmly, "inet" or "inet6"
	Proto     string // r_nc_proto, "tcp", "udp" or "rdma"
}

// Append appends the XDR form of e.
func (e *Entry) Append(b []byte) []byte {
	b = xdr.AppendString(b, e.MAddr)
	b = xdr.AppendString(b, e.Netid)
	b = xdr.AppendUint32(b, e.Semantics)
	b = xdr.AppendString(b, e.ProtoFmly)
	return xdr.AppendString(b, e.Proto)
}

// Decode decodes an rpcb_entry.
func (e *Entry) Decode(r *xdr.Reader) error {
	e.MAddr = r.String(MaxString)
	e.Netid = r.String(MaxString)
	e.Semantics = r.Uint32()
	e.ProtoFmly = r.String(MaxString)
	e.Proto = r.String(MaxString)
	return r.Err()
}

// AppendEntryList appends an rpcb_entry_list_ptr (RFC 1833 section 2.1).
func AppendEntryList(b []byte, l []Entry) []byte {
	for i := range l {
		b = xdr.AppendBool(b, true)
		b = l[i].Append(b)
	}
	return xdr.AppendBool(b, false)
}

// DecodeEntryList decodes an rpcb_entry_list_ptr.
func DecodeEntryList(r *xdr.Reader) ([]Entry, error) {
	var l []Entry
	for r.Bool() {
		if r.Len() < minRPCBSize {
			r.SetErr(xdr.ErrShort)
			break
		}
		var e Entry
		e.Decode(r)
		l = append(l, e)
	}
	return l, r.Err()
}

// entryFor describes netid for an rpcb_entry.
func entryFor(netid, maddr string) Entry {
	e := Entry{MAddr: maddr, Netid: netid, ProtoFmly: "inet", Semantics: SemanticsCOTSOrd, Proto: "-"}
	inet, v6 := isInetNetid(netid)
	if v6 {
		e.ProtoFmly = "inet6"
	}
	if !inet {
		e.ProtoFmly = "-"
	}
	switch netid {
	case NetidTCP, NetidTCP6:
		e.Proto = "tcp"
	case NetidUDP, NetidUDP6:
		e.Proto, e.Semantics = "udp", SemanticsCLTS
	case NetidRDMA, NetidRDMA6:
		e.Proto = "rdma"
	}
	return e
}

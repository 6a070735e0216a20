package rpcbind

import (
	"context"
	"net/netip"
	"time"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Program returns the static program table of portmapper version 2 and
// rpcbind versions 3 and 4 over r, for an oncrpc.Dispatcher.
//
// Procedures answered with PROC_UNAVAIL (their table entries have no
// handler):
//   - PMAPPROC_CALLIT, RPCBPROC_CALLIT, RPCBPROC_BCAST and
//     RPCBPROC_INDIRECT: rpcbind(8) as shipped by distributions is built
//     without remote calls, because forwarding lets anyone bounce calls off
//     the host; it answers them PROC_UNAVAIL too.
//   - RPCBPROC_UADDR2TADDR and RPCBPROC_TADDR2UADDR: a netbuf holds a
//     host-specific sockaddr, meaningless across hosts; the address helpers
//     of this package do the conversion locally.
//   - RPCBPROC_GETSTAT: no statistics are kept.
//
// SET and UNSET are honoured only from loopback callers; others get FALSE,
// as rpcbind's check_access does.
func (r *Registry) Program() *oncrpc.Program {
	h := &handlers{reg: r, now: time.Now}
	return &oncrpc.Program{
		Prog: Prog,
		Name: "rpcbind",
		Versions: []oncrpc.Version{
			{Vers: VersPmap, Procs: []oncrpc.Procedure{
				PmapProcNull:    {Name: "PMAPPROC_NULL", Handler: null, Idempotent: true},
				PmapProcSet:     {Name: "PMAPPROC_SET", Handler: h.pmapSet, Idempotent: true},
				PmapProcUnset:   {Name: "PMAPPROC_UNSET", Handler: h.pmapUnset, Idempotent: true},
				PmapProcGetPort: {Name: "PMAPPROC_GETPORT", Handler: h.pmapGetPort, Idempotent: true},
				PmapProcDump:    {Name: "PMAPPROC_DUMP", Handler: h.pmapDump, Idempotent: true},
				PmapProcCallit:  {Name: "PMAPPROC_CALLIT"},
			}},
			{Vers: Vers3, Procs: []oncrpc.Procedure{
				ProcNull:        {Name: "RPCBPROC_NULL", Handler: null, Idempotent: true},
				ProcSet:         {Name: "RPCBPROC_SET", Handler: h.set, Idempotent: true},
				ProcUnset:       {Name: "RPCBPROC_UNSET", Handler: h.unset, Idempotent: true},
				ProcGetAddr:     {Name: "RPCBPROC_GETADDR", Handler: h.getAddr, Idempotent: true},
				ProcDump:        {Name: "RPCBPROC_DUMP", Handler: h.dump, Idempotent: true},
				ProcCallit:      {Name: "RPCBPROC_CALLIT"},
				ProcGetTime:     {Name: "RPCBPROC_GETTIME", Handler: h.getTime, Idempotent: true},
				ProcUaddr2Taddr: {Name: "RPCBPROC_UADDR2TADDR"},
				ProcTaddr2Uaddr: {Name: "RPCBPROC_TADDR2UADDR"},
			}},
			{Vers: Vers4, Procs: []oncrpc.Procedure{
				ProcNull:        {Name: "RPCBPROC_NULL", Handler: null, Idempotent: true},
				ProcSet:         {Name: "RPCBPROC_SET", Handler: h.set, Idempotent: true},
				ProcUnset:       {Name: "RPCBPROC_UNSET", Handler: h.unset, Idempotent: true},
				ProcGetAddr:     {Name: "RPCBPROC_GETADDR", Handler: h.getAddr, Idempotent: true},
				ProcDump:        {Name: "RPCBPROC_DUMP", Handler: h.dump, Idempotent: true},
				ProcCallit:      {Name: "RPCBPROC_BCAST"},
				ProcGetTime:     {Name: "RPCBPROC_GETTIME", Handler: h.getTime, Idempotent: true},
				ProcUaddr2Taddr: {Name: "RPCBPROC_UADDR2TADDR"},
				ProcTaddr2Uaddr: {Name: "RPCBPROC_TADDR2UADDR"},
				ProcGetVersAddr: {Name: "RPCBPROC_GETVERSADDR", Handler: h.getVersAddr, Idempotent: true},
				ProcIndirect:    {Name: "RPCBPROC_INDIRECT"},
				ProcGetAddrList: {Name: "RPCBPROC_GETADDRLIST", Handler: h.getAddrList, Idempotent: true},
				ProcGetStat:     {Name: "RPCBPROC_GETSTAT"},
			}},
		},
	}
}

type handlers struct {
	reg *Registry
	now func() time.Time
}

func null(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }

// fromLoopback reports whether the caller may change the registry.
func fromLoopback(call *oncrpc.Call) bool {
	return call.Conn != nil && call.Conn.Remote.Addr().Unmap().IsLoopback()
}

// DecodePmapArgs decodes the pmap argument of PMAPPROC_SET, UNSET and
// GETPORT. Trailing bytes are ignored, as rpcgen's decoders do.
func DecodePmapArgs(args []byte) (PortMapping, error) {
	var m PortMapping
	err := m.Decode(xdr.NewReader(args))
	return m, err
}

// DecodeRPCBArgs decodes the rpcb argument of RPCBPROC_SET, UNSET, GETADDR,
// GETVERSADDR and GETADDRLIST. Trailing bytes are ignored.
func DecodeRPCBArgs(args []byte) (Mapping, error) {
	var m Mapping
	err := m.Decode(xdr.NewReader(args))
	return m, err
}

func pmapNetid(prot uint32) string {
	switch prot {
	case ProtoTCP:
		return NetidTCP
	case ProtoUDP:
		return NetidUDP
	}
	return ""
}

func (h *handlers) pmapSet(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodePmapArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	netid := pmapNetid(m.Prot)
	ok := fromLoopback(call) && netid != "" && m.Port <= 0xffff &&
		h.reg.Set(Mapping{Prog: m.Prog, Vers: m.Vers, Netid: netid, Addr: AnyUaddr(netid, uint16(m.Port)), Owner: "unknown"})
	reply.Head = xdr.AppendBool(reply.Head, ok)
	return nil
}

// pmapUnset removes the tcp and udp entries whatever pm_prot says (RFC
// 1833 section 3.2: "The protocol and port number fields of the argument
// are ignored").
func (h *handlers) pmapUnset(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodePmapArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	ok := false
	if fromLoopback(call) {
		t := h.reg.Unset(m.Prog, m.Vers, NetidTCP)
		u := h.reg.Unset(m.Prog, m.Vers, NetidUDP)
		ok = t || u
	}
	reply.Head = xdr.AppendBool(reply.Head, ok)
	return nil
}

func (h *handlers) pmapGetPort(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodePmapArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	var port uint32
	if netid := pmapNetid(m.Prot); netid != "" {
		if e, ok := h.reg.find(m.Prog, m.Vers, netid, true); ok {
			if ap, err := ParseUaddr(e.Addr); err == nil {
				port = uint32(ap.Port())
			}
		}
	}
	reply.Head = xdr.AppendUint32(reply.Head, port)
	return nil
}

func (h *handlers) pmapDump(_ context.Context, _ *oncrpc.Call, reply *oncrpc.Reply) error {
	reply.Head = AppendPmapList(reply.Head, h.reg.pmapEntries())
	return nil
}

func (h *handlers) set(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodeRPCBArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	if m.Owner == "" {
		m.Owner = "unknown"
	}
	ok := fromLoopback(call) && h.reg.Set(m)
	reply.Head = xdr.AppendBool(reply.Head, ok)
	return nil
}

func (h *handlers) unset(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodeRPCBArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	ok := fromLoopback(call) && h.reg.Unset(m.Prog, m.Vers, m.Netid)
	reply.Head = xdr.AppendBool(reply.Head, ok)
	return nil
}

// callNetid is the netid GETADDR looks in: r_netid, or when it is empty
// the netid of the transport the call came on.
func callNetid(m *Mapping, call *oncrpc.Call) string {
	if m.Netid != "" || call.Conn == nil {
		return m.Netid
	}
	a := call.Conn.Remote.Addr()
	return Netid(call.Conn.Transport, a.Is6() && !a.Is4In6())
}

func (h *handlers) lookupAddr(call *oncrpc.Call, anyVers bool) (string, error) {
	m, err := DecodeRPCBArgs(call.Args)
	if err != nil {
		return "", oncrpc.ErrGarbageArgs
	}
	e, ok := h.reg.find(m.Prog, m.Vers, callNetid(&m, call), anyVers)
	if !ok {
		return "", nil
	}
	var local netip.AddrPort
	if call.Conn != nil {
		local = call.Conn.Local
	}
	return mergeAddr(e.Addr, local), nil
}

// getAddr answers RPCBPROC_GETADDR: the address of prog on netid, of vers
// if registered and else of another version; "" when prog is not there.
func (h *handlers) getAddr(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	a, err := h.lookupAddr(call, true)
	if err != nil {
		return err
	}
	reply.Head = xdr.AppendString(reply.Head, a)
	return nil
}

// getVersAddr answers RPCBPROC_GETVERSADDR: like GETADDR, but only for the
// exact version (RFC 1833 section 2.2).
func (h *handlers) getVersAddr(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	a, err := h.lookupAddr(call, false)
	if err != nil {
		return err
	}
	reply.Head = xdr.AppendString(reply.Head, a)
	return nil
}

func (h *handlers) dump(_ context.Context, _ *oncrpc.Call, reply *oncrpc.Reply) error {
	reply.Head = AppendRPCBList(reply.Head, h.reg.Dump())
	return nil
}

func (h *handlers) getTime(_ context.Context, _ *oncrpc.Call, reply *oncrpc.Reply) error {
	reply.Head = xdr.AppendUint32(reply.Head, uint32(h.now().Unix()))
	return nil
}

// getAddrList answers RPCBPROC_GETADDRLIST with every address of exactly
// prog and vers, on every netid (r_netid and r_addr of the argument are
// ignored), wildcard hosts merged with the address the call came to.
func (h *handlers) getAddrList(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
	m, err := DecodeRPCBArgs(call.Args)
	if err != nil {
		return oncrpc.ErrGarbageArgs
	}
	var local netip.AddrPort
	if call.Conn != nil {
		local = call.Conn.Local
	}
	var out []Entry
	for _, e := range h.reg.list(m.Prog, m.Vers) {
		out = append(out, entryFor(e.Netid, mergeAddr(e.Addr, local)))
	}
	reply.Head = AppendEntryList(reply.Head, out)
	return nil
}

package rpcbind

import (
	"net/netip"
	"sync"
)

// Registry is the table of registered services, shared by portmapper
// version 2 and rpcbind versions 3 and 4 as in rpcbind(8): a version 2 SET
// of TCP or UDP becomes the "tcp" or "udp" entry, and version 2 GETPORT and
// DUMP see only those entries. It is safe for concurrent use.
//
// Entries are kept in registration order and keyed by (program, version,
// netid): a second Set of the same key fails, as RFC 1833 section 2.2
// requires ("if the mapping already exists, the call fails").
type Registry struct {
	mu      sync.RWMutex
	entries []Mapping
}

// MaxEntries bounds the registry, so loopback callers cannot grow it
// without limit.
const MaxEntries = 4096

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Set adds m. It returns false when an entry for m's program, version and
// netid already exists, when Netid or Addr is empty, or when the netid is an
// IP one and Addr is not a universal address of its address family, and
// when the registry holds MaxEntries entries.
func (r *Registry) Set(m Mapping) bool {
	if m.Netid == "" || m.Addr == "" {
		return false
	}
	if inet, v6 := isInetNetid(m.Netid); inet {
		ap, err := ParseUaddr(m.Addr)
		if err != nil || ap.Addr().Is6() != v6 {
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.Prog == m.Prog && e.Vers == m.Vers && e.Netid == m.Netid {
			return false
		}
	}
	if len(r.entries) >= MaxEntries {
		return false
	}
	r.entries = append(r.entries, m)
	return true
}

// Unset removes the entries of prog and vers on netid, or on every netid
// when netid is empty (as rpcbind's map_unset does). It reports whether
// anything was removed.
func (r *Registry) Unset(prog, vers uint32, netid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.entries[:0]
	removed := false
	for _, e := range r.entries {
		if e.Prog == prog && e.Vers == vers && (netid == "" || e.Netid == netid) {
			removed = true
			continue
		}
		kept = append(kept, e)
	}
	clear(r.entries[len(kept):])
	r.entries = kept
	return removed
}

// Lookup returns the entry of exactly prog, vers and netid.
func (r *Registry) Lookup(prog, vers uint32, netid string) (Mapping, bool) {
	return r.find(prog, vers, netid, false)
}

// find looks prog and vers up on netid. With anyVers, when vers is not
// registered it returns another version of prog on netid (the latest one
// registered), which is what GETPORT and GETADDR answer (RFC 1833 section
// 2.2: "the address of some other version"; rpcbind's find_service).
func (r *Registry) find(prog, vers uint32, netid string, anyVers bool) (Mapping, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var hit Mapping
	found := false
	for _, e := range r.entries {
		if e.Prog != prog || e.Netid != netid {
			continue
		}
		if e.Vers == vers {
			return e, true
		}
		if anyVers {
			hit, found = e, true
		}
	}
	return hit, found
}

// Dump returns a copy of every entry in registration order.
func (r *Registry) Dump() []Mapping {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Mapping(nil), r.entries...)
}

// list returns the entries of prog and vers, for GETADDRLIST.
func (r *Registry) list(prog, vers uint32) []Mapping {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Mapping
	for _, e := range r.entries {
		if e.Prog == prog && e.Vers == vers {
			out = append(out, e)
		}
	}
	return out
}

// pmapEntries returns the entries visible to version 2: "tcp" and "udp"
// ones with a valid IPv4 universal address.
func (r *Registry) pmapEntries() []PortMapping {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []PortMapping
	for _, e := range r.entries {
		var prot uint32
		switch e.Netid {
		case NetidTCP:
			prot = ProtoTCP
		case NetidUDP:
			prot = ProtoUDP
		default:
			continue
		}
		ap, err := ParseUaddr(e.Addr)
		if err != nil {
			continue
		}
		out = append(out, PortMapping{Prog: e.Prog, Vers: e.Vers, Prot: prot, Port: uint32(ap.Port())})
	}
	return out
}

// mergeAddr replaces a wildcard host in the registered address uaddr with
// local, the address the caller reached us on, so the caller gets an
// address it can use (rpcbind's mergeaddr). Anything else is returned as is.
func mergeAddr(uaddr string, local netip.AddrPort) string {
	ap, err := ParseUaddr(uaddr)
	if err != nil || !ap.Addr().IsUnspecified() || !local.Addr().IsValid() {
		return uaddr
	}
	l := local.Addr()
	if ap.Addr().Is4() {
		l = l.Unmap()
		if !l.Is4() {
			return uaddr
		}
	} else if l.Is4() {
		return uaddr
	}
	return FormatUaddr(netip.AddrPortFrom(l, ap.Port()))
}

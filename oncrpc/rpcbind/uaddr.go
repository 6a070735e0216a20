package rpcbind

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Network identifiers (netids) of the transports this package knows about,
// from the IANA registry set up by RFC 5665 section 5.1. "rdma" and "rdma6"
// are RPC-over-RDMA (RFC 8166) over IPv4 and IPv6 addressing.
const (
	NetidTCP   = "tcp"
	NetidUDP   = "udp"
	NetidTCP6  = "tcp6"
	NetidUDP6  = "udp6"
	NetidRDMA  = "rdma"
	NetidRDMA6 = "rdma6"
)

// IP protocol numbers used by the version 2 pmap structure (RFC 1833
// section 3.1: IPPROTO_TCP and IPPROTO_UDP).
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// Netid returns the netid of transport t over IPv4 (v6 false) or IPv6
// addressing, or "" for an unknown transport.
func Netid(t oncrpc.Transport, v6 bool) string {
	var n string
	switch t {
	case oncrpc.TCP:
		n = NetidTCP
	case oncrpc.UDP:
		n = NetidUDP
	case oncrpc.RDMA:
		n = NetidRDMA
	default:
		return ""
	}
	if v6 {
		n += "6"
	}
	return n
}

// isInetNetid reports whether netid names an IP transport whose universal
// addresses have the "host.p1.p2" form, and whether it is an IPv6 one.
func isInetNetid(netid string) (inet, v6 bool) {
	switch netid {
	case NetidTCP, NetidUDP, NetidRDMA:
		return true, false
	case NetidTCP6, NetidUDP6, NetidRDMA6:
		return true, true
	}
	return false, false
}

// FormatUaddr returns the universal address of ap (RFC 5665 section 5.2.3,
// RFC 1833 section 2.2): "h1.h2.h3.h4.p1.p2" for IPv4 and the RFC 4291 text
// form followed by ".p1.p2" for IPv6, where p1 and p2 are the high and low
// bytes of the port in decimal. An IPv6 zone is dropped (universal addresses
// have none). It returns "" for an invalid address.
func FormatUaddr(ap netip.AddrPort) string {
	a := ap.Addr()
	if !a.IsValid() {
		return ""
	}
	p := ap.Port()
	b := make([]byte, 0, 48)
	b = a.WithZone("").AppendTo(b)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(p>>8), 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(p&0xff), 10)
	return string(b)
}

// ErrBadUaddr reports a string that is not an IP universal address.
var ErrBadUaddr = errors.New("rpcbind: malformed universal address")

// ParseUaddr parses an IPv4 or IPv6 universal address (see FormatUaddr).
// The two port parts must be decimal numbers from 0 to 255 without sign or
// leading zeros; zones are rejected.
func ParseUaddr(s string) (netip.AddrPort, error) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return netip.AddrPort{}, ErrBadUaddr
	}
	lo, ok := portPart(s[i+1:])
	if !ok {
		return netip.AddrPort{}, ErrBadUaddr
	}
	s = s[:i]
	i = strings.LastIndexByte(s, '.')
	if i < 0 {
		return netip.AddrPort{}, ErrBadUaddr
	}
	hi, ok := portPart(s[i+1:])
	if !ok {
		return netip.AddrPort{}, ErrBadUaddr
	}
	host := s[:i]
	if strings.IndexByte(host, '%') >= 0 {
		return netip.AddrPort{}, ErrBadUaddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, ErrBadUaddr
	}
	return netip.AddrPortFrom(a, uint16(hi)<<8|uint16(lo)), nil
}

func portPart(s string) (uint8, bool) {
	if len(s) == 0 || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 255 {
		return 0, false
	}
	return uint8(n), true
}

// AnyUaddr returns the wildcard universal address for port on netid's
// address family: "0.0.0.0.p1.p2" or "::.p1.p2", the form services
// listening on every address register.
func AnyUaddr(netid string, port uint16) string {
	if _, v6 := isInetNetid(netid); v6 {
		return FormatUaddr(netip.AddrPortFrom(netip.IPv6Unspecified(), port))
	}
	return FormatUaddr(netip.AddrPortFrom(netip.IPv4Unspecified(), port))
}

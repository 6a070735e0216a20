package rpcbind_test

import (
	"net/netip"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
)

func TestUaddr(t *testing.T) {
	for _, c := range []struct {
		uaddr string
		ap    string // "" means malformed
		canon string // formatted form when it differs from uaddr
	}{
		{"127.0.0.1.0.111", "127.0.0.1:111", ""},
		{"0.0.0.0.8.1", "0.0.0.0:2049", ""},
		{"192.0.2.10.78.81", "192.0.2.10:20049", ""},
		{"10.0.0.1.255.255", "10.0.0.1:65535", ""},
		{"10.0.0.1.0.0", "10.0.0.1:0", ""},
		{"::.0.111", "[::]:111", ""},
		{"::1.8.1", "[::1]:2049", ""},
		{"fe80::1:2.78.81", "[fe80::1:2]:20049", ""},
		{"2001:db8:0:0:0:0:0:1.8.1", "[2001:db8::1]:2049", "2001:db8::1.8.1"},
		{"::ffff:192.0.2.1.0.111", "[::ffff:192.0.2.1]:111", ""},
		{"", "", ""},
		{"127.0.0.1", "", ""},     // no port
		{"127.0.0.1.8", "", ""},   // one port part
		{"1.2.3.8.1", "", ""},     // three-part host
		{"1.2.3.4.256.1", "", ""}, // port part out of range
		{"1.2.3.4.8.-1", "", ""},
		{"1.2.3.4.8.+1", "", ""},
		{"1.2.3.4.08.1", "", ""}, // leading zero
		{"1.2.3.4..1", "", ""},
		{"1.2.3.4.8.", "", ""},
		{"1.2.3.4.8.1 ", "", ""},
		{"fe80::1%eth0.8.1", "", ""}, // zones are not universal
		{"host.example.8.1", "", ""},
		{"[::1].8.1", "", ""},
		{"1.2.3.4:2049", "", ""},
	} {
		ap, err := rpcbind.ParseUaddr(c.uaddr)
		if c.ap == "" {
			if err == nil {
				t.Errorf("ParseUaddr(%q) = %v, want error", c.uaddr, ap)
			}
			continue
		}
		if err != nil || ap != netip.MustParseAddrPort(c.ap) {
			t.Errorf("ParseUaddr(%q) = %v, %v, want %s", c.uaddr, ap, err, c.ap)
			continue
		}
		want := c.uaddr
		if c.canon != "" {
			want = c.canon
		}
		if got := rpcbind.FormatUaddr(ap); got != want {
			t.Errorf("FormatUaddr(%v) = %q, want %q", ap, got, want)
		}
	}
	if got := rpcbind.FormatUaddr(netip.MustParseAddrPort("[fe80::1%eth0]:2049")); got != "fe80::1.8.1" {
		t.Errorf("zone kept: %q", got)
	}
	if got := rpcbind.FormatUaddr(netip.AddrPort{}); got != "" {
		t.Errorf("invalid address formatted as %q", got)
	}
}

func TestNetidAndAnyUaddr(t *testing.T) {
	for _, c := range []struct {
		t    oncrpc.Transport
		v6   bool
		want string
	}{
		{oncrpc.TCP, false, "tcp"}, {oncrpc.UDP, false, "udp"}, {oncrpc.RDMA, false, "rdma"},
		{oncrpc.TCP, true, "tcp6"}, {oncrpc.UDP, true, "udp6"}, {oncrpc.RDMA, true, "rdma6"},
		{oncrpc.Transport(0), false, ""},
	} {
		if got := rpcbind.Netid(c.t, c.v6); got != c.want {
			t.Errorf("Netid(%v, %v) = %q, want %q", c.t, c.v6, got, c.want)
		}
	}
	if got := rpcbind.AnyUaddr("rdma", 20049); got != "0.0.0.0.78.81" {
		t.Errorf("AnyUaddr(rdma) = %q", got)
	}
	if got := rpcbind.AnyUaddr("tcp6", 2049); got != "::.8.1" {
		t.Errorf("AnyUaddr(tcp6) = %q", got)
	}
}

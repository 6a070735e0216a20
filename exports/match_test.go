package exports_test

import (
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

func TestMatch(t *testing.T) {
	const file = `
/v4   192.0.2.1(rw) 10.0.0.0/8(all_squash) 172.16.0.0/255.240.0.0(insecure)
/v6   2001:db8::1(rw) fd00::/64(all_squash) 2001:db8:1::/ffff:ffff:ffff::(insecure)
/host alpha.lab.example(rw) beta.lab.example(all_squash) nosuch.example(insecure)
/wild *.LAB.example(rw) node[0-9].hpc.example(all_squash) gamma.*.example(insecure) *(no_root_squash)
/neg  host[!a-z].lab.example
/first 10.1.0.0/16(rw) 10.0.0.0/8(all_squash) *(insecure)
/star *
`
	cases := []struct {
		export, client string
		want           string // the matching rule's Spec, "" for none
	}{
		{"/v4", "192.0.2.1", "192.0.2.1"},
		{"/v4", "192.0.2.2", ""},
		{"/v4", "10.255.0.1", "10.0.0.0/8"},
		{"/v4", "11.0.0.1", ""},
		{"/v4", "172.31.255.255", "172.16.0.0/255.240.0.0"},
		{"/v4", "172.32.0.1", ""},
		{"/v4", "::ffff:10.0.0.1", "10.0.0.0/8"}, // v4-mapped from a dual-stack listener
		{"/v4", "::ffff:192.0.2.1", "192.0.2.1"},
		{"/v4", "::1", ""},
		{"/v6", "2001:db8::1", "2001:db8::1"},
		{"/v6", "2001:db8::2", ""},
		{"/v6", "fd00::abcd", "fd00::/64"},
		{"/v6", "fd00:0:0:1::1", ""},
		{"/v6", "2001:db8:1:ffff::1", "2001:db8:1::/ffff:ffff:ffff::"},
		{"/v6", "fe80::1%eth0", ""},
		{"/v6", "10.0.0.1", ""},
		{"/host", "192.0.2.10", "alpha.lab.example"},
		{"/host", "192.0.2.11", "beta.lab.example"},
		{"/host", "2001:db8::11", "beta.lab.example"},
		{"/host", "192.0.2.12", ""},
		{"/wild", "192.0.2.10", "*.LAB.example"},         // alpha.lab.example
		{"/wild", "2001:db8::11", "*.LAB.example"},       // beta, over IPv6
		{"/wild", "192.0.2.21", "node[0-9].hpc.example"}, // PTR in mixed case
		{"/wild", "198.51.100.7", "gamma.*.example"},
		{"/wild", "203.0.113.99", "*"}, // PTR says alpha.lab.example, forward disagrees
		{"/wild", "203.0.113.1", "*"},  // no PTR at all
		{"/neg", "192.0.2.10", ""},
		{"/first", "10.1.2.3", "10.1.0.0/16"},
		{"/first", "10.2.2.3", "10.0.0.0/8"},
		{"/first", "192.0.2.1", "*"},
		{"/star", "192.0.2.1", "*"},
		{"/star", "::", "*"},
	}
	tab := mustParse(t, file)
	for _, tc := range cases {
		t.Run(tc.export+"/"+tc.client, func(t *testing.T) {
			e := tab.Lookup(tc.export)
			if e == nil {
				t.Fatalf("no export %s", tc.export)
			}
			r, ok := e.Match(netip.MustParseAddr(tc.client))
			got := ""
			if ok {
				got = r.Spec
			} else if r != nil {
				t.Error("no match but a non-nil rule")
			}
			if got != tc.want {
				t.Errorf("Match(%s) = %q, want %q", tc.client, got, tc.want)
			}
		})
	}
}

func TestMatchFirstWinsOptions(t *testing.T) {
	tab := mustParse(t, "/srv 10.1.0.0/16(rw) 10.0.0.0/8(all_squash) 10.1.2.3(no_root_squash)")
	r, ok := tab.Lookup("/srv").Match(netip.MustParseAddr("10.1.2.3"))
	if !ok {
		t.Fatal("no match")
	}
	if r.Spec != "10.1.0.0/16" || r.Options.ReadOnly || r.Options.Squash != exports.RootSquash {
		t.Errorf("got %s(%s), want the first rule", r.Spec, r.Options.String())
	}
}

func TestMatchInvalidAndNil(t *testing.T) {
	tab := mustParse(t, "/srv *")
	if _, ok := tab.Lookup("/srv").Match(netip.Addr{}); ok {
		t.Error("the zero Addr matched")
	}
	var e *exports.Export
	if _, ok := e.Match(netip.MustParseAddr("::1")); ok {
		t.Error("nil export matched")
	}
	var nt *exports.Table
	if nt.Lookup("/srv") != nil {
		t.Error("nil table lookup")
	}
}

// Reverse lookups happen only when a wildcard rule is reached, and are
// cached per table.
func TestMatchReverseLookupCache(t *testing.T) {
	res := testResolver()
	tab, _, err := exports.Parse("exports", strings.NewReader("/srv 192.0.2.10(rw) *.lab.example(ro)"),
		exports.ParseOptions{Resolver: res, StatDir: anyDir})
	if err != nil {
		t.Fatal(err)
	}
	e := tab.Lookup("/srv")
	if _, ok := e.Match(netip.MustParseAddr("192.0.2.10")); !ok {
		t.Fatal("no match")
	}
	if _, rev := res.counts(); rev != 0 {
		t.Errorf("%d reverse lookups before any wildcard rule was reached", rev)
	}
	for range 3 {
		if r, ok := e.Match(netip.MustParseAddr("192.0.2.11")); !ok || r.Spec != "*.lab.example" {
			t.Fatalf("got %v %v", r, ok)
		}
		if _, ok := e.Match(netip.MustParseAddr("203.0.113.1")); ok {
			t.Fatal("203.0.113.1 matched")
		}
	}
	if _, rev := res.counts(); rev != 2 {
		t.Errorf("%d reverse lookups, want 2 (one per address, then cached)", rev)
	}
	// Concurrent matches share the cache safely (run with -race).
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			a := netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i%3)})
			for range 100 {
				e.Match(a)
			}
		})
	}
	wg.Wait()
}

func TestHostResolvedOnceAtLoad(t *testing.T) {
	res := testResolver()
	_, _, err := exports.Parse("exports", strings.NewReader("/a alpha.lab.example\n/b ALPHA.lab.example. *.lab.example\n"),
		exports.ParseOptions{Resolver: res, StatDir: anyDir})
	if err != nil {
		t.Fatal(err)
	}
	if fwd, rev := res.counts(); fwd != 1 || rev != 0 {
		t.Errorf("lookups at load: %d forward (%q), %d reverse; want 1, 0", fwd, res.fwdNames, rev)
	}
}

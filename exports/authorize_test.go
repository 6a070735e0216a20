package exports_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/exports"
)

// TestAuthorize: the first matching rule decides, and its checks run in
// order (client, transport unless NLM, flavor, port), then squashing and
// read-only.
func TestAuthorize(t *testing.T) {
	tab := mustParse(t, "/srv 10.0.0.1(rw,transports=rdma) 10.0.0.2(ro,sec=none) 10.0.0.3(rw,insecure,all_squash,anonuid=7,anongid=8) 10.0.0.0/8(rw)\n")
	e := tab.Lookup("/srv")
	ip := netip.MustParseAddr
	sys := func(addr string, port int, tr exports.Transport) exports.Caller {
		return exports.Caller{Client: ip(addr), Port: port, Transport: tr, Flavor: exports.AuthSys,
			HasUnix: true, UID: 1000, GID: 100, GIDs: []uint32{0, 5}}
	}
	for _, c := range []struct {
		name    string
		caller  exports.Caller
		refusal exports.Refusal
		want    exports.Identity
	}{
		{"no rule", sys("192.168.0.1", 700, exports.TCP), exports.RefusedClient, exports.Identity{}},
		{"mapped IPv6 matches as IPv4", sys("::ffff:10.0.0.9", 700, exports.TCP), exports.Admitted,
			exports.Identity{UID: 1000, GID: 100, GIDs: []uint32{exports.DefaultAnonID, 5}}},
		{"transport excluded", sys("10.0.0.1", 700, exports.TCP), exports.RefusedTransport, exports.Identity{}},
		{"RDMA allowed, any port", sys("10.0.0.1", 40000, exports.RDMA), exports.Admitted,
			exports.Identity{UID: 1000, GID: 100, GIDs: []uint32{exports.DefaultAnonID, 5}}},
		{"flavor outside sec=", sys("10.0.0.2", 700, exports.TCP), exports.RefusedFlavor, exports.Identity{}},
		{"insecure port", sys("10.0.0.9", 40000, exports.TCP), exports.RefusedPort, exports.Identity{}},
		{"all_squash, insecure", sys("10.0.0.3", 40000, exports.TCP), exports.Admitted,
			exports.Identity{UID: 7, GID: 8}},
	} {
		id, refusal := e.Authorize(&c.caller)
		if refusal != c.refusal || id.UID != c.want.UID || id.GID != c.want.GID || !slices.Equal(id.GIDs, c.want.GIDs) || id.ReadOnly != c.want.ReadOnly {
			t.Errorf("%s: %+v, %v; want %+v, %v", c.name, id, refusal, c.want, c.refusal)
		}
	}

	// The lock manager travels over TCP or UDP also for an RDMA-only
	// client: transports= does not apply to it.
	nlm := sys("10.0.0.1", 700, exports.TCP)
	nlm.LockManager = true
	if _, refusal := e.Authorize(&nlm); refusal != exports.Admitted {
		t.Errorf("NLM call of an RDMA-only client: %v, want admitted", refusal)
	}
	// AUTH_NONE carries no identity and runs as the anonymous ids; ro
	// rules answer read-only.
	none := exports.Caller{Client: ip("10.0.0.2"), Port: 700, Transport: exports.TCP, Flavor: exports.AuthNone}
	if id, refusal := e.Authorize(&none); refusal != exports.Admitted || id.UID != exports.DefaultAnonID || id.GID != exports.DefaultAnonID || id.GIDs != nil || !id.ReadOnly {
		t.Errorf("AUTH_NONE: %+v, %v", id, refusal)
	}
	// The caller's groups are never modified.
	c := sys("10.0.0.9", 700, exports.TCP)
	if e.Authorize(&c); c.GIDs[0] != 0 {
		t.Errorf("Authorize modified the caller's groups: %v", c.GIDs)
	}
}

// TestAuthorizeDoesNotAllocate: the rule runs for every handle of every
// NFS call.
func TestAuthorizeDoesNotAllocate(t *testing.T) {
	e := mustParse(t, "/srv 10.0.0.0/8(rw,no_root_squash)\n").Lookup("/srv")
	c := exports.Caller{Client: netip.MustParseAddr("10.0.0.9"), Port: 700, Transport: exports.TCP,
		Flavor: exports.AuthSys, HasUnix: true, UID: 1, GID: 2, GIDs: []uint32{3, 4}}
	if n := testing.AllocsPerRun(100, func() {
		if _, r := e.Authorize(&c); r != exports.Admitted {
			t.Fatal(r)
		}
	}); n != 0 {
		t.Errorf("Authorize: %v allocations per call, want 0", n)
	}
}

// TestAuthorizeMount: MOUNT needs a matching rule and, with secure, a
// reserved port; it returns the rule for its flavors.
func TestAuthorizeMount(t *testing.T) {
	e := mustParse(t, "/srv 10.0.0.1(rw,sec=none:sys) 10.0.0.2(insecure)\n").Lookup("/srv")
	ip := netip.MustParseAddr
	if r, refusal := e.AuthorizeMount(ip("10.0.0.1"), 800); refusal != exports.Admitted || !slices.Equal(r.Options.Flavors, []uint32{exports.AuthNone, exports.AuthSys}) {
		t.Errorf("reserved port: %v, %v", r, refusal)
	}
	if _, refusal := e.AuthorizeMount(ip("10.0.0.1"), 40000); refusal != exports.RefusedPort {
		t.Errorf("unreserved port under secure: %v", refusal)
	}
	if _, refusal := e.AuthorizeMount(ip("10.0.0.2"), 40000); refusal != exports.Admitted {
		t.Errorf("unreserved port under insecure: %v", refusal)
	}
	if _, refusal := e.AuthorizeMount(ip("10.0.0.3"), 800); refusal != exports.RefusedClient {
		t.Errorf("no rule: %v", refusal)
	}
}

// TestForMount: an exported path mounts its export; a directory below
// exports mounts with the export whose path is the longest prefix by
// whole components.
func TestForMount(t *testing.T) {
	tab := mustParse(t, "/ 127.0.0.1(ro)\n/srv 127.0.0.1(ro)\n/srv/data 127.0.0.1(ro)\n/srv/database2 127.0.0.1(ro)\n")
	for _, c := range []struct{ in, export, rest string }{
		{"/srv", "/srv", ""},
		{"/srv/", "/srv", ""},
		{"/srv/data/a/b", "/srv/data", "a/b"},
		{"/srv/datab", "/srv", "datab"},
		{"/srv/database2/x", "/srv/database2", "x"},
		{"/srv/data/../x", "/srv", "x"},
		{"/etc/passwd", "/", "etc/passwd"},
		{"/", "/", ""},
	} {
		e, rest := tab.ForMount(c.in)
		if e == nil || e.Path != c.export || rest != c.rest {
			t.Errorf("ForMount(%q) = %v, %q; want %s, %q", c.in, e, rest, c.export, c.rest)
		}
	}
	tab = mustParse(t, "/srv/data 127.0.0.1(ro)\n")
	for _, p := range []string{"/srv", "/srv/dat", "/srv/data2/x", "/", "relative"} {
		if e, rest := tab.ForMount(p); e != nil {
			t.Errorf("ForMount(%q) = %s, %q; want none", p, e.Path, rest)
		}
	}
	if e, _ := (*exports.Table)(nil).ForMount("/srv"); e != nil {
		t.Errorf("nil table mounted %s", e.Path)
	}
}

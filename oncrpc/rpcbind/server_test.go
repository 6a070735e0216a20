package rpcbind_test

import (
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

func TestRegistry(t *testing.T) {
	r := rpcbind.NewRegistry()
	nfs := rpcbind.NewMapping(100003, 3, "tcp", 2049)
	if !r.Set(nfs) {
		t.Fatal("Set failed")
	}
	if r.Set(nfs) {
		t.Fatal("second Set of the same key succeeded")
	}
	for _, bad := range []rpcbind.Mapping{
		{Prog: 1, Vers: 1, Netid: "", Addr: "0.0.0.0.0.1"},
		{Prog: 1, Vers: 1, Netid: "tcp", Addr: ""},
		{Prog: 1, Vers: 1, Netid: "tcp", Addr: "nonsense"},
		{Prog: 1, Vers: 1, Netid: "tcp", Addr: "::.0.1"},       // IPv6 on an IPv4 netid
		{Prog: 1, Vers: 1, Netid: "udp6", Addr: "1.2.3.4.0.1"}, // and the reverse
	} {
		if r.Set(bad) {
			t.Errorf("Set(%+v) succeeded", bad)
		}
	}
	if !r.Set(rpcbind.Mapping{Prog: 1, Vers: 1, Netid: "local", Addr: "/run/rpcbind.sock"}) {
		t.Error("non-IP netid refused")
	}
	r.Set(rpcbind.NewMapping(100003, 3, "rdma", 20049))
	if m, ok := r.Lookup(100003, 3, "rdma"); !ok || m.Addr != "0.0.0.0.78.81" {
		t.Fatalf("Lookup rdma = %+v, %v", m, ok)
	}
	if _, ok := r.Lookup(100003, 4, "tcp"); ok {
		t.Fatal("Lookup is not exact")
	}
	full := rpcbind.NewRegistry()
	for i := 0; i < rpcbind.MaxEntries; i++ {
		if !full.Set(rpcbind.NewMapping(uint32(i), 1, "udp", 1)) {
			t.Fatalf("Set %d failed", i)
		}
	}
	if full.Set(rpcbind.NewMapping(1<<30, 1, "udp", 1)) {
		t.Fatal("Set beyond MaxEntries succeeded")
	}
	if !r.Unset(100003, 3, "") {
		t.Fatal("Unset of every netid removed nothing")
	}
	if d := r.Dump(); len(d) != 1 || d[0].Netid != "local" {
		t.Fatalf("Dump after Unset = %+v", d)
	}
	if r.Unset(100003, 3, "tcp") {
		t.Fatal("Unset of a missing entry reported success")
	}
}

func word(t testing.TB, res []byte) uint32 {
	t.Helper()
	r := xdr.NewReader(res)
	v := r.Uint32()
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("results %x are not one word", res)
	}
	return v
}

func str(t testing.TB, res []byte) string {
	t.Helper()
	r := xdr.NewReader(res)
	v := r.String(rpcbind.MaxString)
	if r.Err() != nil || r.Len() != 0 {
		t.Fatalf("results %x are not one string", res)
	}
	return v
}

// TestPmapProcedures drives version 2 in process: SET from loopback and
// from elsewhere, GETPORT with the version fallback, UNSET of both
// protocols, CALLIT.
func TestPmapProcedures(t *testing.T) {
	reg := rpcbind.NewRegistry()
	prog := reg.Program()
	udp := rpcbind.PortMapping{Prog: 100005, Vers: 3, Prot: rpcbind.ProtoUDP, Port: 20048}
	tcp := udp
	tcp.Prot, tcp.Port = rpcbind.ProtoTCP, 20049
	if got := word(t, results(t, prog, foreign, 2, rpcbind.PmapProcSet, udp.Append(nil))); got != 0 {
		t.Fatal("SET from a non-loopback caller accepted")
	}
	if len(reg.Dump()) != 0 {
		t.Fatal("refused SET changed the table")
	}
	for _, m := range []rpcbind.PortMapping{udp, tcp} {
		if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcSet, m.Append(nil))); got != 1 {
			t.Fatalf("SET %+v from loopback = %d", m, got)
		}
	}
	if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcSet, udp.Append(nil))); got != 0 {
		t.Fatal("duplicate SET accepted")
	}
	bad := udp
	bad.Prot = 99
	if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcSet, bad.Append(nil))); got != 0 {
		t.Fatal("SET with an unknown protocol accepted")
	}
	bad.Prot, bad.Port = rpcbind.ProtoTCP, 70000
	if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcSet, bad.Append(nil))); got != 0 {
		t.Fatal("SET with port 70000 accepted")
	}
	if m, ok := reg.Lookup(100005, 3, "udp"); !ok || m.Addr != "0.0.0.0.78.80" || m.Owner != "unknown" {
		t.Fatalf("v2 SET stored %+v, %v", m, ok)
	}
	getport := func(vers, prot uint32) uint32 {
		q := rpcbind.PortMapping{Prog: 100005, Vers: vers, Prot: prot}
		return word(t, results(t, prog, foreign, 2, rpcbind.PmapProcGetPort, q.Append(nil)))
	}
	if p := getport(3, rpcbind.ProtoUDP); p != 20048 {
		t.Fatalf("GETPORT udp = %d", p)
	}
	if p := getport(3, rpcbind.ProtoTCP); p != 20049 {
		t.Fatalf("GETPORT tcp = %d", p)
	}
	if p := getport(1, rpcbind.ProtoTCP); p != 20049 {
		t.Fatalf("GETPORT of an unregistered version = %d, want another version's port", p)
	}
	if p := getport(3, 99); p != 0 {
		t.Fatalf("GETPORT with unknown protocol = %d", p)
	}
	unset := rpcbind.PortMapping{Prog: 100005, Vers: 3}
	if got := word(t, results(t, prog, foreign, 2, rpcbind.PmapProcUnset, unset.Append(nil))); got != 0 {
		t.Fatal("UNSET from a non-loopback caller accepted")
	}
	if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcUnset, unset.Append(nil))); got != 1 {
		t.Fatal("UNSET failed")
	}
	if len(reg.Dump()) != 0 {
		t.Fatalf("UNSET left %+v", reg.Dump())
	}
	if got := word(t, results(t, prog, loopback, 2, rpcbind.PmapProcUnset, unset.Append(nil))); got != 0 {
		t.Fatal("second UNSET reported success")
	}
	if st := acceptStat(t, dispatch(t, prog, loopback, 3, 2, rpcbind.PmapProcCallit, nil)); st != oncrpc.ProcUnavail {
		t.Fatalf("CALLIT: %v", st)
	}
}

// TestRPCBProcedures drives versions 3 and 4 in process.
func TestRPCBProcedures(t *testing.T) {
	reg := rpcbind.NewRegistry()
	prog := reg.Program()
	nfsTCP := rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "tcp", Addr: "0.0.0.0.8.1", Owner: "0"}
	nfsRDMA := rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "rdma", Addr: "192.0.2.9.78.81"}
	nfs6 := rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "tcp6", Addr: "::.8.1"}
	for _, vers := range []uint32{3, 4} {
		if got := word(t, results(t, prog, foreign, vers, rpcbind.ProcSet, nfsTCP.Append(nil))); got != 0 {
			t.Fatalf("v%d SET from a non-loopback caller accepted", vers)
		}
	}
	for _, m := range []rpcbind.Mapping{nfsTCP, nfsRDMA, nfs6} {
		if got := word(t, results(t, prog, loopback, 4, rpcbind.ProcSet, m.Append(nil))); got != 1 {
			t.Fatalf("SET %+v = %d", m, got)
		}
	}
	if got := word(t, results(t, prog, loopback, 3, rpcbind.ProcSet, nfsTCP.Append(nil))); got != 0 {
		t.Fatal("v3 SET of a key set through v4 accepted: versions do not share the table")
	}
	if m, _ := reg.Lookup(100003, 3, "rdma"); m.Owner != "unknown" {
		t.Fatalf("empty owner stored as %q", m.Owner)
	}
	getaddr := func(vers, proc, pvers uint32, netid string) string {
		q := rpcbind.Mapping{Prog: 100003, Vers: pvers, Netid: netid}
		return str(t, results(t, prog, foreign, vers, proc, q.Append(nil)))
	}
	// The wildcard host is replaced by the address the call came to.
	if a := getaddr(3, rpcbind.ProcGetAddr, 3, "tcp"); a != "192.0.2.1.8.1" {
		t.Fatalf("v3 GETADDR tcp = %q", a)
	}
	if a := getaddr(4, rpcbind.ProcGetAddr, 3, "rdma"); a != "192.0.2.9.78.81" {
		t.Fatalf("GETADDR rdma = %q", a)
	}
	// An IPv6 wildcard is not merged with an IPv4 local address.
	if a := getaddr(4, rpcbind.ProcGetAddr, 3, "tcp6"); a != "::.8.1" {
		t.Fatalf("GETADDR tcp6 = %q", a)
	}
	// Empty netid: the call's own transport (tcp here).
	if a := getaddr(4, rpcbind.ProcGetAddr, 3, ""); a != "192.0.2.1.8.1" {
		t.Fatalf("GETADDR with empty netid = %q", a)
	}
	if a := getaddr(4, rpcbind.ProcGetAddr, 4, "tcp"); a != "192.0.2.1.8.1" {
		t.Fatalf("GETADDR of another version = %q, want v3's address", a)
	}
	if a := getaddr(4, rpcbind.ProcGetVersAddr, 4, "tcp"); a != "" {
		t.Fatalf("GETVERSADDR of an unregistered version = %q", a)
	}
	if a := getaddr(4, rpcbind.ProcGetVersAddr, 3, "tcp"); a != "192.0.2.1.8.1" {
		t.Fatalf("GETVERSADDR = %q", a)
	}
	if a := getaddr(4, rpcbind.ProcGetAddr, 3, "udp"); a != "" {
		t.Fatalf("GETADDR of an unregistered netid = %q", a)
	}
	l, err := rpcbind.DecodeEntryList(xdr.NewReader(results(t, prog, foreign, 4, rpcbind.ProcGetAddrList, nfsTCP.Append(nil))))
	want := []rpcbind.Entry{
		{MAddr: "192.0.2.1.8.1", Netid: "tcp", Semantics: 3, ProtoFmly: "inet", Proto: "tcp"},
		{MAddr: "192.0.2.9.78.81", Netid: "rdma", Semantics: 3, ProtoFmly: "inet", Proto: "rdma"},
		{MAddr: "::.8.1", Netid: "tcp6", Semantics: 3, ProtoFmly: "inet6", Proto: "tcp"},
	}
	if err != nil || len(l) != len(want) {
		t.Fatalf("GETADDRLIST = %+v, %v", l, err)
	}
	for i := range want {
		if l[i] != want[i] {
			t.Errorf("GETADDRLIST[%d] = %+v, want %+v", i, l[i], want[i])
		}
	}
	if tm := word(t, results(t, prog, foreign, 3, rpcbind.ProcGetTime, nil)); tm < 1700000000 {
		t.Fatalf("GETTIME = %d", tm)
	}
	for _, vp := range [][2]uint32{{3, 5}, {3, 7}, {3, 8}, {4, 5}, {4, 10}, {4, 12}, {4, 13}, {3, 9}} {
		if st := acceptStat(t, dispatch(t, prog, loopback, 4, vp[0], vp[1], nil)); st != oncrpc.ProcUnavail {
			t.Errorf("vers %d proc %d: %v, want PROC_UNAVAIL", vp[0], vp[1], st)
		}
	}
	if h, _, _ := oncrpc.DecodeReplyHeader(dispatch(t, prog, loopback, 5, 5, 0, nil)); h.AcceptStat != oncrpc.ProgMismatch || h.Low != 2 || h.High != 4 {
		t.Fatalf("version 5: %+v", h)
	}
	// UNSET with an empty netid removes every netid; only from loopback.
	all := rpcbind.Mapping{Prog: 100003, Vers: 3}
	if got := word(t, results(t, prog, foreign, 4, rpcbind.ProcUnset, all.Append(nil))); got != 0 {
		t.Fatal("UNSET from a non-loopback caller accepted")
	}
	if got := word(t, results(t, prog, loopback, 4, rpcbind.ProcUnset, all.Append(nil))); got != 1 {
		t.Fatal("UNSET failed")
	}
	if d := reg.Dump(); len(d) != 0 {
		t.Fatalf("UNSET left %+v", d)
	}
}

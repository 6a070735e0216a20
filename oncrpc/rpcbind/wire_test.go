package rpcbind_test

import (
	"bytes"
	"errors"
	"testing"

	xdr2 "github.com/rasky/go-xdr/xdr2"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Hand-built encodings of the RFC 1833 structures.
const (
	// pmap {100005, 3, IPPROTO_TCP, 20048} (section 3.1).
	pmapMountHex = "000186a5 00000003 00000006 00004e50"
	// pmap {100003, 3, IPPROTO_UDP, 2049}.
	pmapNFSHex = "000186a3 00000003 00000011 00000801"
	// rpcb {100003, 3, "tcp", "0.0.0.0.8.1", "superuser"} (section 2.1).
	rpcbNFSHex = "000186a3 00000003" +
		"00000003 74637000" + // "tcp" + 1 pad byte
		"0000000b 302e302e 302e302e 382e3100" + // "0.0.0.0.8.1" + 1 pad
		"00000009 73757065 72757365 72000000" // "superuser" + 3 pad
)

func TestPortMappingBytes(t *testing.T) {
	m := rpcbind.PortMapping{Prog: 100005, Vers: 3, Prot: rpcbind.ProtoTCP, Port: 20048}
	want := unhex(t, pmapMountHex)
	if got := m.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("pmap = %x, want %x", got, want)
	}
	back, err := rpcbind.DecodePmapArgs(want)
	if err != nil || back != m {
		t.Fatalf("decode = %+v, %v", back, err)
	}
}

func TestPmapListBytes(t *testing.T) {
	l := []rpcbind.PortMapping{
		{Prog: 100005, Vers: 3, Prot: rpcbind.ProtoTCP, Port: 20048},
		{Prog: 100003, Vers: 3, Prot: rpcbind.ProtoUDP, Port: 2049},
	}
	want := unhex(t, "00000001"+pmapMountHex+"00000001"+pmapNFSHex+"00000000")
	if got := rpcbind.AppendPmapList(nil, l); !bytes.Equal(got, want) {
		t.Fatalf("pmaplist = %x, want %x", got, want)
	}
	back, err := rpcbind.DecodePmapList(xdr.NewReader(want))
	if err != nil || len(back) != 2 || back[0] != l[0] || back[1] != l[1] {
		t.Fatalf("decode = %+v, %v", back, err)
	}
	if got := rpcbind.AppendPmapList(nil, nil); !bytes.Equal(got, []byte{0, 0, 0, 0}) {
		t.Fatalf("empty pmaplist = %x", got)
	}
}

func TestRPCBBytes(t *testing.T) {
	m := rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "tcp", Addr: "0.0.0.0.8.1", Owner: "superuser"}
	want := unhex(t, rpcbNFSHex)
	if got := m.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("rpcb = %x, want %x", got, want)
	}
	back, err := rpcbind.DecodeRPCBArgs(want)
	if err != nil || back != m {
		t.Fatalf("decode = %+v, %v", back, err)
	}
	// Every truncated prefix fails cleanly.
	for i := 0; i < len(want); i++ {
		if _, err := rpcbind.DecodeRPCBArgs(want[:i]); err == nil {
			t.Fatalf("prefix of %d bytes decoded", i)
		}
	}
}

// TestDumpReplyBytes checks whole RPC replies of PMAPPROC_DUMP and
// RPCBPROC_DUMP byte for byte.
func TestDumpReplyBytes(t *testing.T) {
	reg := rpcbind.NewRegistry()
	reg.Set(rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "tcp", Addr: "0.0.0.0.8.1", Owner: "superuser"})
	reg.Set(rpcbind.Mapping{Prog: 100003, Vers: 3, Netid: "rdma", Addr: "0.0.0.0.78.81", Owner: "superuser"})
	prog := reg.Program()
	const acceptedHdr = "00000001 00000000 00000000 00000000 00000000" // REPLY, MSG_ACCEPTED, AUTH_NONE verf, SUCCESS
	wantV2 := unhex(t, "0000002a"+acceptedHdr+
		"00000001 000186a3 00000003 00000006 00000801"+ // only the tcp entry
		"00000000")
	if got := dispatch(t, prog, foreign, 0x2a, rpcbind.VersPmap, rpcbind.PmapProcDump, nil); !bytes.Equal(got, wantV2) {
		t.Fatalf("PMAPPROC_DUMP reply\n got %x\nwant %x", got, wantV2)
	}
	wantV4 := unhex(t, "0000002b"+acceptedHdr+
		"00000001"+rpcbNFSHex+
		"00000001 000186a3 00000003 00000004 72646d61"+ // "rdma"
		"0000000d 302e302e 302e302e 37382e38 31000000"+ // "0.0.0.0.78.81" + 3 pad
		"00000009 73757065 72757365 72000000"+
		"00000000")
	if got := dispatch(t, prog, foreign, 0x2b, rpcbind.Vers4, rpcbind.ProcDump, nil); !bytes.Equal(got, wantV4) {
		t.Fatalf("RPCBPROC_DUMP reply\n got %x\nwant %x", got, wantV4)
	}
}

// Oracle types for rasky/go-xdr (style rule 8: differential tests).
type (
	oraclePmapNode struct {
		Map  rpcbind.PortMapping
		Next *oraclePmapNode `xdr:"optional"`
	}
	oraclePmapList struct {
		Head *oraclePmapNode `xdr:"optional"`
	}
	oracleRPCBNode struct {
		Map  rpcbind.Mapping
		Next *oracleRPCBNode `xdr:"optional"`
	}
	oracleRPCBList struct {
		Head *oracleRPCBNode `xdr:"optional"`
	}
	oracleEntryNode struct {
		E    rpcbind.Entry
		Next *oracleEntryNode `xdr:"optional"`
	}
	oracleEntryList struct {
		Head *oracleEntryNode `xdr:"optional"`
	}
)

func TestListsAgainstGoXDR(t *testing.T) {
	pl := []rpcbind.PortMapping{{1, 2, 6, 3}, {4, 5, 17, 6}, {100000, 2, 6, 111}}
	rl := []rpcbind.Mapping{{100000, 4, "tcp6", "::.0.111", "superuser"}, {7, 1, "udp", "1.2.3.4.5.6", ""}}
	el := []rpcbind.Entry{{"127.0.0.1.8.1", "tcp", 3, "inet", "tcp"}, {"::1.8.1", "udp6", 1, "inet6", "udp"}}

	var po oraclePmapList
	for i := len(pl) - 1; i >= 0; i-- {
		po.Head = &oraclePmapNode{Map: pl[i], Next: po.Head}
	}
	var ro oracleRPCBList
	for i := len(rl) - 1; i >= 0; i-- {
		ro.Head = &oracleRPCBNode{Map: rl[i], Next: ro.Head}
	}
	var eo oracleEntryList
	for i := len(el) - 1; i >= 0; i-- {
		eo.Head = &oracleEntryNode{E: el[i], Next: eo.Head}
	}
	for _, c := range []struct {
		name   string
		ours   []byte
		oracle any
	}{
		{"pmaplist", rpcbind.AppendPmapList(nil, pl), &po},
		{"rpcblist", rpcbind.AppendRPCBList(nil, rl), &ro},
		{"rpcb_entry_list", rpcbind.AppendEntryList(nil, el), &eo},
	} {
		var buf bytes.Buffer
		if _, err := xdr2.Marshal(&buf, c.oracle); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.ours, buf.Bytes()) {
			t.Errorf("%s: ours %x, go-xdr %x", c.name, c.ours, buf.Bytes())
		}
	}
	// And go-xdr's size-limited decoder reads what we write.
	var back oracleRPCBList
	if _, err := xdr2.NewDecoderLimited(bytes.NewReader(rpcbind.AppendRPCBList(nil, rl)), 4096).Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back.Head == nil || back.Head.Map != rl[0] || back.Head.Next == nil || back.Head.Next.Map != rl[1] || back.Head.Next.Next != nil {
		t.Fatalf("go-xdr decoded %+v", back)
	}
}

func TestDecodeLimits(t *testing.T) {
	// A netid longer than MaxString is refused before it is read.
	b := xdr.AppendUint32(nil, 1)
	b = xdr.AppendUint32(b, 1)
	b = xdr.AppendUint32(b, rpcbind.MaxString+1)
	_, err := rpcbind.DecodeRPCBArgs(append(b, make([]byte, 512)...))
	var le *xdr.LengthError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want LengthError", err)
	}
	// A list whose next element cannot fit fails without allocating it.
	if _, err := rpcbind.DecodeRPCBList(xdr.NewReader(unhex(t, "00000001 00000000"))); err == nil {
		t.Fatal("short list decoded")
	}
	if _, err := rpcbind.DecodePmapList(xdr.NewReader(unhex(t, "00000002"))); err == nil {
		t.Fatal("bad bool accepted")
	}
	// Garbage arguments are GARBAGE_ARGS, not a panic.
	prog := rpcbind.NewRegistry().Program()
	for _, vp := range [][2]uint32{{2, 1}, {2, 2}, {2, 3}, {3, 1}, {3, 2}, {3, 3}, {4, 9}, {4, 11}} {
		if st := acceptStat(t, dispatch(t, prog, loopback, 9, vp[0], vp[1], []byte{1, 2})); st != oncrpc.GarbageArgs {
			t.Errorf("vers %d proc %d: %v, want GARBAGE_ARGS", vp[0], vp[1], st)
		}
	}
}

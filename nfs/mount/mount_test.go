package mount_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	xdr2 "github.com/rasky/go-xdr/xdr2"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeBackend exports /export to everyone, /private to 192.0.2.0/24 only,
// and /anon with AUTH_NONE allowed too; /export/file exists but is not a
// directory.
type fakeBackend struct{}

var (
	exportFH  = []byte{0xfe, 0xed, 0xfa, 0xce, 0, 0, 0, 1}
	privateFH = []byte{0xfe, 0xed, 0xfa, 0xce, 0, 0, 0, 2}
	anonFH    = []byte{0xfe, 0xed, 0xfa, 0xce, 0, 0, 0, 3}
	privNet   = netip.MustParsePrefix("192.0.2.0/24")
)

func (fakeBackend) Exports(context.Context) []mount.Export {
	return []mount.Export{
		{Path: "/export", Groups: []string{"*"}},
		{Path: "/private", Groups: []string{"192.0.2.0/24", "trusted.example"}},
		{Path: "/anon", Groups: nil, AuthFlavors: []uint32{1, 0}},
	}
}

func (fakeBackend) Mount(_ context.Context, call *oncrpc.Call, p string) ([]byte, []uint32, mount.Stat) {
	switch p {
	case "/export":
		return exportFH, nil, mount.StatOK
	case "/private":
		if !privNet.Contains(call.Conn.Remote.Addr().Unmap()) {
			return nil, nil, mount.StatAcces
		}
		return privateFH, []uint32{mount.AuthSys}, mount.StatOK
	case "/anon":
		return anonFH, []uint32{mount.AuthSys, mount.AuthNone}, mount.StatOK
	case "/export/file":
		return nil, nil, mount.StatNotDir
	case "/broken":
		return make([]byte, 65), nil, mount.StatOK
	}
	return nil, nil, mount.StatNoEnt
}

var (
	loopback = netip.MustParseAddrPort("127.0.0.1:800")
	trusted  = netip.MustParseAddrPort("192.0.2.7:800")
)

func dispatch(t testing.TB, prog *oncrpc.Program, remote netip.AddrPort, xid, vers, proc uint32, args []byte) []byte {
	t.Helper()
	d := oncrpc.NewDispatcher(zap.NewNop(), nil, prog)
	h := oncrpc.CallHeader{XID: xid, Prog: mount.Prog, Vers: vers, Proc: proc, Cred: oncrpc.NewAuthSys("c", 0, 0)}
	msg := append(oncrpc.AppendCallHeader(nil, &h), args...)
	ex := &oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Local: netip.MustParseAddrPort("127.0.0.1:20048"), Remote: remote}, Msg: msg}
	var call oncrpc.Call
	reply := oncrpc.NewReply(nil)
	if !d.Dispatch(context.Background(), ex, &call, &reply) {
		t.Fatal("no reply")
	}
	return reply.AppendFlat(nil)
}

const acceptedHdr = "00000001 00000000 00000000 00000000 00000000"

// TestMntReplyBytes checks a whole MNT reply against mountres3 of RFC 1813
// section 5.2.1, hand-encoded.
func TestMntReplyBytes(t *testing.T) {
	prog := mount.NewServer(zap.NewNop(), fakeBackend{}).Program()
	want := unhex(t, "00000007"+acceptedHdr+
		"00000000"+ // MNT3_OK
		"00000008 feedface 00000003"+ // fhandle3
		"00000002 00000001 00000000") // auth_flavors<> = {AUTH_SYS, AUTH_NONE}
	got := dispatch(t, prog, loopback, 7, 3, mount.ProcMnt, unhex(t, "00000005 2f616e6f 6e000000")) // "/anon"
	if !bytes.Equal(got, want) {
		t.Fatalf("MNT reply\n got %x\nwant %x", got, want)
	}
	want = unhex(t, "00000008"+acceptedHdr+"00000002") // MNT3ERR_NOENT, nothing else
	if got := dispatch(t, prog, loopback, 8, 3, mount.ProcMnt, unhex(t, "00000004 2f6e6f70")); !bytes.Equal(got, want) {
		t.Fatalf("NOENT reply\n got %x\nwant %x", got, want)
	}
}

// TestExportsBytes checks the exports list (RFC 1813 section 5.2.5) and the
// mount list (section 5.2.2) against hand-built bytes.
func TestExportsBytes(t *testing.T) {
	l := []mount.Export{{Path: "/export", Groups: []string{"192.0.2.0/24", "*"}}, {Path: "/x"}}
	want := unhex(t, "00000001 00000007 2f657870 6f727400"+ // TRUE "/export"
		"00000001 0000000c 3139322e 302e322e 302f3234"+ // TRUE "192.0.2.0/24"
		"00000001 00000001 2a000000"+ // TRUE "*"
		"00000000"+ // end of groups
		"00000001 00000002 2f780000 00000000"+ // TRUE "/x", no groups
		"00000000")
	if got := mount.AppendExports(nil, l); !bytes.Equal(got, want) {
		t.Fatalf("exports\n got %x\nwant %x", got, want)
	}
	back, err := mount.DecodeExports(xdr.NewReader(want))
	if err != nil || len(back) != 2 || back[0].Path != "/export" || len(back[0].Groups) != 2 || back[0].Groups[1] != "*" || back[1].Groups != nil {
		t.Fatalf("decode = %+v, %v", back, err)
	}
	ml := []mount.Entry{{Hostname: "127.0.0.1", Directory: "/export"}}
	want = unhex(t, "00000001 00000009 3132372e 302e302e 31000000 00000007 2f657870 6f727400 00000000")
	if got := mount.AppendMountList(nil, ml); !bytes.Equal(got, want) {
		t.Fatalf("mountlist\n got %x\nwant %x", got, want)
	}
	for i := 0; i < len(want); i++ {
		if _, err := mount.DecodeMountList(xdr.NewReader(want[:i])); err == nil {
			t.Fatalf("mountlist prefix of %d bytes decoded", i)
		}
	}
}

// Oracle types for rasky/go-xdr, mirroring RFC 1813 appendix I.
type (
	oracleGroup struct {
		Name string
		Next *oracleGroup `xdr:"optional"`
	}
	oracleExport struct {
		Dir    string
		Groups *oracleGroup  `xdr:"optional"`
		Next   *oracleExport `xdr:"optional"`
	}
	oracleExports struct {
		Head *oracleExport `xdr:"optional"`
	}
	oracleMountOK struct {
		Status  uint32
		FH      []byte
		Flavors []int32
	}
)

func TestAgainstGoXDR(t *testing.T) {
	o := oracleExports{Head: &oracleExport{Dir: "/a", Groups: &oracleGroup{Name: "h1", Next: &oracleGroup{Name: "net/8"}},
		Next: &oracleExport{Dir: "/bb"}}}
	var buf bytes.Buffer
	if _, err := xdr2.Marshal(&buf, &o); err != nil {
		t.Fatal(err)
	}
	ours := mount.AppendExports(nil, []mount.Export{{Path: "/a", Groups: []string{"h1", "net/8"}}, {Path: "/bb"}})
	if !bytes.Equal(ours, buf.Bytes()) {
		t.Fatalf("exports: ours %x, go-xdr %x", ours, buf.Bytes())
	}
	buf.Reset()
	if _, err := xdr2.Marshal(&buf, &oracleMountOK{FH: exportFH, Flavors: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if ours := mount.AppendMountRes(nil, mount.StatOK, exportFH, []uint32{1}); !bytes.Equal(ours, buf.Bytes()) {
		t.Fatalf("mountres3: ours %x, go-xdr %x", ours, buf.Bytes())
	}
	var back oracleMountOK
	if _, err := xdr2.NewDecoderLimited(bytes.NewReader(buf.Bytes()), 1024).Decode(&back); err != nil || !bytes.Equal(back.FH, exportFH) {
		t.Fatalf("go-xdr decode: %+v, %v", back, err)
	}
}

// TestProcedures runs the handlers in process, from two client addresses.
func TestProcedures(t *testing.T) {
	srv := mount.NewServer(zaptest.NewLogger(t), fakeBackend{})
	prog := srv.Program()
	mnt := func(remote netip.AddrPort, p string) ([]byte, []uint32, error) {
		res, err := oncrpc.ParseReply(dispatch(t, prog, remote, 1, 3, mount.ProcMnt, mount.AppendDirpath(nil, p)))
		if err != nil {
			return nil, nil, err
		}
		return mount.DecodeMountRes(xdr.NewReader(res))
	}
	if _, _, err := mnt(loopback, "/private"); !errors.Is(err, mount.StatAcces) {
		t.Fatalf("refused client: %v", err)
	}
	if fh, fl, err := mnt(trusted, "/private"); err != nil || !bytes.Equal(fh, privateFH) || len(fl) != 1 || fl[0] != mount.AuthSys {
		t.Fatalf("trusted client: %x %v %v", fh, fl, err)
	}
	if _, _, err := mnt(loopback, "/export/file"); !errors.Is(err, mount.StatNotDir) {
		t.Fatalf("file: %v", err)
	}
	if _, _, err := mnt(loopback, "/broken"); !errors.Is(err, mount.StatServerFault) {
		t.Fatalf("65-byte handle: %v", err)
	}
	if _, _, err := mnt(loopback, "/export\x00x"); !errors.Is(err, mount.StatNoEnt) {
		t.Fatalf("NUL in path: %v", err)
	}
	if m := srv.Mounts(); len(m) != 1 || m[0] != (mount.Entry{Hostname: "192.0.2.7", Directory: "/private"}) {
		t.Fatalf("mount list = %+v", m)
	}
	// Versions 1 and 2: no MNT; EXPORT is the same.
	for _, v := range []uint32{1, 2} {
		h, _, _ := oncrpc.DecodeReplyHeader(dispatch(t, prog, loopback, 2, v, mount.ProcMnt, mount.AppendDirpath(nil, "/export")))
		if h.AcceptStat != oncrpc.ProcUnavail {
			t.Fatalf("v%d MNT: %v", v, h.AcceptStat)
		}
		res, err := oncrpc.ParseReply(dispatch(t, prog, loopback, 3, v, mount.ProcExport, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res, mount.AppendExports(nil, fakeBackend{}.Exports(context.Background()))) {
			t.Fatalf("v%d EXPORT = %x", v, res)
		}
	}
	h, _, _ := oncrpc.DecodeReplyHeader(dispatch(t, prog, loopback, 4, 4, mount.ProcNull, nil))
	if h.AcceptStat != oncrpc.ProgMismatch || h.Low != 1 || h.High != 3 {
		t.Fatalf("version 4: %+v", h)
	}
	h, _, _ = oncrpc.DecodeReplyHeader(dispatch(t, prog, loopback, 5, 3, 6, nil))
	if h.AcceptStat != oncrpc.ProcUnavail {
		t.Fatalf("proc 6: %v", h.AcceptStat)
	}
	// Every truncated prefix of a dirpath is GARBAGE_ARGS.
	args := mount.AppendDirpath(nil, "/export")
	for i := 0; i < len(args); i++ {
		for _, proc := range []uint32{mount.ProcMnt, mount.ProcUmnt} {
			h, _, _ := oncrpc.DecodeReplyHeader(dispatch(t, prog, loopback, 6, 3, proc, args[:i]))
			if h.AcceptStat != oncrpc.GarbageArgs {
				t.Fatalf("proc %d with %d bytes: %v", proc, i, h.AcceptStat)
			}
		}
	}
}

// TestPathLimits: a dirpath of MNTPATHLEN+1 bytes is GARBAGE_ARGS (what
// rpc.mountd answers: its XDR decoder bounds dirpath by MNTPATHLEN); one of
// MNTPATHLEN bytes decodes and is looked up; a component over MNTNAMLEN is
// MNT3ERR_NAMETOOLONG.
func TestPathLimits(t *testing.T) {
	prog := mount.NewServer(zap.NewNop(), fakeBackend{}).Program()
	status := func(p string) (oncrpc.AcceptStat, mount.Stat) {
		msg := dispatch(t, prog, loopback, 1, 3, mount.ProcMnt, mount.AppendDirpath(nil, p))
		h, off, err := oncrpc.DecodeReplyHeader(msg)
		if err != nil {
			t.Fatal(err)
		}
		if h.AcceptStat != oncrpc.Success {
			return h.AcceptStat, 0
		}
		return h.AcceptStat, mount.Stat(xdr.NewReader(msg[off:]).Uint32())
	}
	long := "/" + strings.Repeat("a/", 512) // 1025 bytes
	if st, _ := status(long); st != oncrpc.GarbageArgs {
		t.Fatalf("1025-byte path: %v, want GARBAGE_ARGS", st)
	}
	if st, ms := status(long[:1024]); st != oncrpc.Success || ms != mount.StatNoEnt {
		t.Fatalf("1024-byte path: %v %v, want NOENT", st, ms)
	}
	if st, ms := status("/" + strings.Repeat("n", 256)); st != oncrpc.Success || ms != mount.StatNameTooLong {
		t.Fatalf("256-byte component: %v %v, want NAMETOOLONG", st, ms)
	}
	if _, ms := status("/" + strings.Repeat("n", 255)); ms != mount.StatNoEnt {
		t.Fatalf("255-byte component: %v, want NOENT", ms)
	}
}

func serve(t *testing.T, srv *mount.Server) (tcp, udp string) {
	t.Helper()
	log := zaptest.NewLogger(t)
	s := oncrpc.NewServer(log, oncrpc.NewDispatcher(log, nil, srv.Program()), oncrpc.ServerConfig{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeTCP(ln)
	go s.ServeUDP(pc)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String(), pc.LocalAddr().String()
}

// TestEndToEnd uses the client helpers over TCP and UDP.
func TestEndToEnd(t *testing.T) {
	srv := mount.NewServer(zaptest.NewLogger(t), fakeBackend{})
	tcp, udp := serve(t, srv)
	for _, c := range []struct{ network, addr string }{{"tcp", tcp}, {"udp", udp}} {
		t.Run(c.network, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl, err := oncrpc.Dial(ctx, c.network, c.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			cl.SetCred(oncrpc.NewAuthSys("client", 0, 0))
			if err := mount.Null(ctx, cl); err != nil {
				t.Fatal(err)
			}
			fh, fl, err := mount.Mnt(ctx, cl, "/export")
			if err != nil || !bytes.Equal(fh, exportFH) || len(fl) != 1 || fl[0] != mount.AuthSys {
				t.Fatalf("MNT /export = %x %v %v", fh, fl, err)
			}
			if _, fl, err := mount.Mnt(ctx, cl, "/anon"); err != nil || len(fl) != 2 || fl[1] != mount.AuthNone {
				t.Fatalf("MNT /anon flavors = %v %v", fl, err)
			}
			if _, _, err := mount.Mnt(ctx, cl, "/nope"); !errors.Is(err, mount.StatNoEnt) {
				t.Fatalf("MNT /nope: %v", err)
			}
			if _, _, err := mount.Mnt(ctx, cl, "/private"); !errors.Is(err, mount.StatAcces) {
				t.Fatalf("MNT /private from loopback: %v", err)
			}
			var ae *oncrpc.AcceptError
			if _, _, err := mount.Mnt(ctx, cl, "/"+strings.Repeat("x", 1024)); !errors.As(err, &ae) || ae.Stat != oncrpc.GarbageArgs {
				t.Fatalf("MNT of 1025 bytes: %v", err)
			}
			d, err := mount.Dump(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			want := []mount.Entry{{"127.0.0.1", "/export"}, {"127.0.0.1", "/anon"}}
			if len(d) != 2 || d[0] != want[0] || d[1] != want[1] {
				t.Fatalf("DUMP = %+v, want %+v", d, want)
			}
			if err := mount.Umnt(ctx, cl, "/export"); err != nil {
				t.Fatal(err)
			}
			if d, _ := mount.Dump(ctx, cl); len(d) != 1 || d[0] != want[1] {
				t.Fatalf("DUMP after UMNT = %+v", d)
			}
			if err := mount.Umnt(ctx, cl, "/never-mounted"); err != nil {
				t.Fatalf("UMNT of an unknown path: %v", err)
			}
			mount.Mnt(ctx, cl, "/export")
			if err := mount.UmntAll(ctx, cl); err != nil {
				t.Fatal(err)
			}
			if d, _ := mount.Dump(ctx, cl); len(d) != 0 {
				t.Fatalf("DUMP after UMNTALL = %+v", d)
			}
			ex, err := mount.Exports(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(ex) != 3 || ex[1].Path != "/private" || len(ex[1].Groups) != 2 || ex[1].Groups[0] != "192.0.2.0/24" || ex[1].Groups[1] != "trusted.example" || ex[2].Groups != nil {
				t.Fatalf("EXPORT = %+v", ex)
			}
		})
	}
}

// TestUmntAllKeepsOtherClients: UMNTALL removes only the caller's entries.
func TestUmntAllKeepsOtherClients(t *testing.T) {
	srv := mount.NewServer(zap.NewNop(), fakeBackend{})
	prog := srv.Program()
	dispatch(t, prog, trusted, 1, 3, mount.ProcMnt, mount.AppendDirpath(nil, "/export"))
	dispatch(t, prog, loopback, 2, 3, mount.ProcMnt, mount.AppendDirpath(nil, "/export"))
	dispatch(t, prog, netip.MustParseAddrPort("[::ffff:127.0.0.1]:900"), 3, 3, mount.ProcMnt, mount.AppendDirpath(nil, "/anon"))
	dispatch(t, prog, loopback, 4, 3, mount.ProcUmntAll, nil)
	if m := srv.Mounts(); len(m) != 1 || m[0].Hostname != "192.0.2.7" {
		t.Fatalf("after UMNTALL: %+v", m)
	}
}

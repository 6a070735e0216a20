package oncrpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/xdr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = xdr.AppendUint32(b, w)
	}
	return b
}

// RFC 5531 section 9 layouts, hand-built.
func TestReplyHeadersByteExact(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"accepted success", AppendAcceptedHeader(nil, 0x11223344, Success), words(0x11223344, 1, 0, 0, 0, 0)},
		{"prog unavail", AppendAcceptedHeader(nil, 7, ProgUnavail), words(7, 1, 0, 0, 0, 1)},
		{"prog mismatch", AppendProgMismatch(nil, 7, 3, 4), words(7, 1, 0, 0, 0, 2, 3, 4)},
		{"proc unavail", AppendAcceptedHeader(nil, 7, ProcUnavail), words(7, 1, 0, 0, 0, 3)},
		{"garbage args", AppendAcceptedHeader(nil, 7, GarbageArgs), words(7, 1, 0, 0, 0, 4)},
		{"system err", AppendAcceptedHeader(nil, 7, SystemErr), words(7, 1, 0, 0, 0, 5)},
		{"rpc mismatch", AppendRPCMismatch(nil, 7), words(7, 1, 1, 0, 2, 2)},
		{"auth tooweak", AppendAuthError(nil, 7, AuthTooWeak), words(7, 1, 1, 1, 5)},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("%s:\n got % x\nwant % x", tt.name, tt.got, tt.want)
		}
	}
}

func sampleCall() []byte {
	cred := NewAuthSys("host", 1000, 100, 4, 5)
	h := CallHeader{XID: 42, Prog: 100003, Vers: 3, Proc: 1, Cred: cred}
	return append(AppendCallHeader(nil, &h), 0xde, 0xad, 0xbe, 0xef)
}

func TestCallHeaderByteExact(t *testing.T) {
	want := words(42, 0, 2, 100003, 3, 1, 1, 32, 0)
	want = append(want, words(4)...)
	want = append(want, "host"...)
	want = append(want, words(1000, 100, 2, 4, 5, 0, 0)...)
	want = append(want, 0xde, 0xad, 0xbe, 0xef)
	if got := sampleCall(); !bytes.Equal(got, want) {
		t.Fatalf("\n got % x\nwant % x", got, want)
	}
	h, off, err := DecodeCallHeader(want)
	if err != nil || h.XID != 42 || h.Prog != 100003 || h.Vers != 3 || h.Proc != 1 || h.Cred.Flavor != AuthSys {
		t.Fatalf("decode: %+v %v", h, err)
	}
	if !bytes.Equal(want[off:], []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Fatalf("args at wrong offset %d", off)
	}
	var c AuthSysCred
	if err := DecodeAuthSys(h.Cred.Body, &c); err != nil || c.UID != 1000 || c.GID != 100 || len(c.GIDs()) != 2 || string(c.MachineName) != "host" {
		t.Fatalf("authsys: %+v %v", c, err)
	}
}

func TestCallHeaderTruncatedPrefixes(t *testing.T) {
	msg := sampleCall()
	hdrLen := len(msg) - 4
	for n := 0; n < hdrLen; n++ {
		if _, _, err := DecodeCallHeader(msg[:n]); err == nil {
			t.Errorf("prefix %d decoded", n)
		}
	}
}

func TestAuthSysLimits(t *testing.T) {
	var c AuthSysCred
	gids := make([]uint32, 17)
	if err := DecodeAuthSys(NewAuthSys("h", 0, 0, gids...).Body, &c); err == nil {
		t.Error("17 gids accepted")
	}
	if err := DecodeAuthSys(NewAuthSys("h", 0, 0, gids[:16]...).Body, &c); err != nil {
		t.Errorf("16 gids rejected: %v", err)
	}
	long := string(bytes.Repeat([]byte{'m'}, 256))
	if err := DecodeAuthSys(NewAuthSys(long, 0, 0).Body, &c); err == nil {
		t.Error("256-byte machine name accepted")
	}
	if err := DecodeAuthSys(append(NewAuthSys("h", 0, 0).Body, 0, 0, 0, 0), &c); err == nil {
		t.Error("trailing bytes accepted")
	}
}

// testProgram: proc 0 NULL, 1 echo (non-idempotent), 2 garbage, 3 blocks
// until released, 4 system error, 5 payload.
func testProgram(release chan struct{}, runs *atomic.Int32) *Program {
	echo := func(ctx context.Context, c *Call, r *Reply) error {
		runs.Add(1)
		r.Head = append(r.Head, c.Args...)
		return nil
	}
	return &Program{Prog: 400000, Name: "test", Versions: []Version{{Vers: 1}, {Vers: 2, Procs: []Procedure{
		{Name: "NULL", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return nil }},
		{Name: "ECHO", Handler: echo},
		{Name: "GARBAGE", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return ErrGarbageArgs }},
		{Name: "BLOCK", Idempotent: true, Handler: func(ctx context.Context, c *Call, r *Reply) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			r.Head = append(r.Head, c.Args...)
			return nil
		}},
		{Name: "FAIL", Idempotent: true, Handler: func(context.Context, *Call, *Reply) error { return errors.New("boom") }},
		{Name: "PAYLOAD", Idempotent: true, Handler: func(ctx context.Context, c *Call, r *Reply) error {
			p := r.AllocPayload(5)
			copy(p, "hello")
			r.Head = xdr.AppendUint32(r.Head, 5)
			r.SetPayload(p)
			r.Tail = xdr.AppendUint32(r.Tail, 9)
			return nil
		}},
	}}}}
}

type testEnv struct {
	srv     *Server
	addr    string
	release chan struct{}
	runs    *atomic.Int32
	blocked *atomic.Int32 // BLOCK calls that have entered their handler
	drc     *DRC
}

func newTestEnv(t testing.TB, cfg ServerConfig) *testEnv {
	t.Helper()
	env := &testEnv{release: make(chan struct{}), runs: new(atomic.Int32), blocked: new(atomic.Int32)}
	env.drc = NewDRC(100, 1<<20, time.Minute)
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	prog := testProgram(env.release, env.runs)
	block := &prog.Versions[1].Procs[3]
	blockHandler := block.Handler
	block.Handler = func(ctx context.Context, c *Call, r *Reply) error {
		env.blocked.Add(1)
		return blockHandler(ctx, c, r)
	}
	env.srv = NewServer(log, NewDispatcher(log, env.drc, prog), cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.addr = l.Addr().String()
	go env.srv.ServeTCP(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := env.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return env
}

func dialT(t *testing.T, addr string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialUDP serves env's server on a UDP socket too and returns a client
// of it over UDP.
func dialUDP(t *testing.T, env *testEnv) *Client {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go env.srv.ServeUDP(pc)
	c, err := Dial(context.Background(), "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDispatchStatuses(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	ctx := context.Background()
	call := func(prog, vers, proc uint32) error {
		_, err := c.Call(ctx, &ClientCall{Prog: prog, Vers: vers, Proc: proc, Args: words(1)})
		return err
	}
	var ae *AcceptError
	if err := call(400001, 2, 0); !errors.As(err, &ae) || ae.Stat != ProgUnavail {
		t.Errorf("unknown program: %v", err)
	}
	if err := call(400000, 3, 0); !errors.As(err, &ae) || ae.Stat != ProgMismatch || ae.Low != 1 || ae.High != 2 {
		t.Errorf("unknown version: %v", err)
	}
	if err := call(400000, 1, 0); !errors.As(err, &ae) || ae.Stat != ProcUnavail {
		t.Errorf("version without procs: %v", err)
	}
	if err := call(400000, 2, 99); !errors.As(err, &ae) || ae.Stat != ProcUnavail {
		t.Errorf("unknown procedure: %v", err)
	}
	if err := call(400000, 2, 2); !errors.As(err, &ae) || ae.Stat != GarbageArgs {
		t.Errorf("garbage: %v", err)
	}
	if err := call(400000, 2, 4); !errors.As(err, &ae) || ae.Stat != SystemErr {
		t.Errorf("system err: %v", err)
	}
	res, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 5})
	if err != nil || !bytes.Equal(res, append(words(5), 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0, 0, 0, 9)) {
		t.Errorf("payload reply % x, %v", res, err)
	}

	// RPC version 3 -> RPC_MISMATCH 2..2.
	msg := AppendCallHeader(nil, &CallHeader{XID: 77, Prog: 400000, Vers: 2})
	binary.BigEndian.PutUint32(msg[8:], 3)
	raw, err := c.RoundTrip(ctx, 77, msg)
	if err != nil {
		t.Fatal(err)
	}
	var re *RejectError
	if _, err := ParseReply(raw); !errors.As(err, &re) || re.RejectStat != RPCMismatch || re.Low != 2 || re.High != 2 {
		t.Errorf("rpc version 3: %v", err)
	}
	// AUTH_SYS with 17 gids -> AUTH_BADCRED.
	bad := NewAuthSys("h", 0, 0, make([]uint32, 17)...)
	_, err = c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 0, Cred: &bad})
	if !errors.As(err, &re) || re.RejectStat != AuthErrorStat || re.AuthStat != AuthBadCred {
		t.Errorf("17 gids: %v", err)
	}
	// Unknown flavor -> AUTH_BADCRED; non-null verifier -> AUTH_BADVERF.
	weird := OpaqueAuth{Flavor: 6, Body: words(1)}
	if _, err = c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Cred: &weird}); !errors.As(err, &re) || re.AuthStat != AuthBadCred {
		t.Errorf("flavor 6: %v", err)
	}
	msg = AppendCallHeader(nil, &CallHeader{XID: 78, Prog: 400000, Vers: 2, Verf: OpaqueAuth{Flavor: 1, Body: words(0)}})
	raw, err = c.RoundTrip(ctx, 78, msg)
	if _, perr := ParseReply(raw); err != nil || !errors.As(perr, &re) || re.AuthStat != AuthBadVerf {
		t.Errorf("bad verifier: %v %v", err, perr)
	}
	// A credential body over 400 bytes -> AUTH_BADCRED (RFC 5531 8.2).
	raw, err = c.RoundTrip(ctx, 79, words(79, 0, 2, 400000, 2, 0, 0, 500))
	if _, perr := ParseReply(raw); err != nil || !errors.As(perr, &re) || re.AuthStat != AuthBadCred {
		t.Errorf("oversized credential: %v %v", err, perr)
	}
	// A header cut short after a readable XID -> GARBAGE_ARGS.
	raw, err = c.RoundTrip(ctx, 80, words(80, 0, 2, 400000, 2, 0, 0, 8, 1))
	if _, perr := ParseReply(raw); err != nil || !errors.As(perr, &ae) || ae.Stat != GarbageArgs {
		t.Errorf("truncated header: %v %v", err, perr)
	}
	// The connection still works.
	if err := call(400000, 2, 0); err != nil {
		t.Fatalf("after bad input: %v", err)
	}
}

func TestMultiFragmentRecord(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	msg := AppendCallHeader(nil, &CallHeader{XID: 5, Prog: 400000, Vers: 2, Proc: 1})
	msg = append(msg, words(1, 2, 3)...)
	// Send three fragments by hand: 0 bytes, 10 bytes, rest (last).
	var raw []byte
	raw = binary.BigEndian.AppendUint32(raw, 0)
	raw = binary.BigEndian.AppendUint32(raw, 10)
	raw = append(raw, msg[:10]...)
	raw = binary.BigEndian.AppendUint32(raw, uint32(len(msg)-10)|lastFragment)
	raw = append(raw, msg[10:]...)
	c2, err := net.Dial("tcp", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write(raw); err != nil {
		t.Fatal(err)
	}
	reply, err := ReadRecord(c2, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ParseReply(reply)
	if err != nil || !bytes.Equal(res, words(1, 2, 3)) {
		t.Fatalf("multi-fragment: % x %v", res, err)
	}
}

func TestOversizedRecordClosesConnection(t *testing.T) {
	env := newTestEnv(t, ServerConfig{MaxRecord: 4096})
	c, err := net.Dial("tcp", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Claim 1 GiB; the server must close without waiting for the data.
	if _, err := c.Write(binary.BigEndian.AppendUint32(nil, 1<<30|lastFragment)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("want EOF, got %d %v", n, err)
	}
}

func TestReadRecordDoesNotAllocateClaimedSize(t *testing.T) {
	// A claimed 1 MiB fragment followed by 8 bytes and EOF.
	raw := binary.BigEndian.AppendUint32(nil, 1<<20|lastFragment)
	raw = append(raw, 1, 2, 3, 4, 5, 6, 7, 8)
	buf, err := ReadRecord(bytes.NewReader(raw), nil, 2<<20)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v", err)
	}
	if cap(buf) > 2*growStep {
		t.Fatalf("allocated %d bytes for 8 received", cap(buf))
	}
}

func TestSecondCallAnsweredWhileFirstBlocks(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 3, Args: words(1)})
		first <- err
	}()
	if _, err := c.Call(ctx, &ClientCall{Prog: 400000, Vers: 2, Proc: 0}); err != nil {
		t.Fatalf("second call: %v", err)
	}
	select {
	case err := <-first:
		t.Fatalf("first call finished before release: %v", err)
	default:
	}
	close(env.release)
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
}

func TestDRCReplaysRetransmission(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	msg := AppendCallHeader(nil, &CallHeader{XID: 900, Prog: 400000, Vers: 2, Proc: 1})
	msg = append(msg, words(42)...)
	var replies [][]byte
	// Send the same call over two connections (different source ports, as
	// after a reconnect): the handler runs once, both get the same reply.
	for i := 0; i < 2; i++ {
		c := dialT(t, env.addr)
		r, err := c.RoundTrip(context.Background(), 900, msg)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	if env.runs.Load() != 1 {
		t.Fatalf("handler ran %d times", env.runs.Load())
	}
	if !bytes.Equal(replies[0], replies[1]) {
		t.Fatal("replayed reply differs")
	}
	// Different arguments with the same XID is a new call.
	msg2 := append(msg[:len(msg)-4:len(msg)-4], words(43)...)
	c := dialT(t, env.addr)
	if _, err := c.RoundTrip(context.Background(), 900, msg2); err != nil {
		t.Fatal(err)
	}
	if env.runs.Load() != 2 {
		t.Fatalf("handler ran %d times", env.runs.Load())
	}
}

func TestDRCBounds(t *testing.T) {
	d := NewDRC(10, 1<<20, time.Minute)
	now := time.Unix(1000, 0)
	d.now = func() time.Time { return now }
	conn := &Peer{Remote: netip.MustParseAddrPort("127.0.0.1:700")}
	var r Reply
	r.Head = []byte("reply")
	for i := 0; i < 100; i++ {
		c := &Call{CallHeader: CallHeader{XID: uint32(i)}, Conn: conn}
		k := newDRCKey(c)
		if act, _ := d.begin(k, nil); act != drcRun {
			t.Fatal("fresh key not run")
		}
		d.finish(k, &r)
	}
	if n := d.Len(); n > 10 {
		t.Fatalf("DRC holds %d entries, bound 10", n)
	}
	now = now.Add(2 * time.Minute)
	k := newDRCKey(&Call{CallHeader: CallHeader{XID: 99}, Conn: conn})
	if act, _ := d.begin(k, nil); act != drcRun {
		t.Fatal("expired entry replayed")
	}
}

func TestShutdownDrains(t *testing.T) {
	env := newTestEnv(t, ServerConfig{})
	c := dialT(t, env.addr)
	got := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), &ClientCall{Prog: 400000, Vers: 2, Proc: 3, Args: words(1)})
		got <- err
	}()
	// Wait until the call is in the handler (a fixed sleep could end
	// before a loaded machine delivered it, and Shutdown would then
	// close an idle connection with the call still in the socket).
	for deadline := time.Now().Add(10 * time.Second); env.blocked.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the BLOCK call did not reach its handler")
		}
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- env.srv.Shutdown(ctx)
	}()
	// Release the handler only once Shutdown is draining: Closed is
	// closed first, and Conns takes the lock Shutdown holds while it
	// closes the listeners and drains every connection.
	select {
	case <-env.srv.life.Closed():
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not start")
	}
	env.srv.life.Conns(nil)
	close(env.release)
	if err := <-got; err != nil {
		t.Fatalf("in-flight call lost during shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

func TestUDP(t *testing.T) {
	c := dialUDP(t, newTestEnv(t, ServerConfig{}))
	res, err := c.Call(context.Background(), &ClientCall{Prog: 400000, Vers: 2, Proc: 5})
	if err != nil || len(res) != 16 {
		t.Fatalf("udp payload: % x %v", res, err)
	}
}

func FuzzDecodeCallHeader(f *testing.F) {
	f.Add(sampleCall())
	f.Add(words(1, 0, 2, 100003, 3, 0, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, off, err := DecodeCallHeader(msg)
		if err != nil {
			return
		}
		if off > len(msg) {
			t.Fatal("offset past end")
		}
		if h.Cred.Flavor == AuthSys {
			var c AuthSysCred
			if DecodeAuthSys(h.Cred.Body, &c) == nil && len(c.GIDs()) > MaxAuthSysGIDs {
				t.Fatal("too many gids accepted")
			}
		}
	})
}

func FuzzDispatch(f *testing.F) {
	f.Add(sampleCall())
	f.Add(AppendCallHeader(nil, &CallHeader{XID: 1, Prog: 400000, Vers: 2, Proc: 1}))
	log := zap.NewNop()
	runs := new(atomic.Int32)
	rel := make(chan struct{})
	close(rel)
	d := NewDispatcher(log, NewDRC(16, 1<<16, time.Minute), testProgram(rel, runs))
	from := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("127.0.0.1:900")}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var call Call
		var reply Reply
		if d.Dispatch(context.Background(), &BufferExchange{From: from, Msg: msg}, &call, &reply) {
			if _, _, err := DecodeReplyHeader(reply.AppendFlat(nil)); err != nil {
				t.Fatalf("dispatcher produced an undecodable reply: %v", err)
			}
		}
	})
}

// benchCounting is the dispatcher's call counting in BenchmarkDispatchNull:
// on (a connection's own counters, as with --metrics-listen) or off.
var benchCounting = flag.Bool("counting", true, "count calls in the dispatcher, as with --metrics-listen")

func BenchmarkDispatchNull(b *testing.B) {
	runs := new(atomic.Int32)
	d := NewDispatcher(zap.NewNop(), nil, testProgram(nil, runs))
	d.SetCounting(*benchCounting)
	msg := AppendCallHeader(nil, &CallHeader{XID: 1, Prog: 400000, Vers: 2, Proc: 0, Cred: NewAuthSys("bench", 1, 1, 1, 2, 3)})
	ex := &BufferExchange{From: Peer{Transport: TCP, Remote: netip.MustParseAddrPort("127.0.0.1:900")}, Msg: msg}
	d.OpenConn(&ex.From, meter.NewClients(0))
	var call Call
	reply := NewReply(make([]byte, 0, 512))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d.Dispatch(context.Background(), ex, &call, &reply)
	}
}

func TestDispatcherQuick(t *testing.T) {
	prog := &Program{Prog: 400003, Name: "quick", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "NULL", Quick: true, Handler: func(context.Context, *Call, *Reply) error { return nil }},
		{Name: "SLOW", Handler: func(context.Context, *Call, *Reply) error { return nil }},
	}}}}
	d := NewDispatcher(zaptest.NewLogger(t), nil, prog)
	call := func(prog, vers, proc uint32) []byte {
		return AppendCallHeader(nil, &CallHeader{XID: 1, Prog: prog, Vers: vers, Proc: proc})
	}
	reply := AppendAcceptedHeader(nil, 1, Success)
	for _, tc := range []struct {
		name string
		msg  []byte
		want bool
	}{
		{"quick procedure", call(400003, 1, 0), true},
		{"procedure not marked", call(400003, 1, 1), false},
		{"procedure out of range", call(400003, 1, 2), false},
		{"unknown version", call(400003, 2, 0), false},
		{"unknown program", call(400004, 1, 0), false},
		{"a reply", reply, false},
		{"truncated", call(400003, 1, 0)[:20], false},
	} {
		if got := d.Quick(tc.msg); got != tc.want {
			t.Errorf("%s: Quick = %v, want %v", tc.name, got, tc.want)
		}
	}
}

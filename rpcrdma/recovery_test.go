package rpcrdma

// Recovery from faults (issue 16), one test per fault class: an RDMA
// operation of the server failing with a real status mid-call, lost
// completions, a disconnect with calls in flight (flushed completions,
// delayed completions), a Receive that cannot be re-posted, and a Send
// that finds no Receive (RNR). Each checks that no call hangs (every wait
// is bounded), that no registered memory leaks (the fabric's MR count
// returns to zero once both ends are closed), that the server logs the
// failure once (one WARN with the first error, no line per flushed
// request), and that the client's retransmission on a new connection,
// with the same XID from another source port, gets the right answer:
// from the duplicate request cache when the first transmission's call
// had completed, so a non-idempotent call runs exactly once.
//
// The faults are injected on the server's queue pairs by faultConn, a
// verbs.Conn wrapper over the software fabric: a chosen send-queue WR
// completes with a chosen status (the queue pair then goes to the error
// state and flushes what follows, as a device does), chosen completions
// never arrive, PostRecv fails. The client runs on the fabric unwrapped.

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/internal/wr"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// ---------------------------------------------------------------- faults

// faultProvider is the fabric with the server side's queue pairs wrapped
// in faultConns.
type faultProvider struct {
	*softfabric.Fabric
	mu    sync.Mutex
	conns []*faultConn // server side, in the order they were made
	added chan struct{}
}

func (p *faultProvider) Listen(addr string) (verbs.Listener, error) {
	l, err := p.Fabric.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &faultListener{Listener: l, p: p}, nil
}

// nth waits for the n-th server-side queue pair (1-based).
func (p *faultProvider) nth(t *testing.T, n int) *faultConn {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		if len(p.conns) >= n {
			c := p.conns[n-1]
			p.mu.Unlock()
			return c
		}
		p.mu.Unlock()
		select {
		case <-p.added:
		case <-deadline:
			t.Fatalf("no server queue pair #%d", n)
		}
	}
}

type faultListener struct {
	verbs.Listener
	p *faultProvider
}

func (l *faultListener) GetRequest(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.GetRequest(ctx)
	if err != nil {
		return nil, err
	}
	return &faultRequest{ConnRequest: r, p: l.p}, nil
}

type faultRequest struct {
	verbs.ConnRequest
	p *faultProvider
}

func (r *faultRequest) Conn(cfg verbs.Config) (verbs.Conn, error) {
	c, err := r.ConnRequest.Conn(cfg)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c}
	r.p.mu.Lock()
	r.p.conns = append(r.p.conns, fc)
	r.p.mu.Unlock()
	select {
	case r.p.added <- struct{}{}:
	default:
	}
	return fc, nil
}

var errInjectedPostRecv = errors.New("injected: ibv_post_recv failed (ENOMEM)")

// faultConn injects faults into one queue pair.
type faultConn struct {
	verbs.Conn

	mu sync.Mutex
	// failNth > 0: the failNth WR with opcode failOp posted from now on
	// completes with failWith; the queue pair then goes to the error
	// state (Disconnect) and every WR after it in its chain is flushed.
	failOp   verbs.WROpcode
	failNth  int
	failWith verbs.WCStatus
	// lose picks completions that never arrive; lost counts them.
	lose func(wc *verbs.Completion) bool
	lost int
	// failRecvs PostRecv calls from now on fail.
	failRecvs int
	injected  []verbs.Completion
	// readLens are the lengths of the RDMA Reads posted, in order.
	readLens []int
	// chains are the posted chains that carry RDMA Writes, in order.
	chains [][]postedWR
}

// postedWR is what a test looks at of one posted work request.
type postedWR struct {
	op         verbs.WROpcode
	n          int // bytes its SGL names
	remoteAddr uint64
	rkey       uint32
}

func (c *faultConn) failNext(op verbs.WROpcode, nth int, status verbs.WCStatus) {
	c.mu.Lock()
	c.failOp, c.failNth, c.failWith = op, nth, status
	c.mu.Unlock()
}

func (c *faultConn) loseCompletions(f func(wc *verbs.Completion) bool) {
	c.mu.Lock()
	c.lose = f
	c.mu.Unlock()
}

func (c *faultConn) failPostRecv(n int) {
	c.mu.Lock()
	c.failRecvs = n
	c.mu.Unlock()
}

func (c *faultConn) lostCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

func (c *faultConn) PostRecv(wrs []verbs.RecvWR) error {
	c.mu.Lock()
	if c.failRecvs > 0 {
		c.failRecvs--
		c.mu.Unlock()
		return errInjectedPostRecv
	}
	c.mu.Unlock()
	return c.Conn.PostRecv(wrs)
}

func (c *faultConn) PostSend(wrs []verbs.SendWR) error {
	c.mu.Lock()
	var chain []postedWR
	writes := false
	for i := range wrs {
		n := 0
		for _, sg := range wrs[i].SGL {
			n += int(sg.Length)
		}
		if wrs[i].Opcode == verbs.OpRDMARead {
			c.readLens = append(c.readLens, n)
		}
		writes = writes || wrs[i].Opcode == verbs.OpRDMAWrite
		chain = append(chain, postedWR{op: wrs[i].Opcode, n: n, remoteAddr: wrs[i].RemoteAddr, rkey: wrs[i].RKey})
	}
	if writes {
		c.chains = append(c.chains, chain)
	}
	j := -1
	if c.failNth > 0 {
		for i := range wrs {
			if wrs[i].Opcode == c.failOp {
				if c.failNth--; c.failNth == 0 {
					j = i
					break
				}
			}
		}
	}
	if j < 0 {
		c.mu.Unlock()
		return c.Conn.PostSend(wrs)
	}
	c.injected = append(c.injected, verbs.Completion{WRID: wrs[j].ID, Status: c.failWith})
	for _, wr := range wrs[j+1:] {
		c.injected = append(c.injected, verbs.Completion{WRID: wr.ID, Status: verbs.WCWRFlushErr})
	}
	c.mu.Unlock()
	var err error
	if j > 0 {
		err = c.Conn.PostSend(wrs[:j])
	}
	c.Conn.Disconnect() // the queue pair is in the error state
	return err
}

func (c *faultConn) take(wcs []verbs.Completion) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(wcs, c.injected)
	c.injected = c.injected[n:]
	return n
}

func (c *faultConn) filter(wcs []verbs.Completion) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lose == nil {
		return len(wcs)
	}
	n := 0
	for i := range wcs {
		if c.lose(&wcs[i]) {
			c.lost++
			continue
		}
		wcs[n] = wcs[i]
		n++
	}
	return n
}

func (c *faultConn) Poll(ctx context.Context, wcs []verbs.Completion) (int, error) {
	for {
		if n := c.take(wcs); n > 0 {
			return n, nil
		}
		n, err := c.Conn.Poll(ctx, wcs)
		if n = c.filter(wcs[:n]); n > 0 {
			return n, nil
		}
		if err != nil {
			if n := c.take(wcs); n > 0 {
				return n, nil
			}
			return 0, err
		}
	}
}

func (c *faultConn) TryPoll(wcs []verbs.Completion) (int, error) {
	if n := c.take(wcs); n > 0 {
		return n, nil
	}
	n, err := c.Conn.TryPoll(wcs)
	return c.filter(wcs[:n]), err
}

// ---------------------------------------------------------------- ledger

// The ledger program: a non-idempotent APPEND (so the duplicate request
// cache is exercised) and idempotent bulk reads.
const (
	ledgerProg   = 0x40000098
	ledgerVers   = 1
	ledgerNull   = 0
	ledgerAppend = 1 // opaque data in (a Read chunk when large); seq, len, crc32 out
	ledgerFetch  = 2 // count, seed in; count bytes of pattern as payload (a Write chunk)
	ledgerList   = 3 // n in; opaque of n pattern bytes in Head (a Reply chunk)
)

type ledger struct {
	appends atomic.Int32  // APPEND executions
	gate    chan struct{} // when not nil, APPEND waits for it to close
	inside  atomic.Int32  // APPENDs waiting at the gate
}

func (l *ledger) program() *oncrpc.Program {
	procs := make([]oncrpc.Procedure, 4)
	procs[ledgerNull] = oncrpc.Procedure{Name: "NULL", Idempotent: true, Handler: func(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }}
	procs[ledgerAppend] = oncrpc.Procedure{Name: "APPEND", Handler: func(ctx context.Context, c *oncrpc.Call, r *oncrpc.Reply) error {
		var rd xdr.Reader
		c.ArgsReader(&rd)
		b := rd.Opaque(2 << 20)
		if rd.Err() != nil {
			return oncrpc.ErrGarbageArgs
		}
		if l.gate != nil {
			l.inside.Add(1)
			<-l.gate
		}
		seq := l.appends.Add(1)
		r.Head = xdr.AppendUint32(r.Head, uint32(seq))
		r.Head = xdr.AppendUint32(r.Head, uint32(len(b)))
		r.Head = xdr.AppendUint32(r.Head, crc32.ChecksumIEEE(b))
		return nil
	}}
	procs[ledgerFetch] = oncrpc.Procedure{Name: "FETCH", Idempotent: true, Handler: func(ctx context.Context, c *oncrpc.Call, r *oncrpc.Reply) error {
		var rd xdr.Reader
		c.ArgsReader(&rd)
		n, seed := rd.Uint32(), rd.Uint32()
		if rd.Err() != nil || n > 1<<20 {
			return oncrpc.ErrGarbageArgs
		}
		p := r.AllocPayload(int(n))
		pattern(seed, p)
		r.Head = xdr.AppendUint32(r.Head, n)
		r.SetPayload(p)
		return nil
	}}
	procs[ledgerList] = oncrpc.Procedure{Name: "LIST", Idempotent: true, Handler: func(ctx context.Context, c *oncrpc.Call, r *oncrpc.Reply) error {
		var rd xdr.Reader
		c.ArgsReader(&rd)
		n := rd.Uint32()
		if rd.Err() != nil || n > 512<<10 {
			return oncrpc.ErrGarbageArgs
		}
		b := make([]byte, n)
		pattern(n, b)
		r.Head = xdr.AppendOpaque(r.Head, b)
		return nil
	}}
	return &oncrpc.Program{Prog: ledgerProg, Name: "ledger", Versions: []oncrpc.Version{{Vers: ledgerVers, Procs: procs}}}
}

// withXID is cc sent with the given XID (a retransmission when reused).
func withXID(cc *oncrpc.ClientCall, xid uint32) *oncrpc.ClientCall {
	c := *cc
	c.XID = xid
	return &c
}

func appendCall(data []byte) *oncrpc.ClientCall {
	return &oncrpc.ClientCall{Prog: ledgerProg, Vers: ledgerVers, Proc: ledgerAppend, Args: xdr.AppendUint32(nil, uint32(len(data))), Payload: data}
}

func fetchCall(n, seed uint32) *oncrpc.ClientCall {
	return &oncrpc.ClientCall{Prog: ledgerProg, Vers: ledgerVers, Proc: ledgerFetch, Args: readArgs(n, seed), ReplyPayloadMax: int(n)}
}

func listCall(n uint32) *oncrpc.ClientCall {
	return &oncrpc.ClientCall{Prog: ledgerProg, Vers: ledgerVers, Proc: ledgerList, Args: xdr.AppendUint32(nil, n), LargeReply: true}
}

// checkResult checks a call's results: APPEND's length and checksum (and
// returns its sequence number), FETCH's and LIST's bytes.
func checkResult(t *testing.T, cc *oncrpc.ClientCall, data, res []byte) uint32 {
	t.Helper()
	rd := xdr.NewReader(res)
	switch cc.Proc {
	case ledgerAppend:
		seq, n, sum := rd.Uint32(), rd.Uint32(), rd.Uint32()
		if rd.Err() != nil || n != uint32(len(data)) || sum != crc32.ChecksumIEEE(data) {
			t.Fatalf("APPEND of %d bytes: results % x", len(data), res)
		}
		return seq
	case ledgerFetch, ledgerList:
		var n, seed uint32
		ar := xdr.NewReader(cc.Args)
		n = ar.Uint32()
		if cc.Proc == ledgerFetch {
			seed = ar.Uint32()
		} else {
			seed = n
		}
		b := rd.Opaque(2 << 20)
		want := make([]byte, n)
		pattern(seed, want)
		if rd.Err() != nil || string(b) != string(want) {
			t.Fatalf("proc %d of %d bytes: got %d bytes, wrong content or %v", cc.Proc, n, len(b), rd.Err())
		}
	}
	return 0
}

// ---------------------------------------------------------------- env

type faultEnv struct {
	t    *testing.T
	prov *faultProvider
	srv  *Server
	led  *ledger
	logs *observer.ObservedLogs
	addr string
	port int
}

func newFaultEnv(t *testing.T, l *ledger) *faultEnv {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	e := &faultEnv{t: t, led: l, logs: logs, prov: &faultProvider{Fabric: softfabric.NewFabric(), added: make(chan struct{}, 1)}, port: 700}
	e.addr = fmt.Sprintf("fabric-recovery-%d:20049", addrSeq.Add(1))
	drc := oncrpc.NewDRC(1024, 64<<20, time.Minute)
	e.srv = NewServer(log, oncrpc.NewDispatcher(log, drc, l.program()), e.prov, Config{})
	ln, err := e.prov.Listen(e.addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ln) }()
	t.Cleanup(func() {
		if l.gate != nil {
			select {
			case <-l.gate:
			default:
				close(l.gate)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve returned %v", err)
		}
		fab := e.prov.Fabric
		waitFor(t, "fabric objects released", func() bool { return fab.Stats() == softfabric.FabricStats{} }, func() string {
			return fmt.Sprintf("%+v", fab.Stats())
		})
		waitFor(t, "goroutines back", func() bool { return runtime.NumGoroutine() <= goroutines }, func() string {
			buf := make([]byte, 1<<16)
			return fmt.Sprintf("%d > %d\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
		})
	})
	return e
}

// dial connects from the client host 10.0.0.2, each time from another
// source port (as a reconnecting client does).
func (e *faultEnv) dial() *rdmaclient.Client {
	e.t.Helper()
	e.port++
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := rdmaclient.Dial(ctx, e.prov, e.addr, rdmaclient.Config{LocalAddr: fmt.Sprintf("10.0.0.2:%d", e.port)})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	if _, err := c.Call(ctxT(e.t), &oncrpc.ClientCall{Prog: ledgerProg, Vers: ledgerVers, Proc: ledgerNull}); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// failedCall runs cc, which must fail (within 5 s) because the
// connection died.
func failedCall(t *testing.T, c *rdmaclient.Client, cc *oncrpc.ClientCall, xid uint32) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Call(ctx, withXID(cc, xid))
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, rdmaclient.ErrClosed) {
			t.Fatalf("call across the fault: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call hangs across the fault")
	}
}

// closeAndCheckMemory closes the client and waits until the fabric holds
// no registered memory and no queue pair: the server tore the
// connection down and deregistered everything.
func (e *faultEnv) closeAndCheckMemory(c *rdmaclient.Client) {
	e.t.Helper()
	c.Close()
	fab := e.prov.Fabric
	waitFor(e.t, "server connection gone and every MR deregistered", func() bool {
		s := fab.Stats()
		return e.srv.Stats().Conns == 0 && s.MRs == 0 && s.MRBytes == 0 && s.Conns == 0 && s.PostedSends == 0 && s.PostedRecvs == 0
	}, func() string { return fmt.Sprintf("server conns %d, fabric %+v", e.srv.Stats().Conns, fab.Stats()) })
}

// oneWarning checks that the server logged exactly one WARN about the
// connection, with msg, and (when non-empty) fields containing each of
// want; and no per-request line about flushed work.
func (e *faultEnv) oneWarning(msg string, want map[string]string) {
	e.t.Helper()
	waitFor(e.t, "the server's warning", func() bool { return e.logs.FilterLevelExact(zapcore.WarnLevel).Len() > 0 }, func() string { return "none" })
	warns := e.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()
	if len(warns) != 1 || warns[0].Message != msg {
		e.t.Fatalf("server warnings %v, want one %q", entries(warns), msg)
	}
	fields := warns[0].ContextMap()
	for k, v := range want {
		if got := fmt.Sprint(fields[k]); !strings.Contains(got, v) {
			e.t.Errorf("warning field %s = %q, want it to contain %q (all: %v)", k, got, v, fields)
		}
	}
	for _, line := range e.logs.FilterLevelExact(zapcore.InfoLevel).AllUntimed() {
		if strings.Contains(line.Message, "cannot pull") || strings.Contains(line.Message, "cannot post") || strings.Contains(line.Message, "failed") {
			e.t.Errorf("per-request log line: %s %v", line.Message, line.ContextMap())
		}
	}
}

func entries(es []observer.LoggedEntry) []string {
	var s []string
	for _, e := range es {
		s = append(s, fmt.Sprintf("%s %v", e.Message, e.ContextMap()))
	}
	return s
}

// retransmit sends cc again with the same XID on a new connection and
// checks its results.
func (e *faultEnv) retransmit(cc *oncrpc.ClientCall, data []byte, xid uint32) uint32 {
	e.t.Helper()
	c := e.dial()
	res, err := c.Call(ctxT(e.t), withXID(cc, xid))
	if err != nil {
		e.t.Fatalf("retransmission on a new connection: %v", err)
	}
	seq := checkResult(e.t, cc, data, res)
	e.closeAndCheckMemory(c)
	return seq
}

// ---------------------------------------------------------------- tests

// TestRecoveryRDMAOperationFails: one of the server's RDMA operations
// completes in error mid-call, for each status a device reports: the
// Read of a WRITE's chunk (retransmission: the call runs then), the
// Write of a READ's payload into the Write list, the Write of a reply
// into the Reply chunk, and the reply's Send (the call had run: the
// retransmission is answered from the duplicate request cache).
func TestRecoveryRDMAOperationFails(t *testing.T) {
	big := make([]byte, 300<<10)
	pattern(9, big)
	cases := []struct {
		name   string
		op     verbs.WROpcode
		status verbs.WCStatus
		cc     *oncrpc.ClientCall
		data   []byte
		kind   string
		ran    bool // the call ran before the fault: the DRC answers
	}{
		{"Read chunk: retry exceeded", verbs.OpRDMARead, verbs.WCRetryExcErr, appendCall(big), big, "RDMA Read", false},
		{"Read chunk: remote access", verbs.OpRDMARead, verbs.WCRemAccessErr, appendCall(big), big, "RDMA Read", false},
		{"Read chunk: remote invalid request", verbs.OpRDMARead, verbs.WCRemInvReqErr, appendCall(big), big, "RDMA Read", false},
		{"Read chunk: local protection", verbs.OpRDMARead, verbs.WCLocProtErr, appendCall(big), big, "RDMA Read", false},
		{"Write list: retry exceeded", verbs.OpRDMAWrite, verbs.WCRetryExcErr, fetchCall(500<<10, 3), nil, "RDMA Write", false},
		{"Write list: remote access", verbs.OpRDMAWrite, verbs.WCRemAccessErr, fetchCall(500<<10, 3), nil, "RDMA Write", false},
		{"Reply chunk: retry exceeded", verbs.OpRDMAWrite, verbs.WCRetryExcErr, listCall(100 << 10), nil, "RDMA Write", false},
		{"Reply chunk: remote operation", verbs.OpRDMAWrite, verbs.WCRemOpErr, listCall(100 << 10), nil, "RDMA Write", false},
		{"reply Send: retry exceeded", verbs.OpSend, verbs.WCRetryExcErr, appendCall(big), big, "send", true},
		{"reply Send: RNR retry exceeded", verbs.OpSend, verbs.WCRNRRetryExcErr, appendCall([]byte("small")), []byte("small"), "send", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFaultEnv(t, &ledger{})
			c := e.dial()
			e.prov.nth(t, 1).failNext(tc.op, 1, tc.status)
			xid := c.NextXID()
			failedCall(t, c, tc.cc, xid)
			e.closeAndCheckMemory(c)
			e.oneWarning("connection failed", map[string]string{"first_error": tc.status.String(), "work_request": tc.kind})
			before := e.led.appends.Load()
			seq := e.retransmit(tc.cc, tc.data, xid)
			if tc.cc.Proc != ledgerAppend {
				return
			}
			if n := e.led.appends.Load(); n != 1 || seq != 1 {
				t.Fatalf("APPEND ran %d times (%d before the retransmission), answer's sequence %d: want exactly once", n, before, seq)
			}
			if tc.ran != (before == 1) {
				t.Fatalf("APPEND ran %d times before the retransmission; the fault was meant to strike %s it ran", before, map[bool]string{true: "after", false: "before"}[tc.ran])
			}
		})
	}
}

// TestRecoveryLostCompletion: a completion that never arrives. Losing the
// RDMA Read's completion leaves the call waiting: the client's call times
// out and it disconnects (as the Linux client does after timeo); the
// server then drops the call, frees everything, and the retransmission
// runs it. Losing the reply Send's completion leaves a slot (and its
// buffers) held: teardown still deregisters all of it.
func TestRecoveryLostCompletion(t *testing.T) {
	data := make([]byte, 200<<10)
	pattern(4, data)
	t.Run("RDMA Read", func(t *testing.T) {
		e := newFaultEnv(t, &ledger{})
		c := e.dial()
		sc := e.prov.nth(t, 1)
		sc.loseCompletions(func(wc *verbs.Completion) bool {
			kind, _ := wr.Split(wc.WRID)
			return kind == wr.Read
		})
		xid := c.NextXID()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := c.Call(ctx, withXID(appendCall(data), xid))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call whose Read completion was lost: %v, want a timeout", err)
		}
		if sc.lostCount() != 1 {
			t.Fatalf("%d completions lost, want 1", sc.lostCount())
		}
		e.closeAndCheckMemory(c)
		e.oneWarning("connection closed by the peer with calls in progress", map[string]string{"calls_dropped": "1"})
		if seq := e.retransmit(appendCall(data), data, xid); seq != 1 || e.led.appends.Load() != 1 {
			t.Fatalf("APPEND ran %d times, sequence %d: want once", e.led.appends.Load(), seq)
		}
	})
	t.Run("reply Send", func(t *testing.T) {
		e := newFaultEnv(t, &ledger{})
		c := e.dial()
		sc := e.prov.nth(t, 1)
		sc.loseCompletions(func(wc *verbs.Completion) bool {
			kind, _ := wr.Split(wc.WRID)
			return kind == wr.Send
		})
		for i := 0; i < 3; i++ {
			cc := fetchCall(100<<10, uint32(i))
			res, err := c.Call(ctxT(t), cc)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, cc, nil, res)
		}
		// (the warm-up NULL's Send may complete after lose is set)
		if n := sc.lostCount(); n < 3 || n > 4 {
			t.Fatalf("%d Send completions lost, want 3 or 4", n)
		}
		e.closeAndCheckMemory(c)
	})
}

// TestRecoveryDisconnectCallsInFlight: the connection goes away while
// calls are in every state: waiting for their RDMA Reads (completions
// delayed), running in the handler, sending replies. Every call fails on
// the client without a hang; the server logs one line with the count of
// calls dropped; each retransmission on the next connection is answered,
// APPEND exactly once per XID (from the cache for those that ran).
func TestRecoveryDisconnectCallsInFlight(t *testing.T) {
	for _, side := range []string{"client closes", "server queue pair fails"} {
		t.Run(side, func(t *testing.T) {
			l := &ledger{gate: make(chan struct{})}
			e := newFaultEnv(t, l)
			c := e.dial()
			sc := e.prov.nth(t, 1)
			type call struct {
				cc   *oncrpc.ClientCall
				data []byte
				xid  uint32
			}
			var calls []call
			for i := 0; i < 6; i++ { // held at the gate
				d := make([]byte, 1000+i*70000)
				pattern(uint32(i), d)
				calls = append(calls, call{appendCall(d), d, c.NextXID()})
			}
			for i := 0; i < 4; i++ {
				calls = append(calls, call{fetchCall(uint32(64<<10*(i+1)), uint32(i)), nil, c.NextXID()})
			}
			errs := make(chan error, len(calls))
			for _, k := range calls[:6] {
				go func() {
					_, err := c.Call(ctxT(t), withXID(k.cc, k.xid))
					errs <- err
				}()
			}
			waitFor(t, "6 APPENDs at the gate", func() bool { return l.inside.Load() == 6 }, func() string { return fmt.Sprint(l.inside.Load()) })
			// Slow the fabric so the next calls' Writes are in flight too.
			e.prov.SetFaults(softfabric.FaultPlan{CompletionDelay: 20 * time.Millisecond})
			for _, k := range calls[6:] {
				go func() {
					_, err := c.Call(ctxT(t), withXID(k.cc, k.xid))
					errs <- err
				}()
			}
			time.Sleep(30 * time.Millisecond)
			if side == "client closes" {
				c.Close()
			} else {
				sc.failNext(verbs.OpSend, 1, verbs.WCRetryExcErr)
				close(l.gate) // the first reply Send fails
			}
			for range calls {
				select {
				case err := <-errs:
					if err != nil && !errors.Is(err, rdmaclient.ErrClosed) {
						t.Fatalf("call across the disconnect: %v", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a call hangs across the disconnect")
				}
			}
			e.prov.SetFaults(softfabric.FaultPlan{})
			if side == "client closes" {
				close(l.gate) // the handlers finish on a dead connection
			}
			e.closeAndCheckMemory(c)
			if side == "client closes" {
				e.oneWarning("connection closed by the peer with calls in progress", nil)
			} else {
				e.oneWarning("connection failed", map[string]string{"first_error": verbs.WCRetryExcErr.String(), "work_request": "send"})
			}
			w := e.logs.FilterLevelExact(zapcore.WarnLevel).AllUntimed()[0].ContextMap()
			if d, _ := w["calls_dropped"].(int64); d < 6 {
				t.Errorf("calls_dropped %v, want at least the 6 APPENDs", w["calls_dropped"])
			}
			ran := l.appends.Load()
			c2 := e.dial()
			seqs := map[uint32]bool{}
			for _, k := range calls {
				res, err := c2.Call(ctxT(t), withXID(k.cc, k.xid))
				if err != nil {
					t.Fatalf("retransmission: %v", err)
				}
				if seq := checkResult(t, k.cc, k.data, res); k.cc.Proc == ledgerAppend {
					if seqs[seq] {
						t.Fatalf("two APPENDs answered with sequence %d", seq)
					}
					seqs[seq] = true
				}
			}
			if n := l.appends.Load(); n != 6 || ran != 6 {
				t.Fatalf("APPEND ran %d times (%d before the retransmissions), want 6: each exactly once", n, ran)
			}
			e.closeAndCheckMemory(c2)
		})
	}
}

// TestRecoveryReceiveRepostFails: the Receive the completion loop posts
// to keep the grant covered cannot be posted. The server does not wait
// for the client's Send to meet no Receive: it logs the failure once and
// disconnects; the call received is dropped and its retransmission runs.
func TestRecoveryReceiveRepostFails(t *testing.T) {
	e := newFaultEnv(t, &ledger{})
	c := e.dial()
	e.prov.nth(t, 1).failPostRecv(1)
	data := []byte("after the failed re-post")
	xid := c.NextXID()
	failedCall(t, c, appendCall(data), xid)
	e.closeAndCheckMemory(c)
	e.oneWarning("connection failed", map[string]string{"first_error": errInjectedPostRecv.Error(), "work_request": "receive re-post"})
	if seq := e.retransmit(appendCall(data), data, xid); seq != 1 || e.led.appends.Load() != 1 {
		t.Fatalf("APPEND ran %d times, sequence %d: want once", e.led.appends.Load(), seq)
	}
}

// TestRecoveryRNR: the server's reply finds no Receive posted at the
// client (a client that posted one Receive and sent two calls): the
// fabric fails the Send with RNR retry exceeded (rnr_retry 0), the server
// logs it once and frees everything. (A client exceeding its grant, whose
// Send finds no Receive at the server, is TestCreditOverrun.)
func TestRecoveryRNR(t *testing.T) {
	e := newFaultEnv(t, &ledger{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var mr *verbs.MR
	priv := proto.PrivateData{SendSize: 4096, RecvSize: 4096}.Append(nil)
	vc, err := e.prov.Dial(ctx, e.addr, verbs.ConnParams{PrivateData: priv, ResponderResources: 16, Prepare: func(c verbs.Conn) error {
		var err error
		if mr, err = c.Register(3*4096, verbs.AccessLocalWrite); err != nil {
			return err
		}
		return c.PostRecv([]verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{mr.SGE(0, 4096)}}})
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, off := range []int{4096, 8192} {
		xid := uint32(0x5000 + i)
		h := oncrpc.CallHeader{XID: xid, Prog: ledgerProg, Vers: ledgerVers, Proc: ledgerNull}
		msg := append(w(xid, 1, 8, uint32(proto.ProcMsg), 0, 0, 0), oncrpc.AppendCallHeader(nil, &h)...)
		n := copy(mr.Bytes()[off:], msg)
		if err := vc.PostSend([]verbs.SendWR{{ID: uint64(10 + i), Opcode: verbs.OpSend, SGL: []verbs.SGE{mr.SGE(off, n)}, Signaled: true}}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-vc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection survived a reply sent to no Receive")
	}
	vc.Close()
	mr.Deregister()
	fab := e.prov.Fabric
	waitFor(t, "server connection gone and every MR deregistered", func() bool {
		return e.srv.Stats().Conns == 0 && fab.Stats() == softfabric.FabricStats{Listeners: 1}
	}, func() string { return fmt.Sprintf("server conns %d, fabric %+v", e.srv.Stats().Conns, fab.Stats()) })
	e.oneWarning("connection failed", map[string]string{"first_error": verbs.WCRNRRetryExcErr.String(), "work_request": "send"})
}

package oncrpc

import (
	"context"
	"maps"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/xdr"
	"go.uber.org/zap"
)

// statsProgram answers with the status its argument word names, or with
// an RPC-level error for the magic values below.
func statsProgram() *Program {
	status := func(_ context.Context, call *Call, reply *Reply) error {
		var r xdr.Reader
		ar := call.ArgsReader(&r)
		v := ar.Uint32()
		switch {
		case ar.Err() != nil || v == 1000:
			return ErrGarbageArgs
		case v == 1001:
			return ErrSystem
		case v == 1002:
			return &AuthError{Stat: AuthTooWeak}
		}
		reply.Head = xdr.AppendUint32(reply.Head, v)
		return nil
	}
	// COOKIE answers as NLM does: the argument's opaque cookie back,
	// then the status word after it (a missing word: results too short
	// to hold a status, counted as SUCCESS).
	cookie := func(_ context.Context, call *Call, reply *Reply) error {
		var r xdr.Reader
		ar := call.ArgsReader(&r)
		c := ar.Opaque(64)
		reply.Head = xdr.AppendOpaque(reply.Head, c)
		if v := ar.Uint32(); ar.Err() == nil {
			reply.Head = xdr.AppendUint32(reply.Head, v)
		}
		return nil
	}
	void := func(context.Context, *Call, *Reply) error { return nil }
	return &Program{Prog: 400100, Name: "stats", Statuses: map[uint32]string{0: "S_OK", 2: "S_NOENT", 10001: "S_BADHANDLE"},
		Versions: []Version{{Vers: 1, Procs: []Procedure{
			{Name: "NULL", Handler: void, Idempotent: true},
			{Name: "STATUS", Handler: status, Idempotent: true, Status: true},
			{Name: "GAP"},
			{Name: "COOKIE", Handler: cookie, Idempotent: true, StatusAfterCookie: true},
		}}}}
}

func TestDispatchCounts(t *testing.T) {
	d := NewDispatcher(zap.NewNop(), nil, statsProgram())
	tcp := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("127.0.0.1:900")}
	rdma := Peer{Transport: RDMA, Remote: netip.MustParseAddrPort("127.0.0.1:901")}
	var in, out [numTransports]uint64
	dispatch := func(from Peer, msg []byte) {
		var call Call
		reply := NewReply(nil)
		if !d.Dispatch(context.Background(), &BufferExchange{From: from, Msg: msg}, &call, &reply) {
			t.Fatal("no reply")
		}
		in[from.Transport] += uint64(len(msg))
		out[from.Transport] += uint64(reply.Len())
	}
	send := func(from Peer, prog, vers, proc uint32, args ...uint32) {
		msg := AppendCallHeader(nil, &CallHeader{XID: 9, Prog: prog, Vers: vers, Proc: proc, Cred: NewAuthSys("h", 1, 1)})
		for _, a := range args {
			msg = xdr.AppendUint32(msg, a)
		}
		dispatch(from, msg)
	}
	send(tcp, 400100, 1, 0)
	send(tcp, 400100, 1, 0)
	send(tcp, 400100, 1, 1, 0)
	send(rdma, 400100, 1, 1, 2)
	send(rdma, 400100, 1, 1, 10001)
	send(tcp, 400100, 1, 1, 77) // a status the program does not name
	send(tcp, 400100, 1, 1)     // no argument: GARBAGE_ARGS
	send(tcp, 400100, 1, 1, 1001)
	send(tcp, 400100, 1, 1, 1002)
	send(tcp, 400100, 1, 2) // no handler
	send(tcp, 400100, 1, 4) // out of range
	send(tcp, 400100, 2, 0) // version
	send(tcp, 400101, 1, 0) // program
	dispatch(tcp, AppendCallHeader(nil, &CallHeader{XID: 9, Prog: 400100, Vers: 1, Proc: 0, Cred: OpaqueAuth{Flavor: 99}}))

	// The status after a cookie of 0, 3 (padded to 4) and 4 bytes; none.
	send(tcp, 400100, 1, 3, 0, 2)
	send(rdma, 400100, 1, 3, 3, 0x01020300, 10001)
	send(tcp, 400100, 1, 3, 4, 0x01020304, 0)
	send(tcp, 400100, 1, 3, 4, 0x01020304)

	c := d.Counts()
	if len(c.Procs) != 3 {
		t.Fatalf("procedures counted: %+v", c.Procs)
	}
	want := map[string]map[string]uint64{
		"NULL":   {"SUCCESS": 2},
		"STATUS": {"S_OK": 1, "S_NOENT": 1, "S_BADHANDLE": 1, "OTHER": 1, "GARBAGE_ARGS": 1, "SYSTEM_ERR": 1, "AUTH_ERROR": 1},
		"COOKIE": {"S_NOENT": 1, "S_BADHANDLE": 1, "S_OK": 1, "SUCCESS": 1},
	}
	for _, p := range c.Procs {
		if p.Program != "stats" || p.Version != 1 || !maps.Equal(p.Statuses, want[p.Procedure]) {
			t.Errorf("%s v%d %s: %v, want %v", p.Program, p.Version, p.Procedure, p.Statuses, want[p.Procedure])
		}
		var n uint64
		for _, v := range p.Statuses {
			n += v
		}
		// Every call had XID 9: none is timed.
		if p.Latency.Count() != 0 {
			t.Errorf("%s latency: %d observations of %d calls with XID 9, want none", p.Procedure, p.Latency.Count(), n)
		}
	}
	wantRejected := map[string]uint64{"PROC_UNAVAIL": 2, "PROG_MISMATCH": 1, "PROG_UNAVAIL": 1, "AUTH_ERROR": 1, "GARBAGE_HEADER": 0, "RPC_MISMATCH": 0}
	if !maps.Equal(c.Rejected, wantRejected) {
		t.Errorf("rejected %v, want %v", c.Rejected, wantRejected)
	}
	if c.BytesIn[TCP] != in[TCP] || c.BytesOut[TCP] != out[TCP] || c.BytesIn[RDMA] != in[RDMA] || c.BytesOut[RDMA] != out[RDMA] {
		t.Errorf("bytes in %v out %v, want tcp %d/%d rdma %d/%d", c.BytesIn, c.BytesOut, in[TCP], out[TCP], in[RDMA], out[RDMA])
	}
	if len(c.BytesIn) != 2 {
		t.Errorf("bytes counted for transports %v", c.BytesIn)
	}
}

// TestLatencySampling checks that one call in LatencySampleEvery is
// timed, for consecutive XIDs and for XIDs that step by a power of two,
// while every call is counted.
func TestLatencySampling(t *testing.T) {
	for _, step := range []uint32{1, 2, 4, 8, 16} {
		d := NewDispatcher(zap.NewNop(), nil, statsProgram())
		const n = 64 * LatencySampleEvery
		xid := uint32(0x12345678)
		for range n {
			var call Call
			reply := NewReply(nil)
			msg := AppendCallHeader(nil, &CallHeader{XID: xid, Prog: 400100, Vers: 1, Proc: 0})
			d.Dispatch(context.Background(), &BufferExchange{From: Peer{Transport: TCP}, Msg: msg}, &call, &reply)
			xid += step
		}
		c := d.Counts()
		if len(c.Procs) != 1 || c.Procs[0].Statuses["SUCCESS"] != n {
			t.Fatalf("step %d: counts %+v", step, c.Procs)
		}
		if got := c.Procs[0].Latency.Count(); got != n/LatencySampleEvery {
			t.Errorf("XIDs stepping by %d: %d of %d calls timed, want %d", step, got, n, n/LatencySampleEvery)
		}
	}
}

// TestTimedSampling: the latency sample takes one XID in 16 over any run
// of consecutive XIDs (as clients number their calls), never a burst:
// 2 to 4 of any 50 (the bound the daemon's metrics test relies on), and
// exactly 4,096 of 65,536.
func TestTimedSampling(t *testing.T) {
	starts := []uint32{0, 1, 15, 16, 0xf0, 0xff, 0x100, 0xfff0, 0xffffffc0, 0x7fffffff}
	for s := uint32(0); s < 1<<12; s += 7 {
		starts = append(starts, s)
	}
	for _, s := range starts {
		n := 0
		for i := uint32(0); i < 50; i++ {
			if timed(s + i) {
				n++
			}
		}
		if n < 2 || n > 4 {
			t.Fatalf("%d of the 50 XIDs from %#x timed, want 2 to 4", n, s)
		}
	}
	n := 0
	for x := uint32(0); x < 1<<16; x++ {
		if timed(0x12340000 + x) {
			n++
		}
	}
	if n != 1<<16/LatencySampleEvery {
		t.Fatalf("%d of 65,536 consecutive XIDs timed, want %d", n, 1<<16/LatencySampleEvery)
	}
}

// TestConnCounts checks the per-connection counters: calls on opened
// connections, on peers never opened and on connections since closed
// all add up in Counts and in the client table, closing loses nothing,
// and with counting off nothing is counted.
func TestConnCounts(t *testing.T) {
	d := NewDispatcher(zap.NewNop(), NewDRC(16, 1<<16, time.Minute), statsProgram())
	clients := meter.NewClients(0)
	call := func(p *Peer, xid uint32, proc uint32, args ...uint32) (in, out int) {
		msg := AppendCallHeader(nil, &CallHeader{XID: xid, Prog: 400100, Vers: 1, Proc: proc, Cred: NewAuthSys("h", 1, 1)})
		for _, a := range args {
			msg = xdr.AppendUint32(msg, a)
		}
		var c Call
		reply := NewReply(nil)
		if !d.Dispatch(context.Background(), &BufferExchange{From: *p, Msg: msg}, &c, &reply) {
			t.Fatal("no reply")
		}
		return len(msg), reply.Len()
	}
	a := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("192.0.2.1:700")}
	b := Peer{Transport: RDMA, Remote: netip.MustParseAddrPort("192.0.2.1:701")}
	other := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("192.0.2.2:700")}
	udp := Peer{Transport: UDP, Remote: netip.MustParseAddrPort("192.0.2.3:700")}
	for _, p := range []*Peer{&a, &b, &other} {
		d.OpenConn(p, clients)
		if p.Client == nil || p.counts == nil {
			t.Fatal("OpenConn gave no counters")
		}
	}
	var want meter.Traffic // 192.0.2.1's
	add := func(in, out int) { want.Calls++; want.BytesIn += uint64(in); want.BytesOut += uint64(out) }
	add(call(&a, 1, 1, 0))
	add(call(&a, 2, 1, 2))
	add(call(&b, 3, 0))
	add(call(&b, 4, 7)) // PROC_UNAVAIL
	call(&other, 5, 1, 0)
	call(&udp, 6, 1, 2)
	check := func(what string) {
		t.Helper()
		c := d.Counts()
		got := map[string]uint64{}
		for _, p := range c.Procs {
			for st, n := range p.Statuses {
				got[p.Procedure+" "+st] += n
			}
		}
		if w := map[string]uint64{"STATUS S_OK": 2, "STATUS S_NOENT": 2, "NULL SUCCESS": 1}; !maps.Equal(got, w) {
			t.Errorf("%s: calls %v, want %v", what, got, w)
		}
		if c.Rejected["PROC_UNAVAIL"] != 1 {
			t.Errorf("%s: rejected %v", what, c.Rejected)
		}
		if c.BytesIn[UDP] == 0 || c.BytesIn[TCP] == 0 || c.BytesIn[RDMA] == 0 {
			t.Errorf("%s: bytes in %v", what, c.BytesIn)
		}
		var top meter.ClientSnapshot
		for _, e := range clients.Top(10).Top {
			if e.Addr == a.Remote.Addr() {
				top = e
			}
		}
		if top.Calls != want.Calls || top.BytesIn != want.BytesIn || top.BytesOut != want.BytesOut {
			t.Errorf("%s: client %+v, want %+v", what, top, want)
		}
	}
	check("open")
	before := d.Counts()
	d.CloseConn(&a)
	d.CloseConn(&b)
	check("after close")
	if after := d.Counts(); !maps.Equal(after.BytesIn, before.BytesIn) || !maps.Equal(after.BytesOut, before.BytesOut) {
		t.Errorf("bytes changed by closing: %v/%v, then %v/%v", before.BytesIn, before.BytesOut, after.BytesIn, after.BytesOut)
	}
	if n := len(d.stats.live); n != 1 {
		t.Errorf("%d connections still registered, want 1", n)
	}

	off := NewDispatcher(zap.NewNop(), nil, statsProgram())
	off.SetCounting(false)
	p := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("192.0.2.9:700")}
	off.OpenConn(&p, clients)
	if p.counts != nil || p.Client != nil {
		t.Fatal("OpenConn with counting off gave counters")
	}
	var c Call
	reply := NewReply(nil)
	off.Dispatch(context.Background(), &BufferExchange{From: p, Msg: AppendCallHeader(nil, &CallHeader{XID: 16, Prog: 400100, Vers: 1, Proc: 0})}, &c, &reply)
	if got := off.Counts(); len(got.Procs) != 0 || len(got.BytesIn) != 0 {
		t.Fatalf("counting off counted %+v", got)
	}
}

// TestConnCountsConcurrent runs calls on many connections at once, each
// opened and closed while others run and Counts reads (for -race), and
// checks that every call is counted once.
func TestConnCountsConcurrent(t *testing.T) {
	d := NewDispatcher(zap.NewNop(), nil, statsProgram())
	clients := meter.NewClients(0)
	const conns, calls = 8, 200
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			p := Peer{Transport: TCP, Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 700)}
			d.OpenConn(&p, clients)
			defer d.CloseConn(&p)
			msg := xdr.AppendUint32(AppendCallHeader(nil, &CallHeader{XID: uint32(i), Prog: 400100, Vers: 1, Proc: 1}), 0)
			for range calls {
				var c Call
				reply := NewReply(nil)
				d.Dispatch(context.Background(), &BufferExchange{From: p, Msg: msg}, &c, &reply)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			d.Counts()
			clients.Top(3)
		}
	})
	wg.Wait()
	c := d.Counts()
	if len(c.Procs) != 1 || c.Procs[0].Statuses["S_OK"] != conns*calls {
		t.Fatalf("counts %+v, want %d S_OK", c.Procs, conns*calls)
	}
	var n uint64
	for _, e := range clients.Top(conns).Top {
		n += e.Calls
	}
	if n != conns*calls {
		t.Fatalf("clients counted %d calls, want %d", n, conns*calls)
	}
}

// TestProgramStatusesIndex checks the status lookup (table below 128,
// binary search above) against the table's own order.
func TestProgramStatusesIndex(t *testing.T) {
	m := map[uint32]string{0: "A", 1: "B", 5: "C", 127: "D", 128: "E", 200: "F", 10001: "G", 10008: "H", 1<<32 - 1: "I"}
	s := newProgramStatuses(m)
	for i, v := range s.values {
		if got := s.index(v); got != i || s.names[got] != m[v] {
			t.Errorf("index(%d) = %d, want %d (%s)", v, got, i, m[v])
		}
	}
	other := len(s.values) + outcomeOtherStatus
	for _, v := range []uint32{2, 4, 6, 126, 129, 199, 201, 10000, 10002, 1<<32 - 2} {
		if got := s.index(v); got != other {
			t.Errorf("index(%d) = %d, want OTHER %d", v, got, other)
		}
	}
}

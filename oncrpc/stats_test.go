package oncrpc

import (
	"context"
	"maps"
	"net/netip"
	"testing"

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
	void := func(context.Context, *Call, *Reply) error { return nil }
	return &Program{Prog: 400100, Name: "stats", Statuses: map[uint32]string{0: "S_OK", 2: "S_NOENT", 10001: "S_BADHANDLE"},
		Versions: []Version{{Vers: 1, Procs: []Procedure{
			{Name: "NULL", Handler: void, Idempotent: true},
			{Name: "STATUS", Handler: status, Idempotent: true, Status: true},
			{Name: "GAP"},
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
	send(tcp, 400100, 1, 3) // out of range
	send(tcp, 400100, 2, 0) // version
	send(tcp, 400101, 1, 0) // program
	dispatch(tcp, AppendCallHeader(nil, &CallHeader{XID: 9, Prog: 400100, Vers: 1, Proc: 0, Cred: OpaqueAuth{Flavor: 99}}))

	c := d.Counts()
	if len(c.Procs) != 2 {
		t.Fatalf("procedures counted: %+v", c.Procs)
	}
	want := map[string]map[string]uint64{
		"NULL":   {"SUCCESS": 2},
		"STATUS": {"S_OK": 1, "S_NOENT": 1, "S_BADHANDLE": 1, "OTHER": 1, "GARBAGE_ARGS": 1, "SYSTEM_ERR": 1, "AUTH_ERROR": 1},
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

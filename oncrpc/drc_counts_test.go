package oncrpc

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestDRCCounts(t *testing.T) {
	drc := NewDRC(2, 1<<20, time.Minute)
	runs := 0
	prog := &Program{Prog: 400200, Name: "drc", Versions: []Version{{Vers: 1, Procs: []Procedure{
		{Name: "NULL", Handler: func(context.Context, *Call, *Reply) error { runs++; return nil }},
	}}}}
	d := NewDispatcher(zap.NewNop(), drc, prog)
	from := Peer{Transport: TCP, Remote: netip.MustParseAddrPort("127.0.0.1:900")}
	send := func(xid uint32) {
		ex := &BufferExchange{From: from, Msg: AppendCallHeader(nil, &CallHeader{XID: xid, Prog: 400200, Vers: 1, Proc: 0})}
		var call Call
		reply := NewReply(nil)
		d.Dispatch(context.Background(), ex, &call, &reply)
	}
	send(1)
	send(1) // replayed
	send(2)
	send(3) // evicts 1
	send(1) // a miss again, evicting 2
	got := drc.Counts()
	if want := (DRCCounts{Hits: 1, Misses: 4, Evictions: 2}); got != want {
		t.Fatalf("DRC counts %+v, want %+v", got, want)
	}
	if runs != 4 {
		t.Fatalf("procedure ran %d times, want 4", runs)
	}
}

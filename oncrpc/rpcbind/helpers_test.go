package rpcbind_test

import (
	"context"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// unhex decodes hex written with spaces and newlines for readability.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	loopback = netip.MustParseAddrPort("127.0.0.1:700")
	foreign  = netip.MustParseAddrPort("192.0.2.7:700")
	local    = netip.MustParseAddrPort("192.0.2.1:111")
)

// dispatch runs one call in process, from remote over TCP to local, and
// returns the whole RPC reply.
func dispatch(t testing.TB, prog *oncrpc.Program, remote netip.AddrPort, xid, vers, proc uint32, args []byte) []byte {
	t.Helper()
	d := oncrpc.NewDispatcher(zap.NewNop(), nil, prog)
	h := oncrpc.CallHeader{XID: xid, Prog: prog.Prog, Vers: vers, Proc: proc}
	msg := append(oncrpc.AppendCallHeader(nil, &h), args...)
	ex := &oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Local: local, Remote: remote}, Msg: msg}
	var call oncrpc.Call
	reply := oncrpc.NewReply(nil)
	if !d.Dispatch(context.Background(), ex, &call, &reply) {
		t.Fatalf("no reply for vers %d proc %d", vers, proc)
	}
	return reply.AppendFlat(nil)
}

// results dispatches and returns the results of a SUCCESS reply.
func results(t testing.TB, prog *oncrpc.Program, remote netip.AddrPort, vers, proc uint32, args []byte) []byte {
	t.Helper()
	res, err := oncrpc.ParseReply(dispatch(t, prog, remote, 1, vers, proc, args))
	if err != nil {
		t.Fatalf("vers %d proc %d: %v", vers, proc, err)
	}
	return res
}

func acceptStat(t testing.TB, msg []byte) oncrpc.AcceptStat {
	t.Helper()
	h, _, err := oncrpc.DecodeReplyHeader(msg)
	if err != nil {
		t.Fatal(err)
	}
	if h.ReplyStat != oncrpc.MsgAccepted {
		t.Fatalf("reply denied: %+v", h)
	}
	return h.AcceptStat
}

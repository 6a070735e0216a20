package mount

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

type okBackend struct{}

func (okBackend) Exports(context.Context) []Export { return nil }
func (okBackend) Mount(context.Context, *oncrpc.Call, string) ([]byte, []uint32, Stat) {
	return []byte{1, 2, 3, 4}, nil, StatOK
}

func mntFrom(t *testing.T, s *Server, remote netip.AddrPort, p string) {
	t.Helper()
	call := &oncrpc.Call{Args: AppendDirpath(nil, p)}
	call.Bind(&oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Remote: remote}})
	reply := oncrpc.NewReply(nil)
	if err := s.mnt(context.Background(), call, &reply); err != nil {
		t.Fatal(err)
	}
}

// TestMountListBound: the list keeps at most maxMounts entries, dropping
// the oldest; a repeated MNT refreshes its entry instead of adding one.
func TestMountListBound(t *testing.T) {
	s := NewServer(zap.NewNop(), okBackend{})
	s.maxMounts = 3
	c := netip.MustParseAddrPort("192.0.2.1:700")
	for i := range 5 {
		mntFrom(t, s, c, fmt.Sprintf("/e%d", i))
	}
	mntFrom(t, s, c, "/e2") // refresh: /e2 becomes the newest
	m := s.Mounts()
	if len(m) != 3 || m[0].Directory != "/e3" || m[1].Directory != "/e4" || m[2].Directory != "/e2" {
		t.Fatalf("mount list = %+v", m)
	}
	if len(s.mounts) != 3 {
		t.Fatalf("index holds %d entries", len(s.mounts))
	}
	if DefaultMaxMounts != 10000 || NewServer(zap.NewNop(), okBackend{}).maxMounts != DefaultMaxMounts {
		t.Fatal("default bound changed")
	}
}

// TestDumpFitsReplyLimit: over a transport with a reply limit (UDP), DUMP
// is cut short and still a well-formed list.
func TestDumpFitsReplyLimit(t *testing.T) {
	s := NewServer(zap.NewNop(), okBackend{})
	c := netip.MustParseAddrPort("192.0.2.1:700")
	for i := range 100 {
		mntFrom(t, s, c, fmt.Sprintf("/export/%0100d", i))
	}
	call := &oncrpc.Call{}
	call.Bind(&oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.UDP, Remote: c}, Max: 2048})
	reply := oncrpc.NewReply(nil)
	if err := s.dump(context.Background(), call, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Head) > 2048 {
		t.Fatalf("DUMP reply of %d bytes exceeds the limit", len(reply.Head))
	}
	l, err := DecodeMountList(xdr.NewReader(reply.Head))
	if err != nil || len(l) == 0 || len(l) == 100 {
		t.Fatalf("cut list: %d entries, %v", len(l), err)
	}
}

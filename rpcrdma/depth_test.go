package rpcrdma

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma/proto"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// depthListener records the depths the server accepts each request with.
type depthListener struct {
	verbs.Listener
	got chan [2]uint8 // initiator depth, responder resources
}

func (l *depthListener) GetRequest(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.GetRequest(ctx)
	if err != nil {
		return nil, err
	}
	return &depthRequest{ConnRequest: r, got: l.got}, nil
}

type depthRequest struct {
	verbs.ConnRequest
	got chan [2]uint8
}

func (r *depthRequest) Accept(priv []byte, initiatorDepth, responderResources uint8) error {
	r.got <- [2]uint8{initiatorDepth, responderResources}
	return r.ConnRequest.Accept(priv, initiatorDepth, responderResources)
}

// TestAcceptInitiatorDepth: the server issues as many RDMA Reads at a time
// as the client serves (its responder resources), at most 16, at least 1.
// Every Linux client used to be accepted with a depth of 1: the real
// provider reported the client's initiator depth (0) where the server
// asked for its responder resources, so every WRITE's Read chunk waited
// for the one before it and, on a lossy link, for each retransmission
// timeout (issue 16). That mapping is checked on a device by the verbs
// conformance case ConnectPrivateData; this test holds the server's rule.
func TestAcceptInitiatorDepth(t *testing.T) {
	fab := softfabric.NewFabric()
	disp := oncrpc.NewDispatcher(zap.NewNop(), nil, (&echoServer{unblock: make(chan struct{})}).program())
	srv := NewServer(zap.NewNop(), disp, fab, Config{})
	addr := fmt.Sprintf("fabric-depth-%d:20049", addrSeq.Add(1))
	inner, err := fab.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	l := &depthListener{Listener: inner, got: make(chan [2]uint8, 1)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	for _, tc := range []struct{ peerResp, want uint8 }{{0, 1}, {1, 1}, {4, 4}, {16, 16}, {255, 16}} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		priv := proto.PrivateData{SendSize: 4096, RecvSize: 4096}.Append(nil)
		c, err := fab.Dial(ctx, addr, verbs.ConnParams{PrivateData: priv, InitiatorDepth: 0, ResponderResources: tc.peerResp})
		cancel()
		if err != nil {
			t.Fatalf("peer responder resources %d: dial: %v", tc.peerResp, err)
		}
		select {
		case got := <-l.got:
			if got[0] != tc.want || got[1] != 0 {
				t.Errorf("peer responder resources %d: accepted with initiator depth %d, responder resources %d; want %d, 0",
					tc.peerResp, got[0], got[1], tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("peer responder resources %d: no Accept", tc.peerResp)
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != ErrServerClosed {
		t.Fatalf("Serve returned %v", err)
	}
	waitFor(t, "fabric objects released", func() bool { return fab.Stats() == softfabric.FabricStats{} }, func() string {
		return fmt.Sprintf("%+v", fab.Stats())
	})
}

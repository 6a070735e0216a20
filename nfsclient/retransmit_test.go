package nfsclient_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// redialClears is the server's fabric as the client dials it: every dial
// after the first clears the fault plan first, so a fault strikes the
// first connection only.
type redialClears struct {
	*softfabric.Fabric
	dials atomic.Int32
}

func (p *redialClears) Dial(ctx context.Context, addr string, params verbs.ConnParams) (verbs.Conn, error) {
	if p.dials.Add(1) > 1 {
		p.Fabric.SetFaults(softfabric.FaultPlan{})
	}
	return p.Fabric.Dial(ctx, addr, params)
}

// TestRetransmissionAnsweredFromCache: the server runs a MKDIR but the
// connection dies before its reply goes out (the fabric drops it at the
// server's reply Send). The client reconnects and sends the call again
// with the same XID, as the kernel client does, so the server's duplicate
// request cache answers with the first execution's reply: the MKDIR
// succeeds. Sent with a fresh XID it would run again and fail with EEXIST.
func TestRetransmissionAnsweredFromCache(t *testing.T) {
	s := startServer(t)
	cfg, err := nfsclient.ParseURL(s.url("retries=5"))
	if err != nil {
		t.Fatal(err)
	}
	prov := &redialClears{Fabric: s.fab}
	cfg.Proto = nfsclient.ProtoRDMA
	cfg.RDMA = nfsclient.RDMAOptions{Provider: prov, Addr: s.rdmaAddr, LocalAddr: fmt.Sprintf("127.0.0.1:%d", 40000+rdmaSeq.Add(1))}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := nfsclient.DialConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Mkdir("warm", 0o755); err != nil {
		t.Fatal(err)
	}
	// Send-queue operations from now on, both sides: the Send of the call
	// Mkdir makes first (the parent's attributes) and its reply (1, 2),
	// the MKDIR's Send (3); its reply is dropped. (Checked: with a fresh
	// XID per attempt this test fails with NFS3ERR_EXIST.)
	s.fab.SetFaults(softfabric.FaultPlan{DropAfter: 3})
	err = f.Mkdir("once", 0o755)
	s.fab.SetFaults(softfabric.FaultPlan{})
	if errors.Is(err, fs.ErrExist) {
		t.Fatalf("the MKDIR's retransmission ran the call again: %v", err)
	}
	if err != nil {
		t.Fatalf("MKDIR across the lost reply: %v", err)
	}
	if st := f.Stats(); st.Retries != 1 || st.Reconnects != 1 || prov.dials.Load() != 2 {
		t.Fatalf("stats %+v, %d dials: want the reply lost once (one retry on one new connection)", st, prov.dials.Load())
	}
	if fi, err := os.Stat(filepath.Join(s.dir, "once")); err != nil || !fi.IsDir() {
		t.Fatalf("the directory on the server: %v", err)
	}
}

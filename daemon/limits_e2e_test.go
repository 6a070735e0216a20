package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// servedOver reports whether a NULL call of program prog over a new TCP
// connection to addr is answered (false: the daemon closed it).
func servedOver(t *testing.T, addr net.Addr, prog, vers uint32) bool {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	msg := oncrpc.AppendCallHeader(nil, &oncrpc.CallHeader{XID: 1, Prog: prog, Vers: vers, Proc: 0})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(append(oncrpc.AppendRecordMark(nil, len(msg)), msg...)); err != nil {
		return false
	}
	rec, err := oncrpc.ReadRecord(c, nil, 1<<16)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return false
	}
	if err != nil {
		t.Fatalf("NULL to %d: %v", prog, err)
	}
	if _, err := oncrpc.ParseReply(rec); err != nil {
		t.Fatalf("NULL to %d: %v", prog, err)
	}
	c.SetDeadline(time.Time{})
	return true
}

// TestLimitsSharedByEveryListener: the daemon's connection cap counts NFS
// and MOUNT over TCP and RPC-over-RDMA together.
func TestLimitsSharedByEveryListener(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "export")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fabric := softfabric.NewFabric()
	cfg := Config{
		DefaultExport: dir,
		NFSAddr:       "127.0.0.1:0",
		MountAddr:     "127.0.0.1:0",
		NoPortmap:     true,
		NoNLM:         true,
		StateDir:      t.TempDir(),
		RDMAAddr:      "limits-daemon:20049",
		RequireRDMA:   true,
		RDMAProvider:  fabric,
		RDMACredits:   16,
		MaxConns:      3,
		IdleTimeout:   time.Hour,
	}
	d, err := Start(context.Background(), zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	if got := d.Limits().Config().MaxConns; got != 3 {
		t.Fatalf("MaxConns %d, want 3", got)
	}
	if !servedOver(t, d.NFSAddr(), nfsProgram, 3) || !servedOver(t, d.MountAddr(), mountProgram, 3) {
		t.Fatal("NFS or MOUNT connection within the cap not served")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := rdmaclient.Dial(ctx, fabric, "limits-daemon:20049", rdmaclient.Config{LocalAddr: "127.0.0.1:40002"})
	if err != nil {
		t.Fatalf("RDMA connection within the cap: %v", err)
	}
	defer rc.Close()
	if _, err := rc.Call(ctx, &oncrpc.ClientCall{Prog: nfsProgram, Vers: 3, Proc: 0}); err != nil {
		t.Fatalf("NULL over RDMA: %v", err)
	}
	if n := d.Limits().Conns(); n != 3 {
		t.Fatalf("%d connections counted, want 3 (NFS, MOUNT, RDMA)", n)
	}
	if servedOver(t, d.NFSAddr(), nfsProgram, 3) || servedOver(t, d.MountAddr(), mountProgram, 3) {
		t.Error("a fourth connection over TCP was served; the cap is 3 across listeners")
	}
	var rej *verbs.RejectError
	if c, err := rdmaclient.Dial(ctx, fabric, "limits-daemon:20049", rdmaclient.Config{LocalAddr: "127.0.0.1:40003"}); !errors.As(err, &rej) {
		if err == nil {
			c.Close()
		}
		t.Errorf("a fourth connection over RDMA: %v, want a rejection", err)
	}
}

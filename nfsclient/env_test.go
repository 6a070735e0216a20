package nfsclient_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/internal/exporttest"
	"github.com/gonfsrdma/gonfsrdma/nfsclient"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// server is an in-process gonfsrdma daemon exporting a fresh directory rw
// to loopback, over TCP and over RPC-over-RDMA on a software fabric.
type server struct {
	t        testing.TB
	dir      string
	cfg      daemon.Config
	d        *daemon.Daemon
	fab      *softfabric.Fabric
	rdmaAddr string
}

var rdmaSeq atomic.Int32

func startServer(t testing.TB) *server {
	t.Helper()
	dir := exporttest.Dir(t, 0o755)
	exportsFile := exporttest.File(t, fmt.Sprintf("%s 127.0.0.1(rw,no_root_squash,insecure,fsid=7)\n", dir))
	s := &server{t: t, dir: dir, fab: softfabric.NewFabric(), rdmaAddr: fmt.Sprintf("fabric-nfs-%d:20049", rdmaSeq.Add(1))}
	s.cfg = daemon.Config{
		ExportsFile:  exportsFile,
		NFSAddr:      "127.0.0.1:0",
		MountAddr:    "127.0.0.1:0",
		NoPortmap:    true,
		StateDir:     t.TempDir(),
		RDMAAddr:     s.rdmaAddr,
		RequireRDMA:  true,
		RDMACredits:  16,
		RDMAProvider: s.fab,
	}
	s.start()
	// Restarts reuse the ports.
	s.cfg.NFSAddr = s.d.NFSAddr().String()
	s.cfg.MountAddr = s.d.MountAddr().String()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	log := zaptest.NewLogger(s.t, zaptest.Level(zap.WarnLevel))
	var err error
	for i := 0; i < 50; i++ {
		if s.d, err = daemon.Start(context.Background(), log, s.cfg); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the old listener's port may linger
	}
	s.t.Fatal(err)
}

func (s *server) stop() {
	if s.d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.d.Shutdown(ctx)
	s.d = nil
}

func (s *server) restart() {
	s.stop()
	s.start()
}

func portOf(t testing.TB, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// url is the nfs:// URL of the export (TCP), with extra query parameters.
func (s *server) url(extra string) string {
	u := fmt.Sprintf("nfs://127.0.0.1:%d%s?mountport=%d", portOf(s.t, s.cfg.NFSAddr), s.dir, portOf(s.t, s.cfg.MountAddr))
	if extra != "" {
		u += "&" + extra
	}
	return u
}

// dial mounts the export over proto ("tcp" or "rdma" on the fabric).
func (s *server) dial(proto string, extra string) *nfsclient.FS {
	s.t.Helper()
	cfg, err := nfsclient.ParseURL(s.url(extra))
	if err != nil {
		s.t.Fatal(err)
	}
	if proto == "rdma" {
		cfg.Proto = nfsclient.ProtoRDMA
		// The fabric reports the bound address to the server, which
		// exports to 127.0.0.1 only.
		cfg.RDMA = nfsclient.RDMAOptions{Provider: s.fab, Addr: s.rdmaAddr, LocalAddr: fmt.Sprintf("127.0.0.1:%d", 40000+rdmaSeq.Add(1))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := nfsclient.DialConfig(ctx, cfg)
	if err != nil {
		s.t.Fatalf("Dial %s: %v", proto, err)
	}
	s.t.Cleanup(func() { f.Close() })
	return f
}

var protos = []string{"tcp", "rdma"}

// forEachProto runs test as a subtest over each of protos, each with a
// server of its own and the export mounted over the protocol with the
// URL's extra query parameters.
func forEachProto(t *testing.T, extra string, test func(t *testing.T, proto string, s *server, f *nfsclient.FS)) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			s := startServer(t)
			test(t, proto, s, s.dial(proto, extra))
		})
	}
}

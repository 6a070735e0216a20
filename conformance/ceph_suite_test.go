//go:build ceph && linux && cgo

package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/cephfs"
)

// cephConf is the test cluster's config file (CEPH_CONF, set by make
// test-ceph); without it the test skips, or fails when CI=true.
func cephConf(t *testing.T) string {
	t.Helper()
	conf := os.Getenv("CEPH_CONF")
	if conf == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CEPH_CONF is not set: run the Ceph tests with `make test-ceph` (CI=true: not skipping)")
		}
		t.Skip("no Ceph cluster: run `make test-ceph`")
	}
	return conf
}

// startCephDaemon is startDaemon with both exports on CephFS
// (backend=cephfs, fresh directories of the test cluster's file system;
// CEPH_CONF, set by `make test-ceph`), exported as /ceph (rw) and
// /cephro (ro, with a file and a directory).
func startCephDaemon(t *testing.T, fabric *softfabric.Fabric, rdmaAddr string) (d *daemon.Daemon, export, roExport string, pmPort int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the conformance suite needs root")
	}
	conf := cephConf(t)
	top, err := cephfs.New(cephfs.Options{ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	b := make([]byte, 6)
	rand.Read(b)
	rw, ro := "conf-"+hex.EncodeToString(b), "conf-ro-"+hex.EncodeToString(b)
	root := vfs.Cred{}
	if _, _, err := top.Mkdir(root, top.Root(), rw, 0o777); err != nil {
		t.Fatal(err)
	}
	roDir, _, err := top.Mkdir(root, top.Root(), ro, 0o777)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := top.Mkdir(root, roDir, "dir", 0o777); err != nil {
		t.Fatal(err)
	}
	f, _, err := top.Create(root, roDir, "file", 0o666, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := top.WriteAt(root, f, []byte("read-only data\n"), 0, true); err != nil {
		t.Fatal(err)
	}

	clientPM, err := rpcbind.Start(context.Background(), zap.NewNop(), rpcbind.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clientPM.Close(context.Background()) })
	suiteCallbackPortmap = clientPM.Addr().String()
	tmp := t.TempDir()
	exports := filepath.Join(tmp, "exports")
	lines := fmt.Sprintf("/ceph -backend=cephfs,ceph_conf=%s,ceph_path=/%s 127.0.0.1(rw,insecure,no_root_squash)\n", conf, rw) +
		fmt.Sprintf("/cephro -backend=cephfs,ceph_conf=%s,ceph_path=/%s 127.0.0.1(ro,insecure,no_root_squash)\n", conf, ro)
	if err := os.WriteFile(exports, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.Config{
		ExportsFile: exports,
		NFSAddr:     "127.0.0.1:0",
		MountAddr:   "127.0.0.1:0",
		PortmapAddr: "127.0.0.1:0",
		StateDir:    filepath.Join(tmp, "state"),
		Version:     "conformance-test",

		ClientPortmapPort: clientPM.Addr().(*net.TCPAddr).Port,
		Grace:             suiteGrace,
		NotifyFor:         5 * time.Second,
		NLMGrantRetry:     time.Second,
	}
	if fabric != nil {
		cfg.RDMAProvider, cfg.RDMAAddr, cfg.RequireRDMA = fabric, rdmaAddr, true
	}
	d, err = daemon.Start(context.Background(), zap.NewNop(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pmPort = d.PortmapAddr().(*net.TCPAddr).Port
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		d.Shutdown(sctx)
	})
	return d, "/ceph", "/cephro", pmPort
}

// TestSuiteCephTCP is TestSuiteTCP on CephFS exports.
func TestSuiteCephTCP(t *testing.T) {
	d, export, ro, pmPort := startCephDaemon(t, nil, "")
	runSuite(t, d, export, pmPort, Config{Transport: "tcp", Port: d.NFSAddr().(*net.TCPAddr).Port, ROExport: ro})
}

// TestSuiteCephRDMAFabric is TestSuiteRDMAFabric on CephFS exports.
func TestSuiteCephRDMAFabric(t *testing.T) {
	fabric := softfabric.NewFabric()
	d, export, ro, pmPort := startCephDaemon(t, fabric, "127.0.0.1:20049")
	runSuite(t, d, export, pmPort, fabricSuiteConfig(fabric, d, ro))
}

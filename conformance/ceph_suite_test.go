//go:build ceph && linux && cgo

package conformance

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/cephfs"
)

// startCephDaemon is startDaemon with both exports on CephFS
// (backend=cephfs, fresh directories of the test cluster's file system;
// CEPH_CONF, set by `make test-ceph`), exported as /ceph (rw) and
// /cephro (ro, with a file and a directory).
func startCephDaemon(t *testing.T, fabric *softfabric.Fabric, rdmaAddr string) (d *daemon.Daemon, export, roExport string, pmPort int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the conformance suite needs root")
	}
	conf := cephtest.Conf(t)
	top, err := cephfs.New(cephfs.Options{ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	suffix := cephtest.FreshName("")
	rw, ro := "conf-"+suffix, "conf-ro-"+suffix
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
	lines := fmt.Sprintf("/ceph -backend=cephfs,ceph_conf=%s,ceph_path=/%s 127.0.0.1(rw,insecure,no_root_squash)\n", conf, rw) +
		fmt.Sprintf("/cephro -backend=cephfs,ceph_conf=%s,ceph_path=/%s 127.0.0.1(ro,insecure,no_root_squash)\n", conf, ro)
	d, pmPort = startDaemonExporting(t, fabric, rdmaAddr, lines)
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

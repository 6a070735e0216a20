package conformance

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// startDaemon runs a whole server exporting an empty temporary directory
// to 127.0.0.1 with rpcbind on a private port and, when fabric is not
// nil, NFS over RPC-over-RDMA on the software fabric at rdmaAddr.
//
// The lock tests' client side runs on this host too: a second rpcbind
// plays the client host's, which the server asks for the suite's
// callback service (GRANTED_MSG, _RES, SM_NOTIFY); its address goes to
// Config.CallbackPortmap through suiteCallbackPortmap. The grace period
// is suiteGrace, a few seconds, so the grace tests stay short.
func startDaemon(t *testing.T, fabric *softfabric.Fabric, rdmaAddr string) (d *daemon.Daemon, export, roExport string, pmPort int) {
	t.Helper()
	tmp := t.TempDir()
	export = filepath.Join(tmp, "export")
	if err := os.Mkdir(export, 0o777); err != nil {
		t.Fatal(err)
	}
	// A second, read-only export for the rofs tests: a file and a
	// directory in it.
	roExport = filepath.Join(tmp, "roexport")
	if err := os.MkdirAll(filepath.Join(roExport, "dir"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roExport, "file"), []byte("read-only data\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	lines := export + " 127.0.0.1(rw,insecure,no_root_squash)\n" + roExport + " 127.0.0.1(ro,insecure,no_root_squash)\n"
	d, pmPort = startDaemonExporting(t, fabric, rdmaAddr, lines)
	return d, export, roExport, pmPort
}

// startDaemonExporting runs a whole server with the exports file lines,
// rpcbind on a private port and, when fabric is not nil, NFS over
// RPC-over-RDMA on the software fabric at rdmaAddr, as startDaemon says;
// it returns the daemon and its rpcbind port.
func startDaemonExporting(t *testing.T, fabric *softfabric.Fabric, rdmaAddr, lines string) (d *daemon.Daemon, pmPort int) {
	t.Helper()
	clientPM, err := rpcbind.Start(context.Background(), zap.NewNop(), rpcbind.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clientPM.Close(context.Background()) })
	suiteCallbackPortmap = clientPM.Addr().String()
	tmp := t.TempDir()
	exports := filepath.Join(tmp, "exports")
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
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		d.Shutdown(sctx)
	})
	return d, d.PortmapAddr().(*net.TCPAddr).Port
}

// suiteGrace is the in-process server's grace period: long enough for
// the grace tests' checks inside it on a loaded machine.
const suiteGrace = 3 * time.Second

// suiteCallbackPortmap is the client-side rpcbind of the last
// startDaemon (tests run one after another).
var suiteCallbackPortmap string

func TestSuiteTCP(t *testing.T) {
	d, export, ro, pmPort := startDaemon(t, nil, "")
	runSuite(t, d, export, pmPort, Config{Transport: "tcp", Port: d.NFSAddr().(*net.TCPAddr).Port, ROExport: ro})
}

// TestSuiteRDMAFabric runs the suite with NFS over RPC-over-RDMA on the
// software fabric (MOUNT, rpcbind and the raw RPC tests stay on TCP, as
// with the Linux client).
func TestSuiteRDMAFabric(t *testing.T) {
	fabric := softfabric.NewFabric()
	d, export, ro, pmPort := startDaemon(t, fabric, "127.0.0.1:20049")
	runSuite(t, d, export, pmPort, fabricSuiteConfig(fabric, d, ro))
}

// TestSuiteRDMAFabricAckLag runs the RDMA suite again with every Send's
// acknowledgement 1 ms late (softfabric.FaultPlan.SendAckLag), as on
// Soft-RoCE: each side still holds the send-queue slot, and the server
// the Receive buffer, of a message the other side has already answered.
// That timing, not the wire, broke the server's Receive re-posting on
// rxe (rpcrdma TestAckLagKeepsReceivesPosted); here every procedure
// meets it.
func TestSuiteRDMAFabricAckLag(t *testing.T) {
	fabric := softfabric.NewFabric()
	fabric.SetFaults(softfabric.FaultPlan{SendAckLag: time.Millisecond})
	d, export, ro, pmPort := startDaemon(t, fabric, "127.0.0.1:20049")
	runSuite(t, d, export, pmPort, fabricSuiteConfig(fabric, d, ro))
}

// fabricSuiteConfig is the suite's configuration for NFS over
// RPC-over-RDMA on the software fabric to daemon d: its RDMA port, the
// read-only export ro, and dialers that connect from loopback.
func fabricSuiteConfig(fabric *softfabric.Fabric, d *daemon.Daemon, ro string) Config {
	return Config{
		Transport: "rdma",
		Port:      int(d.RDMAPort()),
		ROExport:  ro,
		DialNFS: func(ctx context.Context, addr string) (oncrpc.Caller, error) {
			return rdmaclient.Dial(ctx, fabric, addr, rdmaclient.Config{
				Cred:      oncrpc.NewAuthSys("conformance", uint32(os.Geteuid()), uint32(os.Getegid())),
				LocalAddr: "127.0.0.1:0",
			})
		},
		DialRDMA: func(ctx context.Context, addr string, cfg rdmaclient.Config) (*rdmaclient.Client, error) {
			cfg.LocalAddr = "127.0.0.1:0"
			return rdmaclient.Dial(ctx, fabric, addr, cfg)
		},
		DialVerbs: func(ctx context.Context, addr string, p verbs.ConnParams) (verbs.Conn, error) {
			p.LocalAddr = "127.0.0.1:0"
			return fabric.Dial(ctx, addr, p)
		},
	}
}

// strictAllowFile lists the tests allowed to WARN when the strict
// profile judges gonfsrdma, each with its reason.
const strictAllowFile = "strict-allow.txt"

func loadAllowList(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(strictAllowFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	allow, err := ParseAllowList(f)
	if err != nil {
		t.Fatal(err)
	}
	return allow
}

// runSuite runs the whole table against d with the strict profile: the
// exact answers gonfsrdma gives, and a WARN fails unless strict-allow.txt
// lists its code.
func runSuite(t *testing.T, d *daemon.Daemon, export string, pmPort int, base Config) {
	allow := loadAllowList(t)
	t.Logf("== conformance suite (strict profile) against an in-process gonfsrdma, NFS over %s", base.Transport)
	t.Logf("== allow-list %s: %d entries", strictAllowFile, len(allow))
	for code, why := range allow {
		t.Logf("   %s: %s", code, why)
	}
	cfg := Config{
		Strict:          true,
		CallbackPortmap: suiteCallbackPortmap,
		Grace:           suiteGrace,
		AllowWarn:       allow,
		Server:          "127.0.0.1",
		Export:          export,
		Transport:       base.Transport,
		DialNFS:         base.DialNFS,
		DialRDMA:        base.DialRDMA,
		DialVerbs:       base.DialVerbs,
		ROExport:        base.ROExport,
		Port:            base.Port,
		MountPort:       d.MountAddr().(*net.TCPAddr).Port,
		PortmapPort:     pmPort,
		MakeTree:        true,
		UID:             uint32(os.Geteuid()),
		GID:             uint32(os.Getegid()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	sum, err := Run(ctx, cfg, &out)
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		t.Log(l)
	}
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != 0 {
		t.Errorf("%d conformance tests failed", sum.Failed)
	}
	if sum.Passed+sum.Failed+sum.Warned+sum.Omitted != len(Tests()) {
		t.Errorf("summary counts %d tests, the table has %d", len(sum.Results), len(Tests()))
	}
	if sum.Omitted != 0 && base.Transport == "rdma" {
		t.Errorf("%d tests omitted: the RDMA run has every dialer and must run the whole table", sum.Omitted)
	}
	for _, r := range sum.Results {
		if _, ok := allow[r.Code]; ok && r.Status != Warn {
			t.Logf("allow-list entry %s did not WARN over %s (%v)", r.Code, base.Transport, r.Status)
		}
	}
}

// TestStrictProfile checks the profile machinery: a WARN outside the
// allow-list fails, one inside stays a WARN with its reason, and a
// tolerant answer that is not gonfsrdma's fails the strict profile only.
func TestStrictProfile(t *testing.T) {
	strict := &Env{Cfg: &Config{Strict: true}}
	tolerant := &Env{Cfg: &Config{}}
	if err := oneOf(tolerant, "x", 2, 1, 2); err != nil {
		t.Errorf("tolerant profile refused an answer in its set: %v", err)
	}
	if err := oneOf(strict, "x", 2, 1, 2); err == nil {
		t.Error("strict profile took an answer other than the exact one")
	}
	if err := oneOf(strict, "x", 1, 1, 2); err != nil {
		t.Errorf("strict profile refused the exact answer: %v", err)
	}
	if err := oneOf(tolerant, "x", 3, 1, 2); err == nil {
		t.Error("tolerant profile took an answer outside its set")
	}
	if _, err := ParseAllowList(strings.NewReader("RPC1\n")); err == nil {
		t.Error("an allow-list entry without a reason was accepted")
	}
	if _, err := ParseAllowList(strings.NewReader("NOSUCH1 a reason\n")); err == nil {
		t.Error("an allow-list entry for an unknown code was accepted")
	}
	if _, err := ParseAllowList(strings.NewReader("RPC1 a\nRPC1 b\n")); err == nil {
		t.Error("a repeated allow-list entry was accepted")
	}
	m, err := ParseAllowList(strings.NewReader("# comment\n\nRPC1  the reason here\n"))
	if err != nil || m["RPC1"] != "the reason here" || len(m) != 1 {
		t.Errorf("ParseAllowList = %v, %v", m, err)
	}
	loadAllowList(t) // the checked-in file parses
}

// TestTable checks the static table: unique codes, descriptions, and
// dependencies that exist and come earlier.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range Tests() {
		if seen[tc.Code] {
			t.Errorf("duplicate code %s", tc.Code)
		}
		if tc.Doc == "" || !(strings.Contains(tc.Doc, "RFC") || strings.Contains(tc.Doc, "XNFS")) || tc.Run == nil {
			t.Errorf("%s: no RFC citation or no function", tc.Code)
		}
		for _, d := range tc.Deps {
			if !seen[d] {
				t.Errorf("%s depends on %s, which is not earlier in the table", tc.Code, d)
			}
		}
		seen[tc.Code] = true
	}
	sel, err := Selected([]string{"rmd2"})
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, tc := range sel {
		codes = append(codes, tc.Code)
	}
	if got := strings.Join(codes, " "); got != "GATTR1 MKD1 RMD1 RMD2" {
		t.Errorf("selecting RMD2 runs %s", got)
	}
	if _, err := Selected([]string{"nosuch"}); err == nil {
		t.Error("an unknown selector was accepted")
	}
}

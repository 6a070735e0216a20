package conformance

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
)

// freePort returns a TCP port that was free a moment ago (rpcbind needs a
// fixed address for the suite to find it).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDaemon runs a whole server exporting an empty temporary directory
// to 127.0.0.1 with rpcbind on a private port.
func startDaemon(t *testing.T) (*daemon.Daemon, string, int) {
	t.Helper()
	tmp := t.TempDir()
	export := filepath.Join(tmp, "export")
	if err := os.Mkdir(export, 0o777); err != nil {
		t.Fatal(err)
	}
	exports := filepath.Join(tmp, "exports")
	if err := os.WriteFile(exports, []byte(export+" 127.0.0.1(rw,insecure,no_root_squash)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pmPort := freePort(t)
	ctx := context.Background()
	d, err := daemon.Start(ctx, zap.NewNop(), daemon.Config{
		ExportsFile: exports,
		NFSAddr:     "127.0.0.1:0",
		MountAddr:   "127.0.0.1:0",
		PortmapAddr: "127.0.0.1:" + strconv.Itoa(pmPort),
		StateDir:    filepath.Join(tmp, "state"),
		Version:     "conformance-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		d.Shutdown(sctx)
	})
	return d, export, pmPort
}

func TestSuiteTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon")
	}
	d, export, pmPort := startDaemon(t)
	cfg := Config{
		Server:      "127.0.0.1",
		Export:      export,
		Transport:   "tcp",
		Port:        d.NFSAddr().(*net.TCPAddr).Port,
		MountPort:   d.MountAddr().(*net.TCPAddr).Port,
		PortmapPort: pmPort,
		MakeTree:    true,
		UID:         uint32(os.Geteuid()),
		GID:         uint32(os.Getegid()),
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
}

// TestTable checks the static table: unique codes, descriptions, and
// dependencies that exist and come earlier.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range Tests() {
		if seen[tc.Code] {
			t.Errorf("duplicate code %s", tc.Code)
		}
		if tc.Doc == "" || !strings.Contains(tc.Doc, "RFC") || tc.Run == nil {
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

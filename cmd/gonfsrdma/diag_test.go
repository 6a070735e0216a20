package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestDiagnosticOutputs runs serve with --exec-trace and --cpu-profile,
// makes a connection, stops it with SIGTERM, and checks that both files
// were written whole: an execution trace (its "go 1.N trace" header and
// events after it) and a gzip-compressed pprof profile.
func TestDiagnosticOutputs(t *testing.T) {
	out := t.TempDir()
	tracePath, profPath := filepath.Join(out, "trace.out"), filepath.Join(out, "cpu.pprof")
	n := startNotified(t, "--exec-trace", tracePath, "--cpu-profile", profPath)
	if c, err := net.DialTimeout("tcp", n.nfsAddr, time.Second); err == nil {
		c.Close()
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.waitExit(t) // the files are complete only once serve has stopped

	tr, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	// The header is 16 bytes, "go 1.N trace" padded with NULs.
	if len(tr) <= 16 || !regexp.MustCompile(`^go 1\.\d+ trace\x00*$`).Match(tr[:16]) {
		t.Errorf("execution trace: %d bytes starting %q, want a \"go 1.N trace\" header and events", len(tr), tr[:min(16, len(tr))])
	}
	prof, err := os.ReadFile(profPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Errorf("cpu profile: %d bytes starting % x, want gzip (a pprof profile)", len(prof), prof[:min(2, len(prof))])
	}
}

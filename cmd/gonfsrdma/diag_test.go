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
	dir := t.TempDir()
	exportsFile := filepath.Join(dir, "exports")
	if err := os.WriteFile(exportsFile, []byte(dir+" 127.0.0.1(rw)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tracePath, profPath := filepath.Join(dir, "trace.out"), filepath.Join(dir, "cpu.pprof")
	sock := newNotifySocket(t)
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := serveProcessArgs(t, exportsFile, logf, []string{"--exec-trace", tracePath, "--cpu-profile", profPath},
		"NOTIFY_SOCKET="+sock.path, "STATE_DIRECTORY="+filepath.Join(dir, "state"))
	ready := sock.next(t, 60*time.Second)
	m := regexp.MustCompile(`NFS/TCP (127\.0\.0\.1:\d+)`).FindStringSubmatch(ready["STATUS"])
	if ready["READY"] != "1" || m == nil {
		t.Fatalf("first message %v, want READY=1 with the NFS/TCP address", ready)
	}
	if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
		c.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("exit after SIGTERM: %v\n%s", err, b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after SIGTERM")
	}

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

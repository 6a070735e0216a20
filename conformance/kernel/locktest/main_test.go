package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the owner child process that the
// scenarios start (os.Executable() + "owner FILE").
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "owner" {
		os.Exit(runOwner(os.Args[2], os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func tempFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOwnerCommands(t *testing.T) {
	o, err := openOwner(tempFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cmd, want string }{
		{"test w 0 0", "free"},
		{"lock w 0 100", "ok"},
		{"test w 0 0", "free"}, // an owner never conflicts with itself
		{"lock r 0 100", "ok"},
		{"lock u 0 0", "ok"},
		{"lockw w 5 5", "ok"},
		{"write 4096 1000 3", "ok"},
		{"check 4096 1000 3", "ok"},
		{"check 4096 1000 4", "differs at 4096"},
		{"flock ex nb", "ok"},
		{"flock un", "ok"},
		{"close", "ok"},
		{"lock w 0 0", "err file not open"},
		{"open", "ok"},
		{"open", "err already open"},
	} {
		if got := o.do(c.cmd); got != c.want {
			t.Errorf("%q: got %q, want %q", c.cmd, got, c.want)
		}
	}
}

func TestOwnerRejectsBadCommands(t *testing.T) {
	o, err := openOwner(tempFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"", "lock", "lock x 0 0", "lock w -1 0", "lock w 0 -5", "lock w a b", "lock w 0 0 0",
		"flock", "flock up", "flock ex now", "write 0 0 1", "write 0 10 300", "check -1 10 1",
		"write 0 999999999 1", "frobnicate",
	} {
		if got := o.do(cmd); !strings.HasPrefix(got, "err ") {
			t.Errorf("%q: got %q, want an error reply", cmd, got)
		}
	}
}

// The quick scenario between two owner processes on a local file: the same
// POSIX semantics the kernel client must give on an NFS mount.
func TestQuickScenarioLocal(t *testing.T) {
	s := &suite{file: tempFile(t)}
	if code := s.run((*suite).quick); code != 0 || s.failed != 0 || s.checks < 7 {
		t.Fatalf("quick scenario: exit %d, %d checks, %d failed", code, s.checks, s.failed)
	}
}

// A scenario whose expectation is wrong must fail: the checks are real.
func TestScenarioFailsOnWrongExpectation(t *testing.T) {
	s := &suite{file: tempFile(t)}
	wrong := func(s *suite) {
		a, b := s.owner("A"), s.owner("B")
		s.expect(a, "lock w 0 10", "ok")
		s.expect(b, "lock w 5 1", "ok") // A holds it: the answer is denied
	}
	if code := s.run(wrong); code == 0 || s.failed != 1 {
		t.Fatalf("exit %d, %d failed: a wrong expectation passed", code, s.failed)
	}
}

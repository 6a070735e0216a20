package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
)

// TestProfileDaemon writes CPU profiles of an in-process daemon under each
// workload to $BENCH_PROFILE_DIR/PHASE.pprof (skipped when unset):
//
//	BENCH_PROFILE_DIR=/tmp/prof go test -run TestProfileDaemon -v ./bench/
//	go tool pprof -top -ignore 'bench\.|oncrpc\.\(\*Client\)' /tmp/prof/seq-read.pprof
//
// The client runs in the same process; -ignore drops its stacks, leaving
// the server's (and the shared runtime's: GC, scheduler).
func TestProfileDaemon(t *testing.T) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		t.Skip("BENCH_PROFILE_DIR not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exp, nfsPort, mountPort := startDaemon(t)
	size, err := ParseSize(envOr("BENCH_SIZE", "256MiB"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := strconv.Atoi(envOr("BENCH_FILES", "2000"))
	if err != nil {
		t.Fatal(err)
	}
	var f *os.File
	cfg := Config{
		Host: "127.0.0.1", Export: exp, Port: nfsPort, MountPort: mountPort,
		Size: size, RandOps: 100000, Files: files, UID: 1000, GID: 1000,
		ServerCPU: ProcCPU(os.Getpid()),
		OnPhase: func(phase string, start bool) {
			if !start {
				pprof.StopCPUProfile()
				f.Close()
				return
			}
			var err error
			if f, err = os.Create(filepath.Join(dir, phase+".pprof")); err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
		},
	}
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, &res)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

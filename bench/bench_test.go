package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/daemon"
)

func TestPattern(t *testing.T) {
	const seed = 0x1234
	whole := make([]byte, 1000)
	Fill(seed, 0, whole)
	// Any sub-range filled on its own agrees with the whole.
	for _, r := range [][2]int{{0, 1000}, {3, 17}, {8, 16}, {5, 6}, {999, 1000}, {100, 900}} {
		b := make([]byte, r[1]-r[0])
		Fill(seed, uint64(r[0]), b)
		if !bytes.Equal(b, whole[r[0]:r[1]]) {
			t.Fatalf("Fill at %d..%d disagrees with the whole fill", r[0], r[1])
		}
		if err := Verify(seed, uint64(r[0]), b); err != nil {
			t.Fatalf("Verify of good data at %d: %v", r[0], err)
		}
	}
	if err := Verify(seed+1, 0, whole); err == nil {
		t.Fatal("Verify accepted data written with another seed")
	}
	if err := Verify(seed, 8, whole[:992]); err == nil {
		t.Fatal("Verify accepted data at the wrong offset")
	}
	for _, pos := range []int{0, 5, 8, 511, 999} {
		b := bytes.Clone(whole)
		b[pos] ^= 0x40
		var ve *VerifyError
		if err := Verify(seed, 0, b); !errors.As(err, &ve) || ve.Offset != uint64(pos) || ve.Want != whole[pos] {
			t.Fatalf("flip at %d: got %v", pos, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "256MiB": 256 << 20, "4096": 4096, "4K": 4096, "1MB": 1e6, "2 G": 2 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "0", "1XB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded", in)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 7 0 1 2 3\n"
	d, err := parseProcStat(line)
	if err != nil || d != 3800*time.Millisecond {
		t.Fatalf("parseProcStat = %v, %v; want 3.8s", d, err)
	}
	if _, err := ProcCPU(os.Getpid())(); err != nil {
		t.Fatalf("ProcCPU(self): %v", err)
	}
}

// startDaemon runs the whole server in-process on ephemeral loopback
// ports, exporting a fresh directory, and returns its NFS and MOUNT ports.
func startDaemon(tb testing.TB) (dir string, nfsPort, mountPort int) {
	tb.Helper()
	dir = filepath.Join(tb.TempDir(), "export")
	if err := os.Mkdir(dir, 0o777); err != nil {
		tb.Fatal(err)
	}
	os.Chmod(dir, 0o777) // umask; squashed root must be able to create
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Start(ctx, zap.NewNop(), daemon.Config{
		DefaultExport: dir,
		NFSAddr:       "127.0.0.1:0",
		MountAddr:     "127.0.0.1:0",
		NoPortmap:     true,
		StateDir:      filepath.Join(tb.TempDir(), "state"),
		MaxInFlight:   64,
	})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		d.Shutdown(sctx)
		cancel()
	})
	return dir, d.NFSAddr().(*net.TCPAddr).Port, d.MountAddr().(*net.TCPAddr).Port
}

func tinyConfig(nfsPort, mountPort int) Config {
	return Config{
		Host: "127.0.0.1", Export: "/", Port: nfsPort, MountPort: mountPort,
		Size: 3<<20 + 1000, Block: 64 << 10, QD: 4, RandQD: 8, RandOps: 300, Files: 40,
		UID: 1000, GID: 1000,
	}
}

func TestRunAgainstDaemon(t *testing.T) {
	dir, nfsPort, mountPort := startDaemon(t)
	cfg := tinyConfig(nfsPort, mountPort)
	cfg.Export = dir
	cfg.ServerCPU = ProcCPU(os.Getpid())
	var progress bytes.Buffer
	res, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int64{ // ops lower bound, bytes
		PhaseWrite: {49, cfg.Size}, PhaseRead: {49, cfg.Size}, PhaseRandRead: {300, 300 * 4096},
		PhaseCreate: {40, 0}, PhaseStat: {40, 0}, PhaseRemove: {40, 0},
	}
	if len(res.Phases) != len(want) {
		t.Fatalf("got %d phases, want %d", len(res.Phases), len(want))
	}
	for _, p := range res.Phases {
		w := want[p.Name]
		if p.Ops < w[0] || p.Bytes != w[1] || p.Seconds <= 0 || p.OpsPerSec <= 0 || p.ServerCPUSeconds < 0 || p.MeanLatencyUs <= 0 {
			t.Errorf("phase %+v: want >= %d ops, %d bytes, positive rates and latency", p, w[0], w[1])
		}
		// Verify time is measured apart from call latency, in the
		// phases that read data and only there.
		if reads := p.Name == PhaseRead || p.Name == PhaseRandRead; reads != (p.MeanVerifyUs > 0) {
			t.Errorf("phase %s: mean verify %.3f µs", p.Name, p.MeanVerifyUs)
		}
	}
	if !bytes.Contains(progress.Bytes(), []byte("\rseq-read")) {
		t.Errorf("no progress line for seq-read in %q", progress.String())
	}
	var table bytes.Buffer
	if err := WriteTable(&table, &res); err != nil || !bytes.Contains(table.Bytes(), []byte("rand-read")) {
		t.Errorf("table: %v\n%s", err, table.String())
	}
	// The working directory is gone.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("export not empty after the run: %v", ents)
	}
}

// flipProxy forwards TCP to target and flips one byte near the end of
// the first server record larger than 8 KiB (a READ reply's data).
func flipProxy(t *testing.T, target string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var once sync.Once
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			go func() { io.Copy(s, c); s.Close() }()
			go func() {
				defer c.Close()
				var mark [4]byte
				for {
					if _, err := io.ReadFull(s, mark[:]); err != nil {
						return
					}
					rec := make([]byte, binary.BigEndian.Uint32(mark[:])&0x7fffffff)
					if _, err := io.ReadFull(s, rec); err != nil {
						return
					}
					if len(rec) > 8<<10 {
						once.Do(func() { rec[len(rec)-100] ^= 0x01 })
					}
					if _, err := c.Write(append(mark[:], rec...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func TestRunCatchesCorruption(t *testing.T) {
	dir, nfsPort, mountPort := startDaemon(t)
	cfg := tinyConfig(flipProxy(t, "127.0.0.1:"+strconv.Itoa(nfsPort)), mountPort)
	cfg.Export = dir
	_, err := Run(context.Background(), cfg, nil)
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("Run over a corrupting proxy: %v, want a *VerifyError", err)
	}
	t.Logf("caught: %v", err)
}

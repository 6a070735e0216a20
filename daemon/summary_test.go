package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/verbs"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// logLines returns the messages logged so far, one a line.
func logLines(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		out = append(out, e.Message)
	}
	return out
}

// waitFor waits until a message equal to want (or, with a trailing "*",
// starting with it) has been logged, and returns the messages from it
// on.
func waitFor(t *testing.T, logs *observer.ObservedLogs, want string) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		lines := logLines(logs)
		for i, l := range lines {
			if l == want || (strings.HasSuffix(want, "*") && strings.HasPrefix(l, strings.TrimSuffix(want, "*"))) {
				return lines[i:]
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never logged %q; logged:\n%s", want, strings.Join(logLines(logs), "\n"))
	return nil
}

// block is the lines of lines up to the first that does not start with
// two spaces after the head.
func block(lines []string) []string {
	for i := 1; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "  ") {
			return lines[:i]
		}
	}
	return lines
}

// waitBlock waits until the block that starts with the message head (as
// waitFor matches it) has been logged far enough for complete, and
// returns it; after 30 s it returns the block as it stands, for the
// caller's checks to report. The daemon logs a block one entry a line
// (logBlock), so the head can be there before the lines under it.
func waitBlock(t *testing.T, logs *observer.ObservedLogs, head string, complete func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b := block(waitFor(t, logs, head))
		if complete(b) || time.Now().After(deadline) {
			return b
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// atLeast is a waitBlock condition: n lines or more.
func atLeast(n int) func([]string) bool {
	return func(b []string) bool { return len(b) >= n }
}

// TestStartSummaryAndReloadDiff runs the daemon as serve does and checks
// the start-up block line by line, the diff a SIGHUP reload logs, and that
// a bad exports file is refused with its file:line:column while the
// previous exports go on being served.
func TestStartSummaryAndReloadDiff(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, p := range []string{a, b, c} {
		os.Mkdir(p, 0o755)
	}
	file := filepath.Join(dir, "exports")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("%s 127.0.0.1(rw,fsid=1) 10.0.0.0/8(ro,fsid=1)\n%s 127.0.0.1(ro,fsid=2)\n", a, b))
	core, logs := observer.New(zap.InfoLevel)
	state := filepath.Join(dir, "state")
	cfg := Config{ExportsFile: file, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true, StateDir: state,
		Version: "v9.9.9-test", Grace: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	reload := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, zap.New(core), cfg, reload) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	const summaryHead = "gonfsrdma v9.9.9-test serving, pid *"
	waitFor(t, logs, summaryHead) // after the "listening" lines addr reads
	addr := func(key string) string {
		for _, e := range logs.All() {
			if e.Message == "listening" {
				for _, f := range e.Context {
					if f.Key == key {
						return f.String
					}
				}
			}
		}
		t.Fatalf("no listening %s", key)
		return ""
	}
	want := []string{
		fmt.Sprintf("gonfsrdma v9.9.9-test serving, pid %d:", os.Getpid()),
		"  NFS/TCP   " + addr("nfs_tcp"),
		"  NFS/RDMA  " + rdmaLine(),
		"  MOUNT     " + addr("mount_tcp_udp") + " (TCP and UDP)",
		"  rpcbind   off (--no-portmap): clients name port=, mountport= and mount with nolock",
		"", // locking: ports are ephemeral, checked below
		"  metrics   off (--metrics-listen)",
		"  state     " + state,
		"  exports   2 from " + file + " (SIGHUP reloads it):",
		fmt.Sprintf("    %-20s 127.0.0.1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)", a),
		fmt.Sprintf("    %-20s 10.0.0.0/8(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)", ""),
		fmt.Sprintf("    %-20s 127.0.0.1(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=2,sec=sys,transports=tcp:rdma,backend=os)", b),
	}
	sum := waitBlock(t, logs, summaryHead, atLeast(len(want)))
	if len(sum) != len(want) {
		t.Fatalf("summary has %d lines, want %d:\n%s", len(sum), len(want), strings.Join(sum, "\n"))
	}
	for i := range want {
		if i == 5 {
			if !strings.HasPrefix(sum[i], "  locking   NLM port ") || !strings.Contains(sum[i], "NSM state ") ||
				!strings.HasSuffix(sum[i], "no grace period (no client held locks before this start)") {
				t.Errorf("locking line %q", sum[i])
			}
			continue
		}
		if sum[i] != want[i] {
			t.Errorf("summary line %d\n got %q\nwant %q", i, sum[i], want[i])
		}
	}

	// A reload: a's 10.0.0.0/8 goes rw, a client is added to a, b goes,
	// c comes.
	write(fmt.Sprintf("%s 127.0.0.1(rw,fsid=1) 10.0.0.0/8(rw,fsid=1) 192.168.1.7(ro,fsid=1)\n%s 127.0.0.1(rw,fsid=3)\n", a, c))
	reload <- os.Interrupt
	wantDiff := []string{
		"exports reloaded from " + file + ": 2 exports; changes:",
		"  - " + b,
		"  ~ " + a,
		"      10.0.0.0/8: ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os -> rw,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os",
		"      + 192.168.1.7(ro,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=1,sec=sys,transports=tcp:rdma,backend=os)",
		"  + " + c + " 127.0.0.1(rw,sync,secure,root_squash,anonuid=65534,anongid=65534,fsid=3,sec=sys,transports=tcp:rdma,backend=os)",
	}
	diff := waitBlock(t, logs, "exports reloaded from "+file+": 2 exports; changes:", atLeast(len(wantDiff)))
	if strings.Join(diff, "\n") != strings.Join(wantDiff, "\n") {
		t.Errorf("reload diff\n got:\n%s\nwant:\n%s", strings.Join(diff, "\n"), strings.Join(wantDiff, "\n"))
	}

	// The same file again: no change.
	reload <- os.Interrupt
	waitFor(t, logs, "exports reloaded from "+file+": 2 exports, no change")

	// A bad file: refused with file:line:column, the previous exports
	// stay (c is still exported, b still not).
	write(fmt.Sprintf("%s 127.0.0.1(rw,fsid=1)\n# a comment\n%s 127.0.0.1(rw,nosuchoption,fsid=3)\n", a, c))
	reload <- os.Interrupt
	namesTheError := func(refused []string) bool {
		for _, l := range refused[1:] {
			if strings.HasPrefix(l, "  "+file+":3:") && strings.Contains(l, "nosuchoption") {
				return true
			}
		}
		return false
	}
	refused := waitBlock(t, logs, "reload of "+file+" refused; the previous exports stay:", namesTheError)
	if !namesTheError(refused) {
		t.Errorf("the refusal does not name %s:3 and the bad option:\n%s", file, strings.Join(refused, "\n"))
	}
	// The table in place is still the last good one: reloading that file
	// again changes nothing.
	write(fmt.Sprintf("%s 127.0.0.1(rw,fsid=1) 10.0.0.0/8(rw,fsid=1) 192.168.1.7(ro,fsid=1)\n%s 127.0.0.1(rw,fsid=3)\n", a, c))
	n := len(logs.FilterMessage("exports reloaded from " + file + ": 2 exports, no change").All())
	reload <- os.Interrupt
	deadline := time.Now().Add(30 * time.Second)
	for len(logs.FilterMessage("exports reloaded from "+file+": 2 exports, no change").All()) == n {
		if time.Now().After(deadline) {
			t.Fatalf("after the refused reload, the last good file did not reload as no change:\n%s", strings.Join(logLines(logs), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func rdmaLine() string { return "off (--rdma-listen is empty)" }

// TestRDMASummaryReasons checks the NFS/RDMA line for each reason RDMA
// is not served that does not depend on this machine's devices.
func TestRDMASummaryReasons(t *testing.T) {
	for _, tc := range []struct {
		d    *Daemon
		want string
	}{
		{&Daemon{cfg: Config{}}, "off (--rdma-listen is empty)"},
		{&Daemon{cfg: Config{RDMAAddr: ":20049"}, rdmaWhyNot: verbs.ErrNoRDMA}, "not served: this binary was built without RDMA (CGO_ENABLED=0 or -tags nordma)"},
		{&Daemon{cfg: Config{RDMAAddr: ":20049", RDMAProvider: softfabric.NewFabric()}, rdmaWhyNot: errors.New("listen: address in use")}, "not served: listen: address in use"},
	} {
		if got := tc.d.rdmaSummary(); got != tc.want {
			t.Errorf("rdmaSummary: %q, want %q", got, tc.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	nfsc "github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// startMetricsServer runs an in-process daemon (TCP only) with metrics
// on loopback and returns it.
func startMetricsServer(t *testing.T) (*daemon.Daemon, string) {
	t.Helper()
	return startTestDaemon(t, func(cfg *daemon.Config) {
		cfg.MetricsAddr, cfg.Version, cfg.NoNLM = "127.0.0.1:0", "stats-test", true
	})
}

// runStats runs `gonfsrdma stats ARGS` and returns stdout, stderr and the
// exit code.
func runStats(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := 0
	app := &cli.Command{
		Name: "gonfsrdma", Commands: []*cli.Command{statsCommand()}, Writer: &out, ErrWriter: &errOut,
		ExitErrHandler: func(_ context.Context, _ *cli.Command, err error) {
			var ec cli.ExitCoder
			if errors.As(err, &ec) {
				code = ec.ExitCode()
				errOut.WriteString(err.Error())
			}
		},
	}
	if err := app.Run(context.Background(), append([]string{"gonfsrdma", "stats"}, args...)); err != nil && code == 0 {
		code = -1
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestStatsAgainstDaemon(t *testing.T) {
	d, dir := startMetricsServer(t)
	// A known workload over TCP: MNT, then NULL and three GETATTRs of
	// the root on a connection kept open.
	ctx := context.Background()
	mc, err := oncrpc.Dial(ctx, "tcp", d.MountAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	mc.SetCred(oncrpc.NewAuthSys("test", 0, 0))
	root, _, err := mount.Mnt(ctx, mc, dir)
	mc.Close()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := oncrpc.Dial(ctx, "tcp", d.NFSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetCred(oncrpc.NewAuthSys("test", 0, 0))
	c := nfsc.New(nc)
	if err := c.Null(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Getattr(ctx, root); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := runStats(t, d.MetricsAddr())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !regexp.MustCompile(`^gonfsrdma stats-test, ready, at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`).MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	for _, want := range []string{
		`(?m)^mount v3: 1 calls$`,
		`(?m)^ +MOUNTPROC3_MNT +1 +100\.0% +- +0 +([0-9.]+(ns|µs|ms)|-)$`,
		`(?m)^nfs v3: 4 calls$`,
		`(?m)^ +GETATTR +3 +75\.0% +- +0 +([0-9.]+(ns|µs|ms)|-)$`,
		`(?m)^ +NULL +1 +25\.0% +- +0 +([0-9.]+(ns|µs|ms)|-)$`,
		`(?m)^ +transport +conns +RPC in +RPC out +in/s +out/s$`,
		`(?m)^ +tcp +[12] +[0-9.]+ (B|KiB) +[0-9.]+ (B|KiB) +- +-$`,
		`(?m)^clients: 1 known; busiest by bytes:$`,
		`(?m)^ +127\.0\.0\.1 +5 +- +[0-9.]+ (B|KiB) +[0-9.]+ (B|KiB)$`,
		`(?m)^server: DRC entries 0 \(hits 0, misses 0, evictions 0\), exports reloads 0 ok, 0 failed$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestStatsWatch(t *testing.T) {
	d, _ := startMetricsServer(t)
	out, errOut, code := runStats(t, "--watch", "--interval", "50ms", "--count", "3", "http://"+d.MetricsAddr()+"/metrics")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	frames := strings.Split(out, "\x1b[H\x1b[2J")
	if len(frames) != 4 || frames[0] != "" {
		t.Fatalf("want 3 frames each starting with clear-screen, got %d: %q", len(frames)-1, out)
	}
	if strings.Contains(frames[1], "rates over") {
		t.Errorf("first frame has rates without a previous scrape:\n%s", frames[1])
	}
	for _, f := range frames[2:] {
		if !regexp.MustCompile(`, rates over 0\.\ds\n`).MatchString(f) {
			t.Errorf("later frame without rates:\n%s", f)
		}
	}
}

func TestStatsUnreachable(t *testing.T) {
	_, errOut, code := runStats(t, "127.0.0.1:1")
	if code != 6 || !strings.Contains(errOut, "--metrics-listen") {
		t.Fatalf("exit %d, stderr %q; want 6 and a hint", code, errOut)
	}
	if _, _, code := runStats(t); code != 2 {
		t.Fatalf("no argument: exit %d, want 2", code)
	}
}

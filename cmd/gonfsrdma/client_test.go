package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/daemon"
)

// startTestDaemon runs an in-process daemon (TCP only, no rpcbind)
// exporting a fresh directory rw to loopback, with set (when not nil)
// adjusting its configuration, and returns it and the directory.
func startTestDaemon(t *testing.T, set func(*daemon.Config)) (*daemon.Daemon, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "export")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exportsFile := filepath.Join(t.TempDir(), "exports")
	if err := os.WriteFile(exportsFile, []byte(dir+" 127.0.0.1(rw,no_root_squash,insecure,fsid=9)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.Config{
		ExportsFile: exportsFile, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true, StateDir: t.TempDir(),
	}
	if set != nil {
		set(&cfg)
	}
	d, err := daemon.Start(context.Background(), zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return d, dir
}

// startExport runs startTestDaemon's daemon and returns the directory
// and its URL prefix.
func startExport(t *testing.T) (string, string) {
	t.Helper()
	d, dir := startTestDaemon(t, nil)
	_, nport, _ := net.SplitHostPort(d.NFSAddr().String())
	_, mport, _ := net.SplitHostPort(d.MountAddr().String())
	return dir, fmt.Sprintf("nfs://127.0.0.1:%s%s", nport, dir) + "%s?mountport=" + mport
}

// run runs one command line and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := 0
	app := newApp()
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(_ context.Context, _ *cli.Command, err error) {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			code = ec.ExitCode()
			fmt.Fprintln(&errOut, err)
		} else if err != nil {
			code = -1
			fmt.Fprintln(&errOut, err)
		}
	}
	if err := app.Run(context.Background(), append([]string{"gonfsrdma"}, args...)); err != nil && code == 0 {
		code = -1
		fmt.Fprintln(&errOut, err)
	}
	return out.String(), errOut.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("gonfsrdma %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
	return b
}

func TestCLICopy(t *testing.T) {
	dir, u := startExport(t)
	url := func(p string) string { return fmt.Sprintf(u, p) }
	local := t.TempDir()
	data := pattern(3<<20+777, 1)
	src := filepath.Join(local, "src.bin")
	os.WriteFile(src, data, 0o640)

	_, errOut, code := run(t, "cp", "-P", "4", "--block", "64K", src, url("/in.bin"))
	if code != 0 {
		t.Fatalf("cp in: %d %s", code, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("%d bytes", len(data))) || !strings.Contains(errOut, "MiB/s") {
		t.Errorf("no byte count and throughput in %q", errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "in.bin")); !bytes.Equal(got, data) {
		t.Fatal("cp local->remote: file differs")
	}
	mustRun(t, "cp", "-q", url("/in.bin"), filepath.Join(local, "out.bin"))
	if got, _ := os.ReadFile(filepath.Join(local, "out.bin")); !bytes.Equal(got, data) {
		t.Fatal("cp remote->local: file differs")
	}
	// Through a FIFO both ways: not a regular file, so cp streams in
	// order (ReadFrom, WriteTo) instead of by offset.
	fifo := filepath.Join(local, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	mustRun(t, "cp", "-q", url("/in.bin"), fifo)
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("cp remote->FIFO: %d bytes, not the file", len(b))
	}
	go func() { os.WriteFile(fifo, data, 0o600) }()
	mustRun(t, "cp", "-q", fifo, url("/from-fifo.bin"))
	if b, _ := os.ReadFile(filepath.Join(dir, "from-fifo.bin")); !bytes.Equal(b, data) {
		t.Fatalf("cp FIFO->remote: %d bytes, not the data", len(b))
	}
	mustRun(t, "mkdir", url("/copies"))
	mustRun(t, "cp", "-q", url("/in.bin"), url("/copies/")) // into a directory
	if got, _ := os.ReadFile(filepath.Join(dir, "copies", "in.bin")); !bytes.Equal(got, data) {
		t.Fatal("cp remote->remote: file differs")
	}
	if out := mustRun(t, "cat", url("/in.bin")); out != string(data) {
		t.Fatal("cat differs")
	}

	// A tree, there and back.
	tree := filepath.Join(local, "tree")
	for i, p := range []string{"a", "b/c", "b/d/e", "b/d/f"} {
		os.MkdirAll(filepath.Join(tree, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(tree, p), pattern(1000*i+1, byte(i)), 0o644)
	}
	os.Mkdir(filepath.Join(tree, "empty"), 0o755)
	if _, _, code := run(t, "cp", "-q", tree, url("/tree")); code != exitFailure {
		t.Fatalf("cp of a directory without -r: exit %d", code)
	}
	mustRun(t, "cp", "-r", "-q", tree, url("/tree"))
	back := filepath.Join(local, "back")
	mustRun(t, "cp", "-r", "-q", url("/tree"), back)
	for _, p := range []string{"a", "b/c", "b/d/e", "b/d/f"} {
		want, _ := os.ReadFile(filepath.Join(tree, p))
		got, err := os.ReadFile(filepath.Join(back, p))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after the round trip: %v", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(back, "empty")); err != nil || !fi.IsDir() {
		t.Fatal("empty directory not copied")
	}
}

func TestCLIListAndMetadata(t *testing.T) {
	dir, u := startExport(t)
	url := func(p string) string { return fmt.Sprintf(u, p) }
	for _, p := range []string{"x/1", "x/2", "x/y/3"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644)
	}
	os.Symlink("1", filepath.Join(dir, "x", "l"))
	if out := mustRun(t, "ls", url("/x")); out != "1\n2\nl\ny\n" {
		t.Fatalf("ls: %q", out)
	}
	if out := mustRun(t, "ls", "-l", url("/x")); !strings.Contains(out, "l -> 1") || !strings.Contains(out, "-rw-r--r--") {
		t.Fatalf("ls -l: %q", out)
	}
	if out := mustRun(t, "ls", "-R", url("/x")); !strings.Contains(out, "x/y:\n3\n") {
		t.Fatalf("ls -R: %q", out)
	}
	var ents []entryJSON
	if err := json.Unmarshal([]byte(mustRun(t, "ls", "-R", "--json", url("/x"))), &ents); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range ents {
		paths = append(paths, e.Path+":"+e.Type)
	}
	sort.Strings(paths)
	if strings.Join(paths, " ") != "x/1:file x/2:file x/l:symlink x/y/3:file x/y:dir" {
		t.Fatalf("ls -R --json paths %v", paths)
	}
	var st []entryJSON
	if err := json.Unmarshal([]byte(mustRun(t, "stat", "--json", url("/x/y/3"))), &st); err != nil || len(st) != 1 || st[0].Size != 5 || st[0].Type != "file" || st[0].Perm != 0o644 {
		t.Fatalf("stat --json: %+v %v", st, err)
	}
	if out := mustRun(t, "stat", url("/x/l")); !strings.Contains(out, "-> 1") {
		t.Fatalf("stat of a link: %q", out)
	}
	mustRun(t, "mkdir", "-p", url("/p/q/r"))
	mustRun(t, "mv", url("/x/1"), url("/p/q"))
	if _, err := os.Stat(filepath.Join(dir, "p", "q", "1")); err != nil {
		t.Fatalf("mv into a directory: %v", err)
	}
	mustRun(t, "mv", url("/x/2"), url("/x/two"))
	if _, err := os.Stat(filepath.Join(dir, "x", "two")); err != nil {
		t.Fatalf("mv rename: %v", err)
	}
	if _, _, code := run(t, "rm", url("/p")); code != exitFailure {
		t.Fatalf("rm of a directory without -r: exit %d", code)
	}
	mustRun(t, "rm", "-r", url("/p"))
	if _, err := os.Stat(filepath.Join(dir, "p")); !os.IsNotExist(err) {
		t.Fatalf("rm -r left %v", err)
	}
	mustRun(t, "rm", "-f", url("/nothing"))
	var df []dfJSON
	if err := json.Unmarshal([]byte(mustRun(t, "df", "--json", url(""))), &df); err != nil || len(df) != 1 || df[0].TotalBytes == 0 || df[0].Export != dir {
		t.Fatalf("df --json: %+v %v", df, err)
	}
	if out := mustRun(t, "df", url("")); !strings.Contains(out, dir) {
		t.Fatalf("df: %q", out)
	}
}

func TestCLIExitCodes(t *testing.T) {
	dir, u := startExport(t)
	url := func(p string) string { return fmt.Sprintf(u, p) }
	os.Mkdir(filepath.Join(dir, "d"), 0o700)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"cat", url("/missing")}, exitNotExist},
		{[]string{"mkdir", url("/d")}, exitExist},
		{[]string{"ls", "not-a-url"}, exitUsage},
		{[]string{"ls", "nfs://127.0.0.1/x?bogus=1"}, exitUsage},
		{[]string{"cp", "a", "b"}, exitUsage},
		{[]string{"ls", fmt.Sprintf(u, "/d") + "&uid=4321&gid=4321"}, exitPerm},
		{[]string{"ls", "nfs://127.0.0.1:1/x?mountport=1"}, exitConnect},
		{[]string{"rm", url("")}, exitUsage},
	} {
		if _, errOut, code := run(t, tc.args...); code != tc.code {
			t.Errorf("gonfsrdma %s: exit %d, want %d (%s)", strings.Join(tc.args, " "), code, tc.code, errOut)
		}
	}
}

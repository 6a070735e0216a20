package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets a test run this binary as gonfsrdma itself: with
// GONFSRDMA_RUN_MAIN=1 the test binary is the command, its arguments
// after "--".
func TestMain(m *testing.M) {
	if os.Getenv("GONFSRDMA_RUN_MAIN") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"gonfsrdma"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveProcess starts `gonfsrdma serve` as a child on loopback with
// ephemeral ports, no rpcbind and no RDMA, exporting exportsFile, with
// env added to its environment and stderr to errFile.
func serveProcess(t *testing.T, exportsFile string, errFile *os.File, env ...string) *exec.Cmd {
	t.Helper()
	return serveProcessArgs(t, exportsFile, errFile, nil, env...)
}

// serveProcessArgs is serveProcess with more serve flags.
func serveProcessArgs(t *testing.T, exportsFile string, errFile *os.File, flags []string, env ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"-test.run=^$", "--", "serve",
		"--exports", exportsFile, "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--rdma-listen", "",
		"--no-portmap", "--nlm-listen", "127.0.0.1:0", "--nsm-listen", "127.0.0.1:0"}, flags...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "GONFSRDMA_RUN_MAIN=1"), env...)
	cmd.Stderr = errFile
	cmd.Stdout = errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// notifySocket is a NOTIFY_SOCKET as systemd makes one: a datagram
// socket whose messages are newline-separated VAR=value lines.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	// sun_path is short: a fresh directory under /tmp, not t.TempDir().
	dir, err := os.MkdirTemp("", "sdnotify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &notifySocket{path: path, conn: conn}
}

// next returns the next message's variables, failing after d.
func (s *notifySocket) next(t *testing.T, d time.Duration) map[string]string {
	t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, err := s.conn.Read(buf)
	if err != nil {
		t.Fatalf("no sd_notify message within %v: %v", d, err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// notified is a serve process started as systemd starts it, once it said
// READY=1.
type notified struct {
	dir     string // the export, and the state directory's parent
	cmd     *exec.Cmd
	sock    *notifySocket
	nfsAddr string // NFS/TCP, from STATUS=
	logText func() string
}

// startNotified runs serve with flags on a fresh export, as systemd would
// with Type=notify (NOTIFY_SOCKET, STATE_DIRECTORY), and waits for its
// READY=1, whose STATUS= must name the NFS/TCP address.
func startNotified(t *testing.T, flags ...string) *notified {
	t.Helper()
	dir := t.TempDir()
	exportsFile := filepath.Join(dir, "exports")
	if err := os.WriteFile(exportsFile, []byte(dir+" 127.0.0.1(rw)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := newNotifySocket(t)
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	n := &notified{dir: dir, sock: sock, logText: func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }}
	n.cmd = serveProcessArgs(t, exportsFile, logf, flags, "NOTIFY_SOCKET="+sock.path, "STATE_DIRECTORY="+filepath.Join(dir, "state"))
	ready := sock.next(t, 60*time.Second)
	if ready["READY"] != "1" {
		t.Fatalf("first message %v, want READY=1\n%s", ready, n.logText())
	}
	m := regexp.MustCompile(`NFS/TCP (127\.0\.0\.1:\d+)`).FindStringSubmatch(ready["STATUS"])
	if m == nil {
		t.Fatalf("STATUS=%q names no NFS/TCP address", ready["STATUS"])
	}
	n.nfsAddr = m[1]
	return n
}

// waitExit waits for serve to exit cleanly after SIGTERM, at most 30 s.
func (n *notified) waitExit(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, n.logText())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM\n%s", n.logText())
	}
}

// TestServiceNotify runs serve as systemd would with Type=notify: READY=1
// arrives once the listeners accept (the NFS address in STATUS= answers
// at once), SIGHUP is RELOADING=1 with MONOTONIC_USEC then READY=1, and
// SIGTERM is STOPPING=1 and a clean exit.
func TestServiceNotify(t *testing.T) {
	n := startNotified(t)
	dir, cmd, sock := n.dir, n.cmd, n.sock
	c, err := net.DialTimeout("tcp", n.nfsAddr, time.Second)
	if err != nil {
		t.Fatalf("READY=1 sent but NFS/TCP %s does not accept: %v", n.nfsAddr, err)
	}
	c.Close()
	// STATE_DIRECTORY (systemd's StateDirectory=) is where state goes.
	for _, f := range []string{"fhkey", "nsm.json"} {
		if _, err := os.Stat(filepath.Join(dir, "state", f)); err != nil {
			t.Errorf("state file %s not in STATE_DIRECTORY: %v", f, err)
		}
	}

	cmd.Process.Signal(syscall.SIGHUP)
	reloading := sock.next(t, 30*time.Second)
	if reloading["RELOADING"] != "1" || !regexp.MustCompile(`^[1-9]\d*$`).MatchString(reloading["MONOTONIC_USEC"]) {
		t.Fatalf("after SIGHUP %v, want RELOADING=1 with MONOTONIC_USEC", reloading)
	}
	if again := sock.next(t, 30*time.Second); again["READY"] != "1" {
		t.Fatalf("after the reload %v, want READY=1", again)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if stopping := sock.next(t, 30*time.Second); stopping["STOPPING"] != "1" {
		t.Fatalf("after SIGTERM %v, want STOPPING=1", stopping)
	}
	n.waitExit(t)
}

// TestJournalLogs runs serve with stderr on a file that JOURNAL_STREAM
// names, as systemd does for StandardError=journal: lines carry no
// timestamp and start with the syslog priority. With JOURNAL_STREAM
// naming another file, they are the console format with a timestamp.
func TestJournalLogs(t *testing.T) {
	for _, journal := range []bool{true, false} {
		dir := t.TempDir()
		exportsFile := filepath.Join(dir, "exports")
		os.WriteFile(exportsFile, []byte(dir+" 127.0.0.1(rw)\n"), 0o644)
		logf, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			t.Fatal(err)
		}
		named := logf
		if !journal {
			if named, err = os.Create(filepath.Join(dir, "other")); err != nil {
				t.Fatal(err)
			}
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(named.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		sock := newNotifySocket(t)
		cmd := serveProcess(t, exportsFile, logf, fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino),
			"NOTIFY_SOCKET="+sock.path, "STATE_DIRECTORY="+filepath.Join(dir, "state"))
		sock.next(t, 60*time.Second)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		logf.Close()
		f, _ := os.Open(logf.Name())
		sc := bufio.NewScanner(f)
		lines := 0
		stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`)
		for sc.Scan() {
			line := sc.Text()
			lines++
			if journal && !regexp.MustCompile(`^<[2-7]>(DEBUG|INFO|WARN|ERROR)\t`).MatchString(line) {
				t.Errorf("journal line without a priority prefix, or with a timestamp: %q", line)
			}
			if !journal && !stamp.MatchString(line) {
				t.Errorf("console line without a timestamp: %q", line)
			}
		}
		f.Close()
		if lines < 3 {
			t.Errorf("journal=%v: only %d log lines", journal, lines)
		}
	}
}

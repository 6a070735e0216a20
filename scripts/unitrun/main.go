// Command unitrun starts a Type=notify systemd service from its unit
// file as systemd would, without systemd: it is how scripts/deb-check.sh
// shows that the installed package's unit starts, reloads and stops.
//
// Usage: go run ./scripts/unitrun UNIT_FILE [PROBE_COMMAND...]
//
// It reads the [Service] section, loads EnvironmentFile= (a leading "-"
// allows it to be missing), creates StateDirectory= under /var/lib with
// StateDirectoryMode= and sets STATE_DIRECTORY, applies LimitMEMLOCK= and
// LimitNOFILE=, makes a NOTIFY_SOCKET, and runs ExecStart= with
// $VAR/${VAR} expanded as systemd does (a lone $VAR is split into
// words). Then, each step failing the run if it does not happen in time:
// READY=1; the probe command (run through sh -c) exits 0; ExecReload=
// ($MAINPID expanded) gives RELOADING=1 then READY=1; SIGTERM (the
// default KillSignal=) gives STOPPING=1 and exit status 0 within
// TimeoutStopSec=. Only the directives it names are honoured; any other
// [Service] directive is listed as not applied, so nothing is silently
// taken for tested.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: unitrun UNIT_FILE [PROBE_COMMAND]")
		os.Exit(2)
	}
	if err := run(os.Args[1], strings.Join(os.Args[2:], " ")); err != nil {
		fmt.Fprintln(os.Stderr, "unitrun: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("unitrun: PASS")
}

// applied are the [Service] directives run honours.
var applied = map[string]bool{
	"Type": true, "NotifyAccess": true, "EnvironmentFile": true, "ExecStart": true, "ExecReload": true,
	"StateDirectory": true, "StateDirectoryMode": true, "LimitMEMLOCK": true, "LimitNOFILE": true, "TimeoutStopSec": true,
}

// readService returns the [Service] directives of a unit file, with
// continuation lines joined.
func readService(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	section, pending := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && section == "[Service]" {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}

// loadEnvFile reads KEY=VALUE lines (optionally quoted) as systemd's
// EnvironmentFile= does.
func loadEnvFile(path string, env map[string]string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return nil
}

// expand splits a command line into words and expands variables as
// systemd.service(5) says: "$VAR" alone is split at whitespace into
// words (none if empty), "${VAR}" inside a word is substituted as is.
func expand(cmdline string, env map[string]string) []string {
	var out []string
	for _, w := range strings.Fields(cmdline) {
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") && !strings.ContainsAny(w[1:], "${}") {
			out = append(out, strings.Fields(env[w[1:]])...)
			continue
		}
		out = append(out, os.Expand(w, func(k string) string { return env[k] }))
	}
	return out
}

func setLimit(resource int, value string) error {
	var v uint64
	if value == "infinity" {
		v = unix.RLIM_INFINITY
	} else {
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return err
		}
		v = n
	}
	return unix.Setrlimit(resource, &unix.Rlimit{Cur: v, Max: v})
}

type notifyMsg map[string]string

func readNotify(conn *net.UnixConn, msgs chan<- notifyMsg) {
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			close(msgs)
			return
		}
		m := notifyMsg{}
		for _, l := range strings.Split(string(buf[:n]), "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				m[k] = v
			}
		}
		msgs <- m
	}
}

func run(unitPath, probe string) error {
	svc, err := readService(unitPath)
	if err != nil {
		return err
	}
	for k := range svc {
		if !applied[k] {
			fmt.Printf("unitrun: %s= not applied (systemd alone can)\n", k)
		}
	}
	if svc["Type"] != "notify" {
		return fmt.Errorf("Type=%q, want notify", svc["Type"])
	}
	env := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
	if ef := svc["EnvironmentFile"]; ef != "" {
		optional := strings.HasPrefix(ef, "-")
		if err := loadEnvFile(strings.TrimPrefix(ef, "-"), env); err != nil && !(optional && os.IsNotExist(err)) {
			return fmt.Errorf("EnvironmentFile: %w", err)
		}
	}
	if sd := svc["StateDirectory"]; sd != "" {
		mode := uint64(0o755)
		if m := svc["StateDirectoryMode"]; m != "" {
			if mode, err = strconv.ParseUint(m, 8, 32); err != nil {
				return fmt.Errorf("StateDirectoryMode: %w", err)
			}
		}
		dir := filepath.Join("/var/lib", sd)
		if err := os.MkdirAll(dir, os.FileMode(mode)); err != nil {
			return err
		}
		if err := os.Chmod(dir, os.FileMode(mode)); err != nil {
			return err
		}
		env["STATE_DIRECTORY"] = dir
	}
	for key, res := range map[string]int{"LimitMEMLOCK": unix.RLIMIT_MEMLOCK, "LimitNOFILE": unix.RLIMIT_NOFILE} {
		if v := svc[key]; v != "" {
			if err := setLimit(res, v); errors.Is(err, unix.EPERM) {
				// Raising a hard limit takes CAP_SYS_RESOURCE, which
				// systemd has and a container may not.
				var lim unix.Rlimit
				unix.Getrlimit(res, &lim)
				fmt.Printf("unitrun: %s=%s not applied: raising the hard limit (%d) is not permitted here\n", key, v, lim.Max)
			} else if err != nil {
				return fmt.Errorf("%s=%s: %w", key, v, err)
			}
		}
	}
	stopTimeout := 90 * time.Second
	if v := svc["TimeoutStopSec"]; v != "" {
		if _, err := strconv.Atoi(v); err == nil {
			v += "s" // plain seconds
		}
		if stopTimeout, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("TimeoutStopSec: %w", err)
		}
	}

	dir, err := os.MkdirTemp("", "unitrun")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	msgs := make(chan notifyMsg, 16)
	go readNotify(conn, msgs)
	env["NOTIFY_SOCKET"] = sock

	argv := expand(svc["ExecStart"], env)
	if len(argv) == 0 {
		return fmt.Errorf("no ExecStart=")
	}
	fmt.Printf("unitrun: ExecStart: %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ExecStart: %w", err)
	}
	var exitErr error
	hasExited := false
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if !hasExited && cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()
	start := time.Now()
	wait := func(what string, d time.Duration, ok func(notifyMsg) bool) (notifyMsg, error) {
		deadline := time.After(d)
		for {
			if hasExited {
				// A message sent just before the exit may still be
				// queued on the socket.
				select {
				case m, open := <-msgs:
					if open && ok(m) {
						fmt.Printf("unitrun: %s after %.2fs (STATUS=%s)\n", what, time.Since(start).Seconds(), m["STATUS"])
						return m, nil
					}
					continue
				case <-time.After(200 * time.Millisecond):
					return nil, fmt.Errorf("service exited before %s: %v", what, exitErr)
				}
			}
			select {
			case m, open := <-msgs:
				if !open {
					return nil, fmt.Errorf("notify socket closed before %s", what)
				}
				if ok(m) {
					fmt.Printf("unitrun: %s after %.2fs (STATUS=%s)\n", what, time.Since(start).Seconds(), m["STATUS"])
					return m, nil
				}
			case exitErr = <-exited:
				hasExited = true
			case <-deadline:
				return nil, fmt.Errorf("no %s within %v", what, d)
			}
		}
	}
	if _, err := wait("READY=1", 90*time.Second, func(m notifyMsg) bool { return m["READY"] == "1" }); err != nil {
		return err
	}
	if probe != "" {
		p := exec.Command("sh", "-c", probe)
		p.Stdout, p.Stderr = os.Stdout, os.Stderr
		if err := p.Run(); err != nil {
			return fmt.Errorf("probe %q: %w", probe, err)
		}
		fmt.Printf("unitrun: probe %q exited 0\n", probe)
	}
	if r := svc["ExecReload"]; r != "" {
		env["MAINPID"] = strconv.Itoa(cmd.Process.Pid)
		rv := expand(r, env)
		if out, err := exec.Command(rv[0], rv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("ExecReload %v: %v %s", rv, err, out)
		}
		if _, err := wait("RELOADING=1", 30*time.Second, func(m notifyMsg) bool { return m["RELOADING"] == "1" && m["MONOTONIC_USEC"] != "" }); err != nil {
			return err
		}
		if _, err := wait("READY=1 after the reload", 30*time.Second, func(m notifyMsg) bool { return m["READY"] == "1" }); err != nil {
			return err
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if _, err := wait("STOPPING=1", stopTimeout, func(m notifyMsg) bool { return m["STOPPING"] == "1" }); err != nil {
		return err
	}
	if !hasExited {
		select {
		case exitErr = <-exited:
		case <-time.After(stopTimeout):
			return fmt.Errorf("still running %v (TimeoutStopSec) after SIGTERM", stopTimeout)
		}
	}
	if exitErr != nil {
		return fmt.Errorf("exit after SIGTERM: %v", exitErr)
	}
	fmt.Printf("unitrun: exited 0 after SIGTERM, %.2fs in all\n", time.Since(start).Seconds())
	return nil
}

// Command locktest takes and checks POSIX (fcntl) and flock(2) locks on a
// file of an NFS mount, as a lock test suite does, for the kernel-VM lab
// (conformance/kernel, `make test-kernel`). It is built on the host as a
// static binary (CGO_ENABLED=0) and runs in the client guest on the kernel
// client's mount, and in the server guest on the exported file system to see
// what the server's lock manager holds.
//
// Every lock owner is a process of its own: the scenarios start `locktest
// owner FILE` children (a second, third owner is a second, third process, as
// POSIX locks belong to processes) and drive them over a line protocol on
// their stdin/stdout. What the server holds is asked through a hook command
// (--hook, run as `HOOK server FUNC ARGS...` or `HOOK client FUNC ARGS...`),
// which guest/test.sh provides: it runs `locktest do` on the server guest.
//
//	locktest owner FILE             a lock owner (line protocol on stdin/stdout)
//	locktest do FILE CMD [ARGS]...  one owner, one command (e.g. test w 0 0); prints the reply
//	locktest hold FILE T START LEN  take the lock (blocking), print "held", keep it until stdin closes
//	locktest [--hook H] [--server-file F] SCENARIO FILE
//	                                posix | blocking | flock | reclaim | statd | quick
//
// Owner commands (one a line; one reply line each): "lock T START LEN"
// (F_SETLK; T is r, w or u) answers ok or denied; "lockw T START LEN"
// (F_SETLKW) answers ok when granted; "test T START LEN" (F_GETLK) answers
// "free" or "held T START LEN PID"; "flock ex|sh|un [nb]"; "close"; "open";
// "pid"; "write OFF LEN SEED" and "check OFF LEN SEED" (a deterministic
// pattern); any error answers "err MESSAGE". LEN 0 means to the end of file.
//
// Output of a scenario: one line per check, "ok NAME" or "FAIL NAME: why",
// "info ..." lines with measurements, and a closing "N checks, N failed".
// Exit status 1 when a check failed, 2 on a usage error.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "owner":
		if len(os.Args) != 3 {
			usage()
		}
		os.Exit(runOwner(os.Args[2], os.Stdin, os.Stdout))
	case "do":
		if len(os.Args) < 4 {
			usage()
		}
		os.Exit(runDo(os.Args[2], strings.Join(os.Args[3:], " ")))
	case "hold":
		if len(os.Args) != 6 {
			usage()
		}
		os.Exit(runHold(os.Args[2], strings.Join(os.Args[3:], " ")))
	}
	fs := flag.NewFlagSet("locktest", flag.ExitOnError)
	hook := fs.String("hook", "", "command run as `HOOK server|client FUNC ARGS...` for the other host's view and actions")
	serverFile := fs.String("server-file", "", "the same file as seen on the server guest (its path in the export)")
	wait := fs.Duration("grant-limit", 10*time.Second, "longest time from unlock to grant that counts as granted by the server's callback")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 2 {
		usage()
	}
	s := &suite{file: fs.Arg(1), hook: *hook, serverFile: *serverFile, grantLimit: *wait}
	run, ok := scenarios[fs.Arg(0)]
	if !ok {
		usage()
	}
	if (*hook == "" || *serverFile == "") && fs.Arg(0) != "quick" {
		fmt.Fprintln(os.Stderr, "locktest: --hook and --server-file are required for this scenario")
		os.Exit(2)
	}
	code := s.run(run)
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: locktest owner FILE | do FILE CMD... | hold FILE T START LEN |\n"+
		"       locktest [--hook H --server-file F] posix|blocking|flock|reclaim|statd|quick FILE")
	os.Exit(2)
}

// ---------------------------------------------------------------- owner side

type owner struct {
	path string
	f    *os.File
}

func lockType(t string) (int16, error) {
	switch t {
	case "r":
		return syscall.F_RDLCK, nil
	case "w":
		return syscall.F_WRLCK, nil
	case "u":
		return syscall.F_UNLCK, nil
	}
	return 0, fmt.Errorf("lock type %q is not r, w or u", t)
}

func typeName(t int16) string {
	switch t {
	case syscall.F_RDLCK:
		return "r"
	case syscall.F_WRLCK:
		return "w"
	case syscall.F_UNLCK:
		return "u"
	}
	return strconv.Itoa(int(t))
}

func parseRange(f []string) (int16, int64, int64, error) {
	if len(f) != 3 {
		return 0, 0, 0, errors.New("want T START LEN")
	}
	t, err := lockType(f[0])
	if err != nil {
		return 0, 0, 0, err
	}
	start, err1 := strconv.ParseInt(f[1], 10, 64)
	n, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || start < 0 || n < 0 {
		return 0, 0, 0, fmt.Errorf("bad range %q %q", f[1], f[2])
	}
	return t, start, n, nil
}

func denied(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EWOULDBLOCK)
}

// pattern is the deterministic content written and checked at an offset.
func pattern(off, n int64, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint64(off+int64(i)) * 2654435761
		b[i] = byte(x>>13) ^ seed
	}
	return b
}

// do runs one owner command and returns its reply line.
func (o *owner) do(line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "err empty command"
	}
	if o.f == nil && f[0] != "open" && f[0] != "pid" {
		return "err file not open"
	}
	switch f[0] {
	case "pid":
		return strconv.Itoa(os.Getpid())
	case "open":
		if o.f != nil {
			return "err already open"
		}
		fh, err := os.OpenFile(o.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return "err " + err.Error()
		}
		o.f = fh
		return "ok"
	case "close":
		err := o.f.Close()
		o.f = nil
		if err != nil {
			return "err " + err.Error()
		}
		return "ok"
	case "lock", "lockw", "test":
		t, start, n, err := parseRange(f[1:])
		if err != nil {
			return "err " + err.Error()
		}
		lk := syscall.Flock_t{Type: t, Whence: io.SeekStart, Start: start, Len: n}
		cmd := map[string]int{"lock": syscall.F_SETLK, "lockw": syscall.F_SETLKW, "test": syscall.F_GETLK}[f[0]]
		for {
			err = syscall.FcntlFlock(o.f.Fd(), cmd, &lk)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		switch {
		case err == nil && f[0] == "test" && lk.Type == syscall.F_UNLCK:
			return "free"
		case err == nil && f[0] == "test":
			return fmt.Sprintf("held %s %d %d %d", typeName(lk.Type), lk.Start, lk.Len, lk.Pid)
		case err == nil:
			return "ok"
		case denied(err) && f[0] == "lock":
			return "denied"
		}
		return "err " + err.Error()
	case "flock":
		if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "nb") {
			return "err want flock ex|sh|un [nb]"
		}
		how := map[string]int{"ex": syscall.LOCK_EX, "sh": syscall.LOCK_SH, "un": syscall.LOCK_UN}[f[1]]
		if how == 0 {
			return "err want flock ex|sh|un [nb]"
		}
		if len(f) == 3 {
			how |= syscall.LOCK_NB
		}
		err := syscall.Flock(int(o.f.Fd()), how)
		switch {
		case err == nil:
			return "ok"
		case denied(err):
			return "denied"
		}
		return "err " + err.Error()
	case "write", "check":
		if len(f) != 4 {
			return "err want " + f[0] + " OFF LEN SEED"
		}
		off, err1 := strconv.ParseInt(f[1], 10, 64)
		n, err2 := strconv.ParseInt(f[2], 10, 64)
		seed, err3 := strconv.ParseUint(f[3], 10, 8)
		if err1 != nil || err2 != nil || err3 != nil || off < 0 || n <= 0 || n > 64<<20 {
			return "err bad arguments"
		}
		want := pattern(off, n, byte(seed))
		if f[0] == "write" {
			if _, err := o.f.WriteAt(want, off); err != nil {
				return "err " + err.Error()
			}
			if err := o.f.Sync(); err != nil {
				return "err fsync: " + err.Error()
			}
			return "ok"
		}
		got := make([]byte, n)
		if _, err := o.f.ReadAt(got, off); err != nil {
			return "err " + err.Error()
		}
		for i := range got {
			if got[i] != want[i] {
				return fmt.Sprintf("differs at %d", off+int64(i))
			}
		}
		return "ok"
	}
	return "err unknown command " + f[0]
}

func openOwner(path string) (*owner, error) {
	o := &owner{path: path}
	if r := o.do("open"); r != "ok" {
		return nil, errors.New(r)
	}
	return o, nil
}

func runOwner(path string, in io.Reader, out io.Writer) int {
	o, err := openOwner(path)
	if err != nil {
		fmt.Fprintln(out, "err", err)
		return 1
	}
	fmt.Fprintln(out, "ready")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fmt.Fprintln(out, o.do(sc.Text()))
	}
	return 0
}

func runDo(path, cmd string) int {
	o, err := openOwner(path)
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	r := o.do(cmd)
	fmt.Println(r)
	if strings.HasPrefix(r, "err") {
		return 1
	}
	return 0
}

func runHold(path, rng string) int {
	o, err := openOwner(path)
	if err != nil {
		fmt.Println("err", err)
		return 1
	}
	if r := o.do("lockw " + rng); r != "ok" {
		fmt.Println(r)
		return 1
	}
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin) // until stdin closes
	return 0
}

// ---------------------------------------------------------------- driver side

// proc is an owner child process driven over its stdin/stdout.
type proc struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startProc(name, path string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := exec.Command(self, "owner", path)
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: c, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(outp)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	if r, ok := p.recv(30 * time.Second); !ok || r != "ready" {
		p.kill()
		return nil, fmt.Errorf("owner %s did not start: %q", name, r)
	}
	return p, nil
}

func (p *proc) send(line string) { fmt.Fprintln(p.in, line) }

// recv waits up to d for the next reply; ok is false on timeout or exit.
func (p *proc) recv(d time.Duration) (string, bool) {
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(d):
		return "", false
	}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (p *proc) close() {
	_ = p.in.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

type suite struct {
	file       string
	serverFile string
	hook       string
	grantLimit time.Duration
	checks     int
	failed     int
	procs      []*proc
	pids       map[string]string
}

type scenario func(s *suite)

var scenarios = map[string]scenario{
	"posix":    (*suite).posix,
	"blocking": (*suite).blocking,
	"flock":    (*suite).flock,
	"reclaim":  (*suite).reclaim,
	"statd":    (*suite).statd,
	"quick":    (*suite).quick,
}

// errAbort stops a scenario after a failure that makes the rest meaningless.
type errAbort struct{ msg string }

func (s *suite) run(sc scenario) (code int) {
	s.pids = map[string]string{}
	defer func() {
		for _, p := range s.procs {
			p.kill()
		}
		if r := recover(); r != nil {
			a, ok := r.(errAbort)
			if !ok {
				panic(r)
			}
			s.checks++
			s.failed++
			fmt.Printf("FAIL %s (scenario stopped)\n", a.msg)
		}
		fmt.Printf("%d checks, %d failed\n", s.checks, s.failed)
		if s.failed > 0 || s.checks == 0 {
			code = 1
		}
	}()
	sc(s)
	return 0
}

func (s *suite) abort(format string, a ...any) { panic(errAbort{fmt.Sprintf(format, a...)}) }

func (s *suite) check(name string, ok bool, why string, a ...any) bool {
	s.checks++
	if ok {
		fmt.Printf("ok %s\n", name)
		return true
	}
	s.failed++
	fmt.Printf("FAIL %s: %s\n", name, fmt.Sprintf(why, a...))
	return false
}

func (s *suite) owner(name string) *proc {
	p, err := startProc(name, s.file)
	if err != nil {
		s.abort("start owner %s: %v", name, err)
	}
	s.procs = append(s.procs, p)
	p.send("pid")
	pid, _ := p.recv(10 * time.Second)
	s.pids[name] = pid
	return p
}

// call sends a command to an owner and waits (up to 90 s: a call made in
// the server's grace period waits for its end) for the reply.
func (s *suite) call(p *proc, cmd string) string {
	p.send(cmd)
	r, ok := p.recv(90 * time.Second)
	if !ok {
		s.abort("%s: no reply to %q within 90 s", p.name, cmd)
	}
	return r
}

// expect runs cmd on owner p and checks the reply.
func (s *suite) expect(p *proc, cmd, want string) bool {
	got := s.call(p, cmd)
	return s.check(fmt.Sprintf("%s: %s -> %s", p.name, cmd, want), got == want, "got %q", got)
}

// expectHeld checks an F_GETLK answer: type, start, length and holder pid
// (pidOf "" skips the pid: a holder on another host has no pid here).
func (s *suite) expectHeld(p *proc, cmd, typ string, start, n int64, pidOf string) bool {
	got := s.call(p, cmd)
	want := fmt.Sprintf("held %s %d %d", typ, start, n)
	ok := strings.HasPrefix(got+" ", want+" ")
	name := fmt.Sprintf("%s: %s -> %s", p.name, cmd, want)
	if pidOf != "" {
		want += " " + s.pids[pidOf]
		ok = got == want
		name += " pid of " + pidOf
	}
	return s.check(name, ok, "got %q", got)
}

// hookRun runs the hook: where is "server" or "client".
func (s *suite) hookRun(where string, args ...string) (string, error) {
	c := exec.Command(s.hook, append([]string{where}, args...)...)
	c.Stderr = os.Stderr
	out, err := c.Output()
	return strings.TrimSpace(string(out)), err
}

// lastLine is the last line of a hook's output (the reply of `locktest do`).
func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// serverTest asks the server guest what a local F_GETLK on the exported
// file reports for the range: the locks its lock manager holds.
func (s *suite) serverTest(rng string) string {
	out, err := s.hookRun("server", "lock_do", s.serverFile, "test "+rng)
	if err != nil {
		return fmt.Sprintf("hook failed (%v): %s", err, lastLine(out))
	}
	return lastLine(out)
}

func (s *suite) expectServer(rng, want string) bool {
	got := s.serverTest(rng)
	ok := got == want || (want != "free" && strings.HasPrefix(got+" ", want+" "))
	return s.check(fmt.Sprintf("server sees: test %s -> %s", rng, want), ok, "got %q", got)
}

// waitServer polls the server's view until it matches or the limit passes.
func (s *suite) waitServer(rng, want string, limit time.Duration) (time.Duration, string) {
	t0 := time.Now()
	var got string
	for time.Since(t0) < limit {
		got = s.serverTest(rng)
		if got == want || (want != "free" && strings.HasPrefix(got+" ", want+" ")) {
			return time.Since(t0), got
		}
		time.Sleep(200 * time.Millisecond)
	}
	return -1, got
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// ---------------------------------------------------------------- scenarios

const gib = int64(1) << 30

// posix: whole file and byte ranges, shared and exclusive, upgrade and
// downgrade, split and merge, F_GETLK's holder and range, offsets beyond
// 2 GiB and to EOF, close releases, and what the server holds.
func (s *suite) posix() {
	a, b, c := s.owner("A"), s.owner("B"), s.owner("C")

	// whole file
	s.expect(b, "test w 0 0", "free")
	s.expect(a, "lock w 0 0", "ok")
	s.expectHeld(b, "test r 0 0", "w", 0, 0, "A")
	s.expect(b, "lock r 0 0", "denied")
	s.expect(b, "lock w 10 1", "denied")
	s.expectServer("w 0 0", "held w 0 0")
	s.expect(a, "lock u 0 0", "ok")
	s.expectServer("w 0 0", "free")

	// shared
	s.expect(b, "lock r 0 0", "ok")
	s.expect(c, "lock r 0 0", "ok")
	s.expect(a, "lock w 0 0", "denied")
	s.expect(a, "lock w 4096 1", "denied")
	s.expectHeld(a, "test w 0 0", "r", 0, 0, "")
	s.expectServer("r 0 0", "free")
	s.expectServer("w 0 0", "held r 0 0")
	s.expect(b, "lock u 0 0", "ok")
	s.expect(a, "lock w 0 0", "denied") // C still holds its read lock
	s.expect(c, "lock u 0 0", "ok")

	// byte ranges
	s.expect(a, "lock w 100 100", "ok")
	s.expect(b, "lock w 200 100", "ok") // adjacent, not overlapping
	s.expect(b, "lock w 150 10", "denied")
	s.expect(b, "lock w 199 2", "denied")
	s.expect(c, "lock w 99 1", "ok")
	s.expect(c, "lock u 99 1", "ok")
	s.expectHeld(b, "test w 0 1000", "w", 100, 100, "A")
	s.expectHeld(c, "test w 250 1", "w", 200, 100, "B")
	s.expectServer("w 100 50", "held w 100 100")
	s.expectServer("w 300 10", "free")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")
	s.expect(c, "lock u 0 0", "ok")

	// upgrade and downgrade
	s.expect(a, "lock r 0 100", "ok")
	s.expect(b, "lock r 0 100", "ok")
	s.expect(a, "lock w 0 100", "denied") // upgrade against B's shared lock
	s.expect(c, "lock w 50 1", "denied")  // A still holds its read lock
	s.expect(b, "lock u 0 0", "ok")
	s.expectHeld(c, "test w 0 100", "r", 0, 100, "A")
	s.expect(a, "lock w 0 100", "ok") // upgrade
	s.expect(b, "lock r 0 1", "denied")
	s.expectHeld(b, "test r 0 100", "w", 0, 100, "A")
	s.expectServer("r 0 100", "held w 0 100")
	s.expect(a, "lock r 0 100", "ok") // downgrade
	s.expect(b, "lock r 0 100", "ok")
	s.expect(c, "lock w 0 1", "denied")
	s.expectServer("r 0 100", "free")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")

	// split
	s.expect(a, "lock w 0 300", "ok")
	s.expect(a, "lock u 100 100", "ok")
	s.expect(b, "lock w 100 100", "ok")
	s.expect(b, "lock w 0 1", "denied")
	s.expect(b, "lock w 299 1", "denied")
	s.expectHeld(c, "test w 0 100", "w", 0, 100, "A")
	s.expectHeld(c, "test w 200 100", "w", 200, 100, "A")
	s.expectHeld(c, "test w 100 100", "w", 100, 100, "B")
	s.expectServer("w 120 10", "held w 100 100")
	s.expect(b, "lock u 0 0", "ok")
	s.expect(a, "lock u 0 0", "ok")

	// merge
	s.expect(a, "lock w 1000 100", "ok")
	s.expect(a, "lock w 1100 100", "ok")
	s.expectHeld(b, "test w 1000 200", "w", 1000, 200, "A")
	s.expect(a, "lock u 1050 100", "ok")
	s.expect(b, "lock w 1050 100", "ok")
	s.expect(b, "lock w 1049 1", "denied")
	s.expect(b, "lock w 1150 1", "denied")
	s.expect(b, "lock u 0 0", "ok")
	s.expect(a, "lock u 0 0", "ok")
	// a read and a write range of one owner, next to each other
	s.expect(a, "lock r 2000 100", "ok")
	s.expect(a, "lock w 2050 100", "ok")
	s.expect(b, "lock r 2000 50", "ok")
	s.expect(b, "lock r 2050 1", "denied")
	s.expectHeld(c, "test w 2000 1", "r", 2000, 50, "")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")

	// beyond 2 GiB and to EOF (64-bit offsets)
	g := 3 * gib
	s.expect(a, fmt.Sprintf("lock w %d 4096", g), "ok")
	s.expect(b, fmt.Sprintf("lock w %d 1", g+4095), "denied")
	s.expect(b, fmt.Sprintf("lock w %d 1", g-1), "ok")
	s.expect(b, fmt.Sprintf("lock w %d 1", g+4096), "ok")
	s.expectHeld(c, fmt.Sprintf("test w %d 1", g-1), "w", g-1, 1, "B")
	s.expectHeld(c, fmt.Sprintf("test w %d 10", g+10), "w", g, 4096, "A")
	s.expectServer(fmt.Sprintf("w %d 1", g+100), fmt.Sprintf("held w %d 4096", g))
	s.expectServer(fmt.Sprintf("w %d 1", 2*gib), "free")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")
	t := int64(1) << 40
	s.expect(a, fmt.Sprintf("lock w %d 0", t), "ok") // from 1 TiB to EOF
	s.expect(b, fmt.Sprintf("lock w %d 1", int64(1)<<62), "denied")
	s.expect(b, fmt.Sprintf("lock w %d 1", t-1), "ok")
	s.expectHeld(c, fmt.Sprintf("test r %d 1", int64(1)<<50), "w", t, 0, "A")
	s.expectServer(fmt.Sprintf("w %d 1", int64(1)<<50), fmt.Sprintf("held w %d 0", t))
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")

	// close releases every lock of the process on the file
	s.expect(a, "lock w 0 10", "ok")
	s.expect(a, "lock r 100 10", "ok")
	s.expect(a, "close", "ok")
	s.expect(b, "lock w 0 200", "ok")
	s.expectServer("w 0 0", "held w 0 200")
	s.expect(b, "close", "ok")
	s.expectServer("w 0 0", "free")
	s.expect(a, "open", "ok")
	s.expect(b, "open", "ok")

	// a lock held by a process on the server host: the client learns of it
	// only from the server (NLM TEST) and cannot take it
	out, err := s.hookRun("server", "lock_hold", s.serverFile, "w 10 10")
	if s.check("server: a local process holds w 10 10", err == nil && strings.HasSuffix(out, "held"), "hook: %v: %q", err, lastLine(out)) {
		s.expectHeld(b, "test w 0 100", "w", 10, 10, "")
		s.expect(b, "lock w 15 1", "denied")
		s.expect(b, "lock w 20 1", "ok")
		out, err = s.hookRun("server", "lock_release")
		s.check("server: the local holder releases", err == nil, "hook: %v: %q", err, lastLine(out))
		s.expect(b, "lock w 10 10", "ok")
		s.expect(b, "lock u 0 0", "ok")
	}
}

// blocking: a blocked F_SETLKW is granted when the holder unlocks; the time
// from unlock to grant is printed. A waiter that dies is cancelled.
func (s *suite) blocking() {
	a, b, c := s.owner("A"), s.owner("B"), s.owner("C")
	var times []time.Duration
	for i := 0; i < 3; i++ {
		s.expect(a, "lock w 0 0", "ok")
		b.send("lockw w 0 0")
		r, got := b.recv(2 * time.Second)
		s.check(fmt.Sprintf("round %d: B's F_SETLKW blocks while A holds the lock", i+1), !got, "B answered %q", r)
		s.expectServer("w 0 0", "held w 0 0")
		t0 := time.Now()
		s.expect(a, "lock u 0 0", "ok")
		r, got = b.recv(90 * time.Second)
		d := time.Since(t0)
		if !s.check(fmt.Sprintf("round %d: B granted after A's unlock", i+1), got && r == "ok", "B answered %q (%v) after %s", r, got, ms(d)) {
			return
		}
		times = append(times, d)
		s.check(fmt.Sprintf("round %d: granted within %s of the unlock (by the server's GRANTED callback, not the client's 30 s re-poll)", i+1, s.grantLimit),
			d <= s.grantLimit, "took %s", ms(d))
		s.expect(c, "lock w 0 1", "denied")
		s.expect(b, "lock u 0 0", "ok")
	}
	fmt.Printf("info unlock-to-grant: %s, %s, %s\n", ms(times[0]), ms(times[1]), ms(times[2]))

	// a waiter killed while blocked: its request is cancelled, the lock goes
	// to nobody, C takes it
	s.expect(a, "lock w 0 0", "ok")
	d := s.owner("D")
	d.send("lockw w 0 0")
	_, got := d.recv(2 * time.Second)
	s.check("D's F_SETLKW blocks", !got, "D answered")
	d.kill()
	time.Sleep(time.Second)
	s.expect(a, "lock u 0 0", "ok")
	time.Sleep(time.Second)
	s.expect(c, "lock w 0 0", "ok")
	s.expectServer("w 0 0", "held w 0 0")
	s.expect(c, "lock u 0 0", "ok")
	s.expectServer("w 0 0", "free")
}

// flock: flock(2) on the mount (the client emulates it with whole-file
// POSIX locks on the server).
func (s *suite) flock() {
	a, b, c := s.owner("A"), s.owner("B"), s.owner("C")
	s.expect(a, "flock ex nb", "ok")
	s.expect(b, "flock ex nb", "denied")
	s.expect(b, "flock sh nb", "denied")
	s.expectServer("r 0 0", "held w 0 0")
	s.expect(c, "lock r 0 1", "denied") // flock and fcntl locks conflict on NFS
	s.expect(a, "flock un", "ok")
	s.expectServer("r 0 0", "free")
	s.expect(b, "flock sh nb", "ok")
	s.expect(c, "flock sh nb", "ok")
	s.expect(a, "flock ex nb", "denied")
	s.expectServer("w 0 0", "held r 0 0")
	s.expect(b, "flock un", "ok")
	s.expect(c, "flock un", "ok")
	// a blocking flock is granted on release
	s.expect(a, "flock ex", "ok")
	b.send("flock ex")
	r, got := b.recv(2 * time.Second)
	s.check("B's blocking flock waits while A holds it", !got, "B answered %q", r)
	t0 := time.Now()
	s.expect(a, "flock un", "ok")
	r, got = b.recv(90 * time.Second)
	s.check("B's blocking flock granted on A's release", got && r == "ok", "B answered %q after %s", r, ms(time.Since(t0)))
	fmt.Printf("info flock release-to-grant: %s\n", ms(time.Since(t0)))
	s.expect(b, "flock un", "ok")
	s.expectServer("w 0 0", "free")
}

// reclaim: the server is killed and started again while the client holds
// locks: the client reclaims them within the grace period, a waiting owner
// stays blocked until the holder releases, the data is intact.
func (s *suite) reclaim() {
	a, b, c := s.owner("A"), s.owner("B"), s.owner("C")
	const size = 1 << 20
	s.expect(a, fmt.Sprintf("write 0 %d 7", size), "ok")
	s.expect(a, "lock w 0 4096", "ok")
	s.expect(a, "lock r 8192 4096", "ok")
	s.expectServer("w 0 1", "held w 0 4096")
	s.expectServer("w 9000 1", "held r 8192 4096")
	b.send("lockw w 0 1")
	r, got := b.recv(2 * time.Second)
	s.check("B's F_SETLKW blocks on A's lock", !got, "B answered %q", r)

	t0 := time.Now()
	out, err := s.hookRun("server", "lock_server_restart", s.serverFile)
	if !s.check("server killed (SIGKILL) and started again", err == nil, "hook: %v: %q", err, lastLine(out)) {
		return
	}
	// the crash really lost the locks: the server's file was unlocked
	// between the kill and the restart, so what comes back is a reclaim
	s.check("the locks were gone from the server's file after the kill", strings.Contains(out, "after-crash: free"),
		"hook output: %q", out)
	fmt.Printf("info server down and up again in %s\n", ms(time.Since(t0)))
	t1 := time.Now()
	d, gotS := s.waitServer("w 0 1", "held w 0 4096", 120*time.Second)
	if s.check("the client reclaimed A's write lock on the restarted server", d >= 0, "server sees %q after 120 s", gotS) {
		fmt.Printf("info A's lock back on the server %s after the restart\n", ms(time.Since(t1)))
	}
	s.expectServer("w 9000 1", "held r 8192 4096")
	r, got = b.recv(time.Second)
	s.check("B still blocked after the reclaim", !got, "B answered %q", r)
	s.expect(c, "lock w 100 1", "denied")
	s.expect(c, "lock r 8192 1", "ok")
	s.expect(c, "lock u 0 0", "ok")
	t2 := time.Now()
	s.expect(a, "lock u 0 4096", "ok")
	r, got = b.recv(120 * time.Second)
	s.check("B granted after A's unlock", got && r == "ok", "B answered %q after %s", r, ms(time.Since(t2)))
	fmt.Printf("info B granted %s after A's unlock\n", ms(time.Since(t2)))
	s.expectServer("w 0 1", "held w 0 1")
	s.expect(c, fmt.Sprintf("check 0 %d 7", size), "ok")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock u 0 0", "ok")
	s.expectServer("w 0 0", "free")
}

// statd: the client's statd restarted with a new state (sm-notify -f) tells
// the server the client rebooted: the server frees the client's locks.
func (s *suite) statd() {
	a := s.owner("A")
	s.expect(a, "lock w 0 0", "ok")
	s.expectServer("w 0 0", "held w 0 0")
	out, err := s.hookRun("client", "statd_new_state")
	if !s.check("client statd restarted with a new state, sm-notify -f sent", err == nil, "hook: %v: %q", err, lastLine(out)) {
		return
	}
	d, got := s.waitServer("w 0 0", "free", 60*time.Second)
	if s.check("the server freed the client's locks on its SM_NOTIFY", d >= 0, "server still sees %q after 60 s", got) {
		fmt.Printf("info locks freed %s after sm-notify\n", ms(d))
	}
	// the server holds nothing for the client: a new lock of another owner works
	b := s.owner("B")
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock w 0 0", "ok")
	s.expectServer("w 0 0", "held w 0 0")
	s.expect(b, "lock u 0 0", "ok")
}

// quick: a lock, a conflict with a second owner, and release (the check
// after each mount an admin types).
func (s *suite) quick() {
	a, b := s.owner("A"), s.owner("B")
	s.expect(b, "test w 0 0", "free")
	s.expect(a, "lock w 0 100", "ok")
	s.expect(b, "lock w 50 1", "denied")
	s.expectHeld(b, "test w 0 0", "w", 0, 100, "A")
	if s.hook != "" && s.serverFile != "" {
		s.expectServer("w 0 0", "held w 0 100")
	}
	s.expect(a, "lock u 0 0", "ok")
	s.expect(b, "lock w 50 1", "ok")
	s.expect(b, "lock u 0 0", "ok")
}

package adversary

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freshClientBound is how quickly a client arriving during an attack
// must get an answer (issue 11, Must show): the median of
// freshClientSamples connections, each dial plus one NULL call.
const (
	freshClientBound   = 100 * time.Millisecond
	freshClientSamples = 11
)

// attackers are the source addresses exhaustion attacks come from, so
// that a per-address cap alone does not stop them (issue 11: "total and
// per client address").
func attackerAddr(i int) string { return fmt.Sprintf("127.0.1.%d", 1+i%50) }

// rssBytes is the resident set size of this process (daemon and
// attacking clients together), from /proc/self/status.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	must(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			must(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// rssBaseline returns memory the runtime holds free to the system
// (garbage collection, then debug.FreeOSMemory) and returns the RSS
// left, so that what an earlier attack left behind does not hide what
// the next one costs.
func rssBaseline(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	return rssBytes(t)
}

// freshClient measures how long a new client from the bystander address
// waits for its first answer: dial and one NULL call, freshClientSamples
// times. It fails the test when the median exceeds freshClientBound and
// logs every sample.
func freshClient(t *testing.T, e *env, during string) {
	t.Helper()
	var samples []time.Duration
	for range freshClientSamples {
		start := time.Now()
		c, err := Dial(context.Background(), e.d.NFSAddr(), bystanderIP)
		if err == nil {
			c.Timeout = 5 * time.Second
			err = c.Null()
			c.Close()
		}
		d := time.Since(start)
		if err != nil {
			t.Errorf("%s: a fresh client got no answer after %v: %v", during, d, err)
			return
		}
		samples = append(samples, d)
	}
	slices.Sort(samples)
	median := samples[len(samples)/2]
	t.Logf("%s: fresh client dial+NULL median %v, max %v (bound %v on the median)", during, median, samples[len(samples)-1], freshClientBound)
	if median > freshClientBound {
		t.Errorf("%s: a fresh client waits %v (median of %d), over %v", during, median, len(samples), freshClientBound)
	}
}

// diskStillServed checks that after an attack a bystander can still
// create and write a file, and that the file on disk is the bystander's
// with the data sent.
func diskStillServed(t *testing.T, e *env, name string) {
	t.Helper()
	c := e.dial(bystanderIP, Sys(userUID, userGID))
	fh, st, err := c.Create(e.root(e.exp), name, Guarded, Mode(0o644))
	wantOK(t, "CREATE after the attack", st, err)
	st, err = c.Write(fh, 0, []byte("still served"))
	wantOK(t, "WRITE after the attack", st, err)
	p := filepath.Join(e.exp, name)
	if got := lstat(t, p); got.uid != userUID || got.gid != userGID {
		t.Errorf("the bystander's file on disk: %v", got)
	}
	if b, _ := os.ReadFile(p); string(b) != "still served" {
		t.Errorf("the bystander's file holds %q", b)
	}
}

// dialRaw opens a plain TCP connection from ip to addr.
func dialRaw(addr net.Addr, ip string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return d.Dial("tcp", addr.String())
}

// closeAll closes conns.
func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// TestExhaustion attacks the server's resources: many idle connections,
// connections that send calls and never read the replies, records held
// half-sent, and running the process out of descriptors. In each, a
// fresh client must keep getting answers within freshClientBound, memory
// must stay bounded, and afterwards the disk must show the server still
// doing a bystander's work.
func TestExhaustion(t *testing.T) {
	runAttacks(t, newEnv(t, nil), exhaustAttacks)
}

func exhaustIdle(t *testing.T, e *env) {
	const n = 1000
	base := rssBaseline(t)
	var conns []net.Conn
	defer func() { closeAll(conns) }()
	for i := range n {
		c, err := dialRaw(e.d.NFSAddr(), attackerAddr(i))
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond) // let the server accept them all
	grown := rssBytes(t) - base
	t.Logf("%d idle connections: RSS grew by %d KiB (%d bytes each, client side included)", n, grown>>10, grown/n)
	// The stated bound: 256 KiB per idle connection, server and client
	// side together (times memoryFactor under the race detector).
	const bound = n * 256 << 10 * memoryFactor
	if grown > bound {
		t.Errorf("%d idle connections cost %d MiB of RSS, over %d MiB", n, grown>>20, bound>>20)
	}
	freshClient(t, e, "1000 idle connections")
	diskStillServed(t, e, "after-idle")
}

// Records held open half-sent: a fragment that claims 1 MiB and
// brings 10 bytes, endless one-byte fragments, and a claim of 2 GiB,
// which must be refused at once without the server allocating it.
func exhaustSlow(t *testing.T, e *env) {
	base := rssBaseline(t)
	var conns []net.Conn
	defer func() { closeAll(conns) }()
	for i := range 100 {
		c, err := dialRaw(e.d.NFSAddr(), attackerAddr(i))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var b []byte
		if i%2 == 0 {
			b = binary.BigEndian.AppendUint32(nil, 1<<31|1<<20)
			b = append(b, make([]byte, 10)...)
		} else {
			for range 200 {
				b = binary.BigEndian.AppendUint32(b, 1)
				b = append(b, 0)
			}
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(b)
	}
	huge, err := dialRaw(e.d.NFSAddr(), attackerIP)
	if err != nil {
		t.Fatal(err)
	}
	conns = append(conns, huge)
	start := time.Now()
	huge.Write(binary.BigEndian.AppendUint32(nil, 1<<31|(1<<31-1)))
	huge.Write(make([]byte, 4096))
	huge.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = huge.Read(make([]byte, 16))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a record claiming 2 GiB kept its connection open for %v", time.Since(start))
	} else if err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a record claiming 2 GiB: read %v; want the connection closed", err)
	}
	grown := rssBytes(t) - base
	t.Logf("100 half-sent records and one 2 GiB claim: RSS grew by %d MiB", grown>>20)
	if grown > 256<<20*memoryFactor {
		t.Errorf("half-sent records cost %d MiB of RSS", grown>>20)
	}
	freshClient(t, e, "half-sent records")
	diskStillServed(t, e, "after-slow")
}

// exhaustAttacks are the subtests of TestExhaustion, in order.
var exhaustAttacks = []attack[*env]{
	{"idle", exhaustIdle},
	{"slow", exhaustSlow},
	{"churn", exhaustChurn},
	{"emfile", exhaustEmfile},
}

// openFDs counts this process's descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// 2,000 connections opened and dropped at once, half after one call and
// some in the middle of a record: the server's descriptors return to
// what they were (no leak), and it keeps serving.
func exhaustChurn(t *testing.T, e *env) {
	const n = 2000
	before := openFDs(t)
	for i := range n {
		c, err := Dial(context.Background(), e.d.NFSAddr(), attackerAddr(i))
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		switch i % 4 {
		case 1:
			c.Null()
		case 2:
			c.NetConn().Write([]byte{0x80, 0, 0, 100, 1, 2}) // a record cut short
		case 3:
			c.Send(NFSProgram, NFSVersion, ProcNull, nil) // a call whose reply nobody reads
		}
		c.Close()
	}
	// A few descriptors of slack: the test's own connections to look
	// handles up and the runtime's (timers, netpoll) may come and go.
	deadline := time.Now().Add(5 * time.Second)
	after := openFDs(t)
	for after > before+8 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		after = openFDs(t)
	}
	t.Logf("%d connections opened and dropped: descriptors %d before, %d after", n, before, after)
	if after > before+8 {
		t.Errorf("descriptors leaked: %d before %d dropped connections, %d five seconds after", before, n, after)
	}
	freshClient(t, e, "after connection churn")
	diskStillServed(t, e, "after-churn")
}

// The process runs out of descriptors (issue 11 defect 6): the
// listener must back off and keep serving once descriptors are free
// again, never stop. The attack is deterministic: 100 connections from
// 50 addresses, then sockets made in advance fill with every descriptor
// taken, so the server's accept4 must meet EMFILE.
func exhaustEmfile(t *testing.T, e *env) {
	var old syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	restore := func() { must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)) }
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	low := old
	low.Cur = uint64(len(ents) + 400)
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	var conns []net.Conn
	var socks, fillers []int
	defer func() {
		closeAll(conns)
		for _, fd := range append(socks, fillers...) {
			syscall.Close(fd)
		}
		restore()
	}()
	for i := range 100 {
		c, err := dialRaw(e.d.NFSAddr(), attackerAddr(i))
		if err != nil {
			t.Fatalf("connection %d under a limit of %d: %v", i, low.Cur, err)
		}
		conns = append(conns, c)
	}
	for range 20 {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		must(t, err)
		socks = append(socks, fd)
	}
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			if err != syscall.EMFILE {
				t.Fatalf("filling the descriptor table: %v", err)
			}
			break
		}
		fillers = append(fillers, fd)
	}
	server := e.d.NFSAddr().(*net.TCPAddr)
	sa := &syscall.SockaddrInet4{Port: server.Port}
	copy(sa.Addr[:], server.IP.To4())
	connected := 0
	for _, fd := range socks {
		if err := syscall.Connect(fd, sa); err == nil {
			connected++
		}
	}
	time.Sleep(500 * time.Millisecond) // the server meets EMFILE on accept meanwhile
	t.Logf("descriptor limit %d: %d connections, %d fillers, %d connects with no descriptor left", low.Cur, len(conns), len(fillers), connected)
	if connected == 0 {
		t.Fatal("no connection reached the server with the descriptor table full")
	}
	closeAll(conns)
	conns = nil
	for _, fd := range append(socks, fillers...) {
		syscall.Close(fd)
	}
	socks, fillers = nil, nil
	restore()
	// The server must be back within its backoff.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := Dial(context.Background(), e.d.NFSAddr(), bystanderIP)
		if err == nil {
			c.Timeout = time.Second
			err = c.Null()
			c.Close()
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after running out of descriptors the server does not answer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	freshClient(t, e, "after EMFILE")
	diskStillServed(t, e, "after-emfile")
}

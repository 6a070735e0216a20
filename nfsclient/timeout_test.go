package nfsclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// The tests here lose a message without a disconnect: the peer vanished
// without a word (its disconnect lost on a dead link, issue 16's netem
// row), so the client's connection still looks alive and only the
// per-attempt timeout gets the call answered, on a new connection with
// the same XID.

const shortTimeout = 300 * time.Millisecond

// dialRDMAShort mounts s over the fabric with a short per-attempt timeout.
func dialRDMAShort(t *testing.T, s *server) *nfsclient.FS {
	t.Helper()
	f := s.dial("rdma", "retries=5&timeout="+shortTimeout.String())
	if got := f.Timeout(); got != shortTimeout {
		t.Fatalf("Timeout() %v, want %v", got, shortTimeout)
	}
	// Warm: the root's handle and attributes, the first connection.
	if err := f.Mkdir("warm", 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// mkdirResentOnce makes directory name through f across a lost message
// and checks that it took exactly one attempt that timed out, resent on
// one new connection no sooner than the timeout, that the resend did not
// run the MKDIR again (NFS3ERR_EXIST), and that the directory is on the
// server.
func mkdirResentOnce(t *testing.T, s *server, f *nfsclient.FS, name string) {
	t.Helper()
	start := time.Now()
	err := f.Mkdir(name, 0o755)
	took := time.Since(start)
	if errors.Is(err, fs.ErrExist) {
		t.Fatalf("the MKDIR's retransmission ran the call again: %v", err)
	}
	if err != nil {
		t.Fatalf("Mkdir %s across the lost message: %v", name, err)
	}
	if st := f.Stats(); st.Retries != 1 || st.Reconnects != 1 {
		t.Fatalf("stats %+v: want one retry on one new connection", st)
	}
	if took < shortTimeout {
		t.Fatalf("the call took %v, less than the %v timeout: it was not the timeout that resent it", took, shortTimeout)
	}
	if fi, err := os.Stat(filepath.Join(s.dir, name)); err != nil || !fi.IsDir() {
		t.Fatalf("the directory on the server: %v", err)
	}
}

// TestLostCallResentAfterTimeout: the call's Send is lost (the fabric
// completes it at the client and delivers it to nobody; no error, no
// disconnect). After the timeout the client drops the connection and
// sends the call again on a new one.
func TestLostCallResentAfterTimeout(t *testing.T) {
	s := startServer(t)
	f := dialRDMAShort(t, s)
	s.fab.SetFaults(softfabric.FaultPlan{LoseSends: 1}) // the next Send: Mkdir's first call
	defer s.fab.SetFaults(softfabric.FaultPlan{})
	mkdirResentOnce(t, s, f, "after-lost-call")
}

// TestLostReplyAnsweredFromCacheAfterTimeout: the server runs a MKDIR and
// its reply's Send is lost, the connection staying up on both sides.
// After the timeout the client resends the call with the same XID on a
// new connection and the server's duplicate request cache answers it with
// the first execution's reply: no NFS3ERR_EXIST. (Before DefaultTimeout a
// Config without Timeout waited here forever.)
func TestLostReplyAnsweredFromCacheAfterTimeout(t *testing.T) {
	s := startServer(t)
	f := dialRDMAShort(t, s)
	// Sends from now on: the call Mkdir makes first (the parent's
	// attributes) and its reply (1, 2), the MKDIR (3), its reply (4):
	// lost.
	s.fab.SetFaults(softfabric.FaultPlan{LoseSends: 1, LoseSendsAfter: 3})
	defer s.fab.SetFaults(softfabric.FaultPlan{})
	mkdirResentOnce(t, s, f, "once")
}

// TestLostRetriesBounded: with every Send lost, a call fails after
// Retries resends, each after the timeout, with an error saying so.
func TestLostRetriesBounded(t *testing.T) {
	s := startServer(t)
	f := s.dial("rdma", "retries=2&timeout="+shortTimeout.String())
	s.fab.SetFaults(softfabric.FaultPlan{LoseSends: 1 << 30})
	defer s.fab.SetFaults(softfabric.FaultPlan{})
	start := time.Now()
	_, err := f.Stat("nothing-answers")
	took := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat with every Send lost: %v, want a timeout", err)
	}
	if st := f.Stats(); st.Retries != 2 || st.Reconnects != 3 {
		t.Fatalf("stats %+v: want 2 retries, each attempt's connection dropped", st)
	}
	if took < 3*shortTimeout {
		t.Fatalf("failed after %v, before three attempts of %v", took, shortTimeout)
	}
}

// TestDefaultTimeout: a Config without Timeout gets DefaultTimeout (the
// kernel client's timeo), a negative one none; in a URL timeout=0 is
// none and a duration is that duration.
func TestDefaultTimeout(t *testing.T) {
	s := startServer(t)
	for _, c := range []struct {
		extra string
		set   time.Duration // Config.Timeout after ParseURL, replaced when not 0
		want  time.Duration
	}{
		{"", 0, nfsclient.DefaultTimeout},
		{"timeout=0", 0, 0},
		{"timeout=90s", 0, 90 * time.Second},
		{"", -1, 0},
		{"", -time.Second, 0},
	} {
		cfg, err := nfsclient.ParseURL(s.url(c.extra))
		if err != nil {
			t.Fatal(err)
		}
		if c.set != 0 {
			cfg.Timeout = c.set
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		f, err := nfsclient.DialConfig(ctx, cfg)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got := f.Timeout()
		f.Close()
		if got != c.want {
			t.Errorf("URL %q, Config.Timeout %v: Timeout() %v, want %v", c.extra, c.set, got, c.want)
		}
	}
	if nfsclient.DefaultTimeout != 60*time.Second {
		t.Errorf("DefaultTimeout %v, want the kernel's timeo=600 (60 s)", nfsclient.DefaultTimeout)
	}
}

// blackhole forwards TCP connections to the NFS server until Swallow: from
// then on what the client sends on the connections open then is read and
// dropped (the server vanished without a reset); connections made later
// are forwarded again.
type blackhole struct {
	l    net.Listener
	to   string
	gen  atomic.Int64 // connections accepted before gen are swallowed
	n    atomic.Int64
	wg   sync.WaitGroup
	mu   sync.Mutex
	open []net.Conn
}

func newBlackhole(t *testing.T, to string) *blackhole {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{l: l, to: to}
	b.wg.Add(1)
	go b.serve()
	t.Cleanup(b.close)
	return b
}

func (b *blackhole) serve() {
	defer b.wg.Done()
	for {
		c, err := b.l.Accept()
		if err != nil {
			return
		}
		id := b.n.Add(1)
		d, err := net.Dial("tcp", b.to)
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		b.open = append(b.open, c, d)
		b.mu.Unlock()
		b.wg.Add(2)
		go func() { // server to client
			defer b.wg.Done()
			io.Copy(c, d)
			c.Close()
		}()
		go func() { // client to server, until swallowed
			defer b.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && id > b.gen.Load() {
					if _, err := d.Write(buf[:n]); err != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			d.Close()
		}()
	}
}

// Swallow makes the connections open now go silent.
func (b *blackhole) Swallow() { b.gen.Store(b.n.Load()) }

func (b *blackhole) close() {
	b.l.Close()
	b.mu.Lock()
	for _, c := range b.open {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// TestTCPSilentServerResentAfterTimeout: over TCP the server stops
// reading without closing the connection; after the timeout the client
// sends the call again on a new connection.
func TestTCPSilentServerResentAfterTimeout(t *testing.T) {
	s := startServer(t)
	b := newBlackhole(t, s.cfg.NFSAddr)
	u := fmt.Sprintf("nfs://%s%s?mountport=%d&retries=5&timeout=%v", b.l.Addr(), s.dir, portOf(t, s.cfg.MountAddr), shortTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := nfsclient.Dial(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Mkdir("warm", 0o755); err != nil {
		t.Fatal(err)
	}
	b.Swallow()
	mkdirResentOnce(t, s, f, "after-silence")
}

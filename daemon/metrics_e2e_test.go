package daemon

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/locks"
	"github.com/gonfsrdma/gonfsrdma/metrics"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
)

// metricsDaemon is a daemon serving TCP, RDMA on a software fabric and
// metrics, with the export's root handle.
type metricsDaemon struct {
	d           *Daemon
	fabric      *softfabric.Fabric
	rdmaAddr    string
	dir         string
	exportsFile string
	root        []byte
}

func startMetricsDaemon(t *testing.T) *metricsDaemon {
	t.Helper()
	m := &metricsDaemon{fabric: softfabric.NewFabric(), rdmaAddr: "metrics-daemon:20049"}
	m.dir = filepath.Join(t.TempDir(), "export")
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m.exportsFile = filepath.Join(t.TempDir(), "exports")
	m.writeExports(t, fmt.Sprintf("%s 127.0.0.1(rw,no_root_squash,insecure,fsid=3)\n", m.dir))
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	d, err := Start(context.Background(), log, Config{
		ExportsFile: m.exportsFile, NFSAddr: "127.0.0.1:0", MountAddr: "127.0.0.1:0", NoPortmap: true,
		StateDir: t.TempDir(), RDMAAddr: m.rdmaAddr, RequireRDMA: true, RDMAProvider: m.fabric, RDMACredits: 16,
		MetricsAddr: "127.0.0.1:0", Version: "test-1", Grace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	m.d = d
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	mc := m.dialTCP(t, d.MountAddr().String())
	defer mc.Close()
	if m.root, _, err = mount.Mnt(context.Background(), mc, m.dir); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *metricsDaemon) writeExports(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(m.exportsFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *metricsDaemon) dialTCP(t *testing.T, addr string) *oncrpc.Client {
	t.Helper()
	c, err := oncrpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetCred(oncrpc.NewAuthSys("test", 0, 0))
	return c
}

func (m *metricsDaemon) dialRDMA(t *testing.T, local string) *rdmaclient.Client {
	t.Helper()
	c, err := rdmaclient.Dial(context.Background(), m.fabric, m.rdmaAddr, rdmaclient.Config{
		Cred: oncrpc.NewAuthSys("test", 0, 0), LocalAddr: local,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (m *metricsDaemon) scrape(t *testing.T) *metrics.Snapshot {
	t.Helper()
	s, err := metrics.Scrape(context.Background(), http.DefaultClient, "http://"+m.d.MetricsAddr()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantValue(t *testing.T, s *metrics.Snapshot, want float64, name string, labels ...string) {
	t.Helper()
	if !s.Has(name) {
		t.Errorf("%s is not exported", name)
		return
	}
	if got := s.Value(name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// TestMetricsServerState scrapes a daemon's /metrics and /healthz: the
// connections open per transport, the reload results and the server's
// identity.
func TestMetricsServerState(t *testing.T) {
	m := startMetricsDaemon(t)

	resp, err := http.Get("http://" + m.d.MetricsAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz: %s %q", resp.Status, body)
	}

	// Two NFS connections over TCP and one over RDMA, each having
	// answered a NULL, so the server has admitted them.
	ctx := context.Background()
	for range 2 {
		c := m.dialTCP(t, m.d.NFSAddr().String())
		defer c.Close()
		if err := client.New(c).Null(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rc := m.dialRDMA(t, "127.0.0.1:40001")
	defer rc.Close()
	if err := client.New(rc).Null(ctx); err != nil {
		t.Fatal(err)
	}
	// The MOUNT connection startMetricsDaemon closed may not have been
	// noticed yet: wait for the server to count just the three.
	var s *metrics.Snapshot
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s = m.scrape(t)
		tcp, rdma := s.Value("gonfsrdma_connections", "transport", "tcp"), s.Value("gonfsrdma_connections", "transport", "rdma")
		if tcp == 2 && rdma == 1 || time.Now().After(deadline) {
			break
		}
	}
	wantValue(t, s, 1, "gonfsrdma_build_info", "version", "test-1")
	wantValue(t, s, 1, "gonfsrdma_ready")
	wantValue(t, s, 2, "gonfsrdma_connections", "transport", "tcp")
	wantValue(t, s, 1, "gonfsrdma_connections", "transport", "rdma")
	wantValue(t, s, 0, "gonfsrdma_exports_reloads_total", "result", "ok")
	wantValue(t, s, 0, "gonfsrdma_nlm_locks_held")
	wantValue(t, s, 0, "gonfsrdma_nlm_locks_blocked")
	if !s.Has("gonfsrdma_nlm_grace_active") || !s.Has("gonfsrdma_exports_last_reload_success_timestamp_seconds") {
		t.Error("grace state or last reload time not exported")
	}

	// A reload of a broken file keeps the old table and counts an
	// error; a good one counts ok.
	m.writeExports(t, m.dir+" 127.0.0.1(rw,bogus_option)\n")
	if err := m.d.Reload(); err == nil {
		t.Fatal("reload of a broken exports file succeeded")
	}
	m.writeExports(t, fmt.Sprintf("%s 127.0.0.1(rw,no_root_squash,insecure,fsid=3)\n", m.dir))
	if err := m.d.Reload(); err != nil {
		t.Fatal(err)
	}
	// A lock held and a request blocked behind it, straight in the
	// daemon's lock table.
	tab := m.d.nlm.Table()
	owner := func(h string) locks.Owner { return locks.Owner{Host: h, SVID: 1, OH: h} }
	if st, _, err := tab.Lock("f", locks.Lock{Owner: owner("a"), Exclusive: true, End: locks.MaxOffset}, false, nil, nil); err != nil || st != locks.Granted {
		t.Fatalf("lock: %v %v", st, err)
	}
	if st, _, err := tab.Lock("f", locks.Lock{Owner: owner("b"), Exclusive: true, End: locks.MaxOffset}, true, "b", nil); err != nil || st != locks.Blocked {
		t.Fatalf("blocked lock: %v %v", st, err)
	}
	defer func() {
		// Cancel the waiter first: a grant would call back host "b".
		tab.Cancel("f", locks.Lock{Owner: owner("b"), Exclusive: true, End: locks.MaxOffset})
		tab.Unlock("f", owner("a"), 0, locks.MaxOffset)
	}()
	s = m.scrape(t)
	wantValue(t, s, 1, "gonfsrdma_exports_reloads_total", "result", "ok")
	wantValue(t, s, 1, "gonfsrdma_exports_reloads_total", "result", "error")
	wantValue(t, s, 1, "gonfsrdma_nlm_locks_held")
	wantValue(t, s, 1, "gonfsrdma_nlm_locks_blocked")
}

// TestHealthDown checks that readiness drops when a listener fails or
// the RDMA listener stops.
func TestHealthDown(t *testing.T) {
	var h health
	if h.ready(nil) {
		t.Fatal("ready before start")
	}
	h.up.Store(true)
	svc := &rdmaService{done: make(chan struct{})}
	if !h.ready(svc) {
		t.Fatal("not ready with every listener up")
	}
	close(svc.done)
	if h.ready(svc) {
		t.Fatal("ready after the RDMA listener stopped")
	}
	h.failed.Store(true)
	if h.ready(nil) {
		t.Fatal("ready after a listener failed")
	}
}

// runMetricsWorkload creates a file and writes and reads it over TCP
// and over RDMA, so that every family the daemon exports has samples.
func runMetricsWorkload(t *testing.T, m *metricsDaemon) {
	t.Helper()
	ctx := context.Background()
	tc := m.dialTCP(t, m.d.NFSAddr().String())
	defer tc.Close()
	rc := m.dialRDMA(t, "127.0.0.1:40002")
	defer rc.Close()
	cr, err := client.New(tc).Create(ctx, m.root, "workload", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []oncrpc.Caller{tc, rc} {
		nc := client.New(c)
		if _, err := nc.Write(ctx, cr.FH.FH, 0, make([]byte, 8192), wire.FileSync); err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Read(ctx, cr.FH.FH, 0, 8192); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMetricsWorkloadCounts runs a known workload over TCP and over
// RPC-over-RDMA on the software fabric and checks the exact counts the
// daemon's /metrics reports: calls by procedure and status, latency
// observations, NFS data bytes per export and transport, RPC bytes per
// transport, and the duplicate request cache.
func TestMetricsWorkloadCounts(t *testing.T) {
	m := startMetricsDaemon(t)
	ctx := context.Background()
	tc := m.dialTCP(t, m.d.NFSAddr().String())
	defer tc.Close()
	nt := client.New(tc)
	cr, err := nt.Create(ctx, m.root, "f", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil || !cr.FH.Set {
		t.Fatalf("CREATE: %v %+v", err, cr)
	}
	fh := cr.FH.FH
	small := bytes.Repeat([]byte("tcp!"), 25000) // 100,000 bytes
	if _, err := nt.Write(ctx, fh, 0, small, wire.FileSync); err != nil {
		t.Fatal(err)
	}
	if res, err := nt.Read(ctx, fh, 0, uint32(len(small))); err != nil || !bytes.Equal(res.Data, small) {
		t.Fatalf("READ over TCP: %v", err)
	}
	for range 3 {
		if _, err := nt.Getattr(ctx, fh); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nt.Lookup(ctx, m.root, "missing"); client.StatusOf(err) != wire.ErrNoEnt {
		t.Fatalf("LOOKUP of a missing name: %v", err)
	}

	rc := m.dialRDMA(t, "127.0.0.1:40003")
	defer rc.Close()
	nr := client.New(rc)
	big := bytes.Repeat([]byte("rdma"), 1<<18) // 1 MiB
	if _, err := nr.Write(ctx, fh, uint64(len(small)), big, wire.Unstable); err != nil {
		t.Fatal(err)
	}
	if res, err := nr.Read(ctx, fh, uint64(len(small)), uint32(len(big))); err != nil || !bytes.Equal(res.Data, big) {
		t.Fatalf("READ over RDMA: %v", err)
	}
	for range 2 {
		if _, err := nr.Getattr(ctx, fh); err != nil {
			t.Fatal(err)
		}
	}
	// 50 files with long names, so that a READDIR of the root is too
	// large to answer inline (4 KiB): it goes back in the Reply chunk.
	for i := range 50 {
		if _, err := nr.Create(ctx, m.root, fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 96)), wire.CreateHow{Mode: wire.Unchecked}); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := nr.Readdir(ctx, m.root, 0, [wire.CookieVerfSize]byte{}, 64<<10)
	if err != nil || len(rd.Entries) != 53 || !rd.EOF {
		t.Fatalf("READDIR over RDMA: %v, %d entries", err, len(rd.Entries))
	}

	s := m.scrape(t)
	nfs := func(proc, status string) []string {
		return []string{"program", "nfs", "version", "3", "procedure", proc, "status", status}
	}
	calls := "gonfsrdma_rpc_calls_total"
	wantValue(t, s, 51, calls, nfs("CREATE", "NFS3_OK")...)
	wantValue(t, s, 1, calls, nfs("READDIR", "NFS3_OK")...)
	wantValue(t, s, 2, calls, nfs("WRITE", "NFS3_OK")...)
	wantValue(t, s, 2, calls, nfs("READ", "NFS3_OK")...)
	wantValue(t, s, 5, calls, nfs("GETATTR", "NFS3_OK")...)
	wantValue(t, s, 1, calls, nfs("LOOKUP", "NFS3ERR_NOENT")...)
	wantValue(t, s, 62, calls, "program", "nfs")
	wantValue(t, s, 1, calls, "program", "mount", "procedure", "MOUNTPROC3_MNT", "status", "MNT3_OK")
	// One call in 16 is timed, picked by XID ((xid ^ xid>>4) % 16 == 0):
	// the 50 CREATEs over RDMA had consecutive XIDs, and any 50
	// consecutive XIDs hold 2 to 4 such (matches are 17 apart, 1 apart
	// where bits 8 and up change), plus maybe the CREATE over TCP.
	if n := s.Value("gonfsrdma_rpc_call_duration_seconds", "program", "nfs", "procedure", "CREATE"); n < 2 || n > 5 {
		t.Errorf("CREATE latency observations %v for 51 calls, want 2 to 5", n)
	}

	data := "gonfsrdma_nfs_bytes_total"
	wantValue(t, s, float64(len(small)), data, "export", m.dir, "transport", "tcp", "op", "write")
	wantValue(t, s, float64(len(small)), data, "export", m.dir, "transport", "tcp", "op", "read")
	wantValue(t, s, float64(len(big)), data, "export", m.dir, "transport", "rdma", "op", "write")
	wantValue(t, s, float64(len(big)), data, "export", m.dir, "transport", "rdma", "op", "read")

	// RPC bytes: the data plus headers (each message well under 1 KiB
	// of them: 7 calls over TCP with MNT, 4 over RDMA).
	rpc := "gonfsrdma_rpc_bytes_total"
	for _, c := range []struct {
		transport, dir string
		data, calls    int
	}{{"tcp", "in", len(small), 7}, {"tcp", "out", len(small), 7}, {"rdma", "in", len(big), 55}, {"rdma", "out", len(big) + 50*100, 55}} {
		got := s.Value(rpc, "transport", c.transport, "direction", c.dir)
		if got <= float64(c.data) || got > float64(c.data+c.calls*1024) {
			t.Errorf("%s{%s,%s} = %v, want the %d data bytes plus at most 1 KiB a message", rpc, c.transport, c.dir, got, c.data)
		}
	}
	// Every NFS call above names a handle the open-file cache holds
	// (the root, or the file CREATE cached): at least 10 hits (LOOKUP of
	// a missing name resolves only its directory), no miss.
	if hits := s.Value("gonfsrdma_vfs_open_file_cache_hits_total", "export", m.dir); hits < 10 {
		t.Errorf("open-file cache hits %v, want at least 10", hits)
	}
	wantValue(t, s, 0, "gonfsrdma_vfs_open_file_cache_misses_total", "export", m.dir)
	// RDMA: the WRITE's data came in one Read chunk, the READ's went
	// out in one Write chunk, READDIR offered the only Reply chunk and
	// its reply used it; every other call and reply was inline.
	wantValue(t, s, 1, "gonfsrdma_rdma_chunks_total", "kind", "read")
	wantValue(t, s, 1, "gonfsrdma_rdma_chunks_total", "kind", "write")
	wantValue(t, s, 1, "gonfsrdma_rdma_chunks_total", "kind", "reply")
	wantValue(t, s, 1, "gonfsrdma_rdma_reply_chunk_replies_total")
	wantValue(t, s, float64(len(big)), "gonfsrdma_rdma_bytes_total", "method", "rdma_read")
	// RDMA Writes: the READ data and the READDIR reply (53 entries, 50 of
	// more than 100 bytes: over the inline 4 KiB, within 16 KiB).
	if w := s.Value("gonfsrdma_rdma_bytes_total", "method", "rdma_write") - float64(len(big)); w < 50*100 || w > 16<<10 {
		t.Errorf("RDMA Write bytes beyond the READ data: %v, want the READDIR reply", w)
	}
	for _, method := range []string{"inline_recv", "inline_send"} {
		// 55 messages each way of at most 4 KiB inline, at least 28 bytes.
		if v := s.Value("gonfsrdma_rdma_bytes_total", "method", method); v < 55*28 || v > 55*4096 {
			t.Errorf("%s bytes %v for 55 messages", method, v)
		}
	}
	wantValue(t, s, 16, "gonfsrdma_rdma_credits_granted") // one connection open
	// A slot is released when its reply's Send completes, which may be
	// just after the client has the reply: in use drains to 0.
	for deadline := time.Now().Add(5 * time.Second); m.scrape(t).Value("gonfsrdma_rdma_credits_in_use") != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("RDMA credits still in use with no call in progress")
		}
	}
	wantValue(t, s, 0, "gonfsrdma_rdma_qp_errors_total")
	if s.Value("gonfsrdma_rdma_registered_bytes") <= 0 {
		t.Error("no registered memory reported with a connection open")
	}
	// The 51 CREATEs are the only non-idempotent calls: misses, nothing replayed.
	wantValue(t, s, 51, "gonfsrdma_drc_misses_total")
	wantValue(t, s, 0, "gonfsrdma_drc_hits_total")
}

// nullFrom sends one NFS NULL call over a new TCP connection from local
// address from and reads the reply.
func nullFrom(t *testing.T, server string, from netip.Addr) {
	t.Helper()
	dialer := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), Timeout: 5 * time.Second}
	c, err := dialer.Dial("tcp", server)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := oncrpc.AppendCallHeader(nil, &oncrpc.CallHeader{XID: 1, Prog: 100003, Vers: 3, Proc: 0})
	rec := binary.BigEndian.AppendUint32(nil, 1<<31|uint32(len(msg)))
	if _, err := c.Write(append(rec, msg...)); err != nil {
		t.Fatal(err)
	}
	var mark [4]byte
	if _, err := io.ReadFull(c, mark[:]); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, binary.BigEndian.Uint32(mark[:])&^(1<<31))
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsClientCardinality connects from 1,000 loopback addresses
// (127.1.0.1 and up) and checks that the per-client families still have
// one series per top client only, that the busiest address leads, and
// that the table remembers every address within its bound.
func TestMetricsClientCardinality(t *testing.T) {
	m := startMetricsDaemon(t)
	runMetricsWorkload(t, m) // 127.0.0.1 is the busiest by far
	for i := range 1000 {
		nullFrom(t, m.d.NFSAddr().String(), netip.AddrFrom4([4]byte{127, 1, byte(i / 250), byte(i%250 + 1)}))
	}
	s := m.scrape(t)
	for _, fam := range []string{"gonfsrdma_client_calls_total", "gonfsrdma_client_bytes_total"} {
		clients := make(map[string]bool)
		for c := range s.By(fam, "client") {
			clients[c] = true
		}
		if len(clients) != 10 {
			t.Errorf("%s has series for %d clients, want the top 10", fam, len(clients))
		}
		if !clients["127.0.0.1"] {
			t.Errorf("%s: the busiest client 127.0.0.1 is not among %v", fam, clients)
		}
	}
	if n := s.Series("gonfsrdma_client_bytes_total"); n != 20 {
		t.Errorf("gonfsrdma_client_bytes_total has %d series, want 20 (10 clients, in and out)", n)
	}
	wantValue(t, s, 1001, "gonfsrdma_clients_known")
	// The 1,000 moved the same bytes (one NULL each): ties go to the
	// lowest addresses, so the top 10 are 127.0.0.1 and 127.1.0.1-9.
	for i := 1; i <= 9; i++ {
		wantValue(t, s, 1, "gonfsrdma_client_calls_total", "client", fmt.Sprintf("127.1.0.%d", i))
	}
}

// TestMetricsRDMAFailure breaks an RDMA connection with a bad rkey (the
// server's RDMA Read of a WRITE's data fails with a remote access
// error) and checks the QP error, the disconnect and the credits
// returned.
func TestMetricsRDMAFailure(t *testing.T) {
	m := startMetricsDaemon(t)
	rc := m.dialRDMA(t, "127.0.0.1:40004")
	defer rc.Close()
	nc := client.New(rc)
	ctx := context.Background()
	cr, err := nc.Create(ctx, m.root, "f", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	if s := m.scrape(t); s.Value("gonfsrdma_rdma_credits_granted") != 16 || s.Value("gonfsrdma_rdma_disconnects_total") != 0 {
		t.Fatalf("before the fault: granted %v, disconnects %v", s.Value("gonfsrdma_rdma_credits_granted"), s.Value("gonfsrdma_rdma_disconnects_total"))
	}
	m.fabric.SetFaults(softfabric.FaultPlan{CorruptRKeys: 1})
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := nc.Write(wctx, cr.FH.FH, 0, make([]byte, 64<<10), wire.Unstable); err == nil {
		t.Fatal("WRITE succeeded although the server's RDMA Read had a bad rkey")
	}
	m.fabric.SetFaults(softfabric.FaultPlan{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := m.scrape(t)
		if s.Value("gonfsrdma_rdma_disconnects_total") == 1 {
			wantValue(t, s, 1, "gonfsrdma_rdma_qp_errors_total")
			wantValue(t, s, 0, "gonfsrdma_rdma_credits_granted")
			wantValue(t, s, 0, "gonfsrdma_rdma_credits_in_use")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no disconnect counted: %v", s.By("gonfsrdma_rdma_disconnects_total", ""))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsLockStatuses checks that NLM and NSM calls are counted by
// the status their results carry (nlm4_stats after the cookie, NSM's
// res), over TCP: a lock granted, a conflicting one and a TEST denied, an
// unlock granted, and one SM_STAT of each result.
func TestMetricsLockStatuses(t *testing.T) {
	m := startMetricsDaemon(t)
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); m.d.nsm.InGrace(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the grace period does not end")
		}
	}
	tc := m.dialTCP(t, m.d.NFSAddr().String())
	defer tc.Close()
	cr, err := client.New(tc).Create(ctx, m.root, "locked", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil || !cr.FH.Set {
		t.Fatal(err)
	}
	fh := cr.FH.FH
	lc := m.dialTCP(t, fmt.Sprintf("127.0.0.1:%d", m.d.NLMPort()))
	defer lc.Close()
	lock := func(owner string) *nlm.LockArgs {
		return &nlm.LockArgs{Cookie: []byte("cookie-" + owner), Exclusive: true, State: 1,
			Lock: nlm.Lock{CallerName: owner, FH: fh, OH: []byte(owner), SVID: 1, Length: 10}}
	}
	if res, err := nlm.CallLock(ctx, lc, nlm.Vers4, nlm.ProcLock, lock("a")); err != nil || res.Stat != nlm.Granted {
		t.Fatalf("LOCK: %v %v", res.Stat, err)
	}
	if res, err := nlm.CallLock(ctx, lc, nlm.Vers4, nlm.ProcLock, lock("b")); err != nil || res.Stat != nlm.Denied {
		t.Fatalf("conflicting LOCK: %v %v", res.Stat, err)
	}
	b := lock("b")
	if res, err := nlm.CallTest(ctx, lc, nlm.Vers4, &nlm.TestArgs{Cookie: b.Cookie, Exclusive: true, Lock: b.Lock}); err != nil || res.Stat != nlm.Denied {
		t.Fatalf("TEST: %v %v", res.Stat, err)
	}
	a := lock("a")
	if res, err := nlm.CallUnlock(ctx, lc, nlm.Vers4, &nlm.UnlockArgs{Cookie: a.Cookie, Lock: a.Lock}); err != nil || res.Stat != nlm.Granted {
		t.Fatalf("UNLOCK: %v %v", res.Stat, err)
	}
	sc := m.dialTCP(t, fmt.Sprintf("127.0.0.1:%d", m.d.NSMPort()))
	defer sc.Close()
	for _, name := range []string{"client.example", ""} {
		if _, err := nsm.Call(ctx, sc, nsm.ProcStat, (&nsm.Name{MonName: name}).Append(nil)); err != nil {
			t.Fatalf("SM_STAT %q: %v", name, err)
		}
	}
	s := m.scrape(t)
	calls := "gonfsrdma_rpc_calls_total"
	wantValue(t, s, 1, calls, "program", "nlockmgr", "version", "4", "procedure", "NLM_LOCK", "status", "NLM4_GRANTED")
	wantValue(t, s, 1, calls, "program", "nlockmgr", "version", "4", "procedure", "NLM_LOCK", "status", "NLM4_DENIED")
	wantValue(t, s, 1, calls, "program", "nlockmgr", "version", "4", "procedure", "NLM_TEST", "status", "NLM4_DENIED")
	wantValue(t, s, 1, calls, "program", "nlockmgr", "version", "4", "procedure", "NLM_UNLOCK", "status", "NLM4_GRANTED")
	wantValue(t, s, 1, calls, "program", "status", "version", "1", "procedure", "SM_STAT", "status", "STAT_SUCC")
	wantValue(t, s, 1, calls, "program", "status", "version", "1", "procedure", "SM_STAT", "status", "STAT_FAIL")
	if got := s.Value(calls, "program", "nlockmgr", "version", "4", "procedure", "NLM_LOCK", "status", "SUCCESS"); got != 0 {
		t.Errorf("NLM_LOCK counted as SUCCESS %v times", got)
	}
}

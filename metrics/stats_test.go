package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// exposition is a scrape as the server writes it, in the text format.
const exposition = `# TYPE gonfsrdma_build_info gauge
gonfsrdma_build_info{version="1.2.3"} 1
# TYPE gonfsrdma_ready gauge
gonfsrdma_ready 1
# TYPE gonfsrdma_rpc_calls_total counter
gonfsrdma_rpc_calls_total{program="nfs",version="3",procedure="GETATTR",status="NFS3_OK"} %GETATTR%
gonfsrdma_rpc_calls_total{program="nfs",version="3",procedure="LOOKUP",status="NFS3_OK"} 20
gonfsrdma_rpc_calls_total{program="nfs",version="3",procedure="LOOKUP",status="NFS3ERR_NOENT"} 5
gonfsrdma_rpc_calls_total{program="mount",version="3",procedure="MNT",status="MNT3_OK"} 1
gonfsrdma_rpc_calls_total{program="nlockmgr",version="4",procedure="NLM_LOCK",status="NLM4_GRANTED"} 3
gonfsrdma_rpc_calls_total{program="nlockmgr",version="4",procedure="NLM_LOCK",status="NLM4_DENIED"} 1
gonfsrdma_rpc_calls_total{program="status",version="1",procedure="SM_STAT",status="STAT_SUCC"} 2
# TYPE gonfsrdma_rpc_call_duration_seconds histogram
gonfsrdma_rpc_call_duration_seconds_bucket{program="nfs",version="3",procedure="GETATTR",le="1e-05"} 75
gonfsrdma_rpc_call_duration_seconds_bucket{program="nfs",version="3",procedure="GETATTR",le="+Inf"} 75
gonfsrdma_rpc_call_duration_seconds_sum{program="nfs",version="3",procedure="GETATTR"} 0.0006
gonfsrdma_rpc_call_duration_seconds_count{program="nfs",version="3",procedure="GETATTR"} 75
# TYPE gonfsrdma_connections gauge
gonfsrdma_connections{transport="tcp"} 2
gonfsrdma_connections{transport="rdma"} 1
# TYPE gonfsrdma_rpc_bytes_total counter
gonfsrdma_rpc_bytes_total{transport="tcp",direction="in"} %TCPIN%
gonfsrdma_rpc_bytes_total{transport="tcp",direction="out"} 2048
gonfsrdma_rpc_bytes_total{transport="rdma",direction="in"} 1048576
gonfsrdma_rpc_bytes_total{transport="rdma",direction="out"} 300
# TYPE gonfsrdma_rdma_chunks_total counter
gonfsrdma_rdma_chunks_total{kind="read"} 3
gonfsrdma_rdma_chunks_total{kind="write"} 4
gonfsrdma_rdma_chunks_total{kind="reply"} 1
# TYPE gonfsrdma_rdma_bytes_total counter
gonfsrdma_rdma_bytes_total{method="rdma_read"} 3145728
gonfsrdma_rdma_bytes_total{method="rdma_write"} %RDMAWRITE%
gonfsrdma_rdma_bytes_total{method="inline_recv"} 2000
gonfsrdma_rdma_bytes_total{method="inline_send"} 1000
# TYPE gonfsrdma_rdma_reply_chunk_replies_total counter
gonfsrdma_rdma_reply_chunk_replies_total 1
# TYPE gonfsrdma_rdma_credits_granted gauge
gonfsrdma_rdma_credits_granted 64
# TYPE gonfsrdma_rdma_credits_in_use gauge
gonfsrdma_rdma_credits_in_use 3
# TYPE gonfsrdma_rdma_registered_bytes gauge
gonfsrdma_rdma_registered_bytes 8388608
# TYPE gonfsrdma_rdma_qp_errors_total counter
gonfsrdma_rdma_qp_errors_total 0
# TYPE gonfsrdma_rdma_disconnects_total counter
gonfsrdma_rdma_disconnects_total 2
# TYPE gonfsrdma_client_calls_total counter
gonfsrdma_client_calls_total{client="10.0.0.2"} 60
gonfsrdma_client_calls_total{client="10.0.0.1"} 41
# TYPE gonfsrdma_client_bytes_total counter
gonfsrdma_client_bytes_total{client="10.0.0.1",direction="in"} 1048576
gonfsrdma_client_bytes_total{client="10.0.0.1",direction="out"} 300
gonfsrdma_client_bytes_total{client="10.0.0.2",direction="in"} 1024
gonfsrdma_client_bytes_total{client="10.0.0.2",direction="out"} 2048
# TYPE gonfsrdma_clients_known gauge
gonfsrdma_clients_known 2
# TYPE gonfsrdma_drc_entries gauge
gonfsrdma_drc_entries 7
# TYPE gonfsrdma_nlm_grace_active gauge
gonfsrdma_nlm_grace_active 1
`

func snapshot(t *testing.T, getattr, tcpIn string, at time.Time) *Snapshot {
	t.Helper()
	text := strings.NewReplacer("%GETATTR%", getattr, "%TCPIN%", tcpIn, "%RDMAWRITE%", tcpIn+"000").Replace(exposition)
	s, err := ParseSnapshot(strings.NewReader(text), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWriteStats(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	prev := snapshot(t, "55", "0", at.Add(-2*time.Second))
	cur := snapshot(t, "75", "1024", at)
	var b strings.Builder
	if err := WriteStats(&b, cur, prev, ViewOptions{TopClients: 1}); err != nil {
		t.Fatal(err)
	}
	want := `gonfsrdma 1.2.3, ready, at 2026-12-01 12:00:00 UTC, rates over 2.0s

mount v3: 1 calls
  procedure  calls       %   /s  errors  mean
        MNT      1  100.0%  0.0       0     -

nfs v3: 100 calls
  procedure  calls      %    /s  errors   mean
    GETATTR     75  75.0%  10.0       0  8.0µs
     LOOKUP     25  25.0%   0.0       5      -

nlockmgr v4: 4 calls
  procedure  calls       %   /s  errors  mean
   NLM_LOCK      4  100.0%  0.0       1     -

status v1: 2 calls
  procedure  calls       %   /s  errors  mean
    SM_STAT      2  100.0%  0.0       0     -

transports:
  transport  conns   RPC in  RPC out   in/s  out/s
       rdma      1  1.0 MiB    300 B    0 B    0 B
        tcp      2  1.0 KiB  2.0 KiB  512 B    0 B

rdma: chunks read 3, write 4, reply 1 (1 replies through a Reply chunk)
         RDMA Read  RDMA Write  inline in  inline out
  bytes    3.0 MiB  1000.0 KiB    2.0 KiB      1000 B
     /s        0 B   500.0 KiB        0 B         0 B
credits in use 3 of 64 granted, registered 8.0 MiB, QP errors 0, disconnects 2

clients: 2 known; busiest by bytes:
    client  calls   /s       in    out
  10.0.0.1     41  0.0  1.0 MiB  300 B

server: DRC entries 7, grace ON (reclaims only)
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	// One scrape: no rates.
	b.Reset()
	if err := WriteStats(&b, cur, nil, ViewOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "rates over") || !strings.Contains(b.String(), "    GETATTR     75  75.0%   -       0  8.0µs\n") {
		t.Errorf("single scrape:\n%s", b.String())
	}
}

func TestParseSnapshotRejects(t *testing.T) {
	for _, bad := range []string{"gonfsrdma_x{a=\"b} 1\n", "# TYPE x counter\nx abc\n"} {
		if _, err := ParseSnapshot(strings.NewReader(bad), time.Now()); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestScrapeStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusNotFound)
	}))
	defer srv.Close()
	if _, err := Scrape(t.Context(), srv.Client(), srv.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("scrape of a 404: %v", err)
	}
}

func TestHealthz(t *testing.T) {
	ready := false
	r := NewRegistry(Sources{Version: "v", Ready: func() bool { return ready }})
	h := r.Handler(zap.NewNop())
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("not ready: %d", code)
	}
	ready = true
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("ready: %d %q", code, body)
	}
	code, body := get("/metrics")
	if code != http.StatusOK || !strings.Contains(body, "gonfsrdma_ready 1\n") || !strings.Contains(body, `gonfsrdma_build_info{version="v"} 1`) {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, _ := get("/other"); code != http.StatusNotFound {
		t.Fatalf("/other: %d", code)
	}
}

// FuzzStats feeds arbitrary scrapes to the parser and the view: an
// error or a view, never a panic.
func FuzzStats(f *testing.F) {
	f.Add(exposition)
	f.Add("# TYPE gonfsrdma_rpc_calls_total counter\ngonfsrdma_rpc_calls_total{procedure=\"\"} -1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSnapshot(strings.NewReader(text), time.Unix(10, 0))
		if err != nil {
			return
		}
		if err := WriteStats(io.Discard, s, s, ViewOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

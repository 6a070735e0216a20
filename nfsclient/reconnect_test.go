package nfsclient_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// TestRestart: the server restarts between UNSTABLE WRITEs and their
// COMMIT. The client reconnects, keeps using the same file handles, sees
// the new write verifier and writes the uncommitted data again.
func TestRestart(t *testing.T) {
	s := startServer(t)
	f := s.dial("tcp", "bs=64K&retries=20")
	data := pattern(1<<20+5, 5)
	w, err := f.Create("r.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	s.restart()
	if err := w.Sync(); err != nil {
		t.Fatalf("Sync after the restart: %v", err)
	}
	st := f.Stats()
	if st.Reconnects < 1 || st.Resends != 1 || st.ResentBytes != int64(len(data)) {
		t.Fatalf("stats %+v: want a reconnect and one re-send of %d bytes", st, len(data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(s.dir, "r.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file after restart: %d bytes, %v", len(got), err)
	}
	// Same handles: the open file keeps working across another restart.
	r, err := f.OpenFile("r.bin", nfsclient.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s.restart()
	p := make([]byte, 1000)
	if _, err := r.ReadAt(p, 4096); err != nil || !bytes.Equal(p, data[4096:5096]) {
		t.Fatalf("ReadAt on the old handle after a restart: %v", err)
	}
}

// TestServerDown: with retries=0 a call to a stopped server fails at
// once; with retries it succeeds once the server is back.
func TestServerDown(t *testing.T) {
	s := startServer(t)
	f := s.dial("tcp", "retries=0")
	g := s.dial("tcp", "retries=30")
	if _, err := f.Stat("."); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if _, err := f.Stat("."); err == nil {
		t.Fatal("a call to the stopped server succeeded")
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.Stat(".")
		done <- err
	}()
	// Start the server only once the call has failed and gone into its
	// retries: a fixed sleep could end before a loaded machine ran its
	// first attempt, which would then meet the server up and retry never.
	for deadline := time.Now().Add(10 * time.Second); g.Stats().Retries == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call to the stopped server did not fail into a retry")
		}
	}
	s.start()
	if err := <-done; err != nil {
		t.Fatalf("a call retried until the server was back: %v", err)
	}
	if st := g.Stats(); st.Retries == 0 {
		t.Fatalf("stats %+v: no retry counted", st)
	}
}

// TestContextTimeout: a context bounds calls; a server that does not
// answer makes the call fail with the context's error.
func TestContextTimeout(t *testing.T) {
	s := startServer(t)
	f := s.dial("tcp", "retries=0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	if _, err := f.WithContext(ctx).Stat("."); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stat with an expired context: %v", err)
	}
	if _, err := f.Stat("."); err != nil {
		t.Fatalf("the FS without that context: %v", err)
	}
}

func TestFallbackTCP(t *testing.T) {
	s := startServer(t)
	cfg, err := nfsclient.ParseURL(s.url("proto=rdma&fallback=tcp"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RDMA = nfsclient.RDMAOptions{Provider: s.fab, Addr: "fabric-nobody:1"}
	f, err := nfsclient.DialConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Proto() != nfsclient.ProtoTCP || f.FallbackReason() == nil {
		t.Fatalf("proto %s, reason %v: want a fallback to tcp", f.Proto(), f.FallbackReason())
	}
	if _, err := f.Stat("."); err != nil {
		t.Fatal(err)
	}
	cfg.FallbackTCP = false
	if f, err := nfsclient.DialConfig(context.Background(), cfg); err == nil {
		f.Close()
		t.Fatal("RDMA to nowhere without fallback succeeded")
	}
}

func TestParseURL(t *testing.T) {
	cfg, err := nfsclient.ParseURL("nfs://srv:2050/export/dir?proto=rdma&fallback=tcp&mountport=20048&uid=5&gid=6&gids=7,8&machine=m&nconnect=4&bs=256K&depth=16&retries=3&timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	want := nfsclient.Config{Host: "srv", Path: "/export/dir", Proto: nfsclient.ProtoRDMA, FallbackTCP: true, Port: 2050,
		MountPort: 20048, UID: 5, GID: 6, GIDs: []uint32{7, 8}, Machine: "m", NConnect: 4, BlockSize: 256 << 10,
		Depth: 16, Retries: 3, Timeout: 2 * time.Second}
	if cfg.String() != want.String() || cfg.UID != 5 || cfg.GID != 6 || len(cfg.GIDs) != 2 || cfg.NConnect != 4 ||
		cfg.BlockSize != 256<<10 || cfg.Depth != 16 || cfg.Retries != 3 || cfg.Timeout != 2*time.Second || cfg.Machine != "m" {
		t.Fatalf("parsed %+v", cfg)
	}
	for _, bad := range []string{
		"http://srv/x", "nfs:///x", "nfs://srv/x?proto=udp", "nfs://srv/x?fallback=udp", "nfs://srv/x?nconnect=0",
		"nfs://srv/x?nconnect=17", "nfs://srv/x?bs=1", "nfs://srv/x?bogus=1", "nfs://srv/x?uid=-1",
		"nfs://srv/x?timeout=-1s", "nfs://srv/x#frag", "nfs://u@srv/x", "nfs://srv:0/x", "nfs://srv/x?uid=1&uid=2",
	} {
		if _, err := nfsclient.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}

func TestSubpathAndNConnect(t *testing.T) {
	s := startServer(t)
	if err := os.MkdirAll(filepath.Join(s.dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(s.dir, "a", "b", "f"), []byte("x"), 0o644)
	cfg, err := nfsclient.ParseURL(s.url("nconnect=4"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path += "/a/b/f"
	f, err := nfsclient.DialConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Export() != s.dir || f.Subpath() != "a/b/f" {
		t.Fatalf("export %q subpath %q", f.Export(), f.Subpath())
	}
	for i := 0; i < 8; i++ {
		if b, err := f.ReadFile(f.Subpath()); err != nil || string(b) != "x" {
			t.Fatalf("ReadFile: %q, %v", b, err)
		}
	}
}

package nfsclient_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfsclient"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// TestDialExplicitExport: export= names the export to MOUNT; the rest of
// the URL's path is walked below it.
func TestDialExplicitExport(t *testing.T) {
	s := startServer(t)
	if err := os.MkdirAll(filepath.Join(s.dir, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "sub", "deeper", "f"), []byte("below the export\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := fmt.Sprintf("nfs://127.0.0.1:%d%s/sub/deeper?mountport=%d&export=%s",
		portOf(t, s.cfg.NFSAddr), s.dir, portOf(t, s.cfg.MountAddr), s.dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := nfsclient.Dial(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Export() != s.dir || f.Subpath() != "sub/deeper" {
		t.Fatalf("export %q subpath %q, want %q and sub/deeper", f.Export(), f.Subpath(), s.dir)
	}
	fh, err := f.Open(f.Subpath() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(fh)
	fh.Close()
	if err != nil || string(b) != "below the export\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	if _, err := nfsclient.ParseURL("nfs://h/a/b?export=/c"); err == nil {
		t.Fatal("an export that is not a prefix of the path was accepted")
	}
}

// TestDialRefusesServerIgnoringMountPaths: a server that cannot list its
// exports and MOUNTs any path with its root (go-nfs does) would have the
// client put a file named by the URL into the export's root under another
// name; Dial refuses and says to name the export, and with export= it
// MOUNTs that export only.
func TestDialRefusesServerIgnoringMountPaths(t *testing.T) {
	var mounted atomic.Value
	mounted.Store([]string{})
	mnt := func(_ context.Context, call *oncrpc.Call, reply *oncrpc.Reply) error {
		r := xdr.NewReader(call.Args)
		p := r.String(1024)
		if r.Err() != nil {
			return oncrpc.ErrGarbageArgs
		}
		mounted.Store(append(mounted.Load().([]string), p))
		reply.Head = xdr.AppendUint32(reply.Head, 0)                  // MNT3_OK
		reply.Head = xdr.AppendOpaque(reply.Head, []byte("the-root")) // fhandle3
		reply.Head = xdr.AppendUint32(reply.Head, 1)                  // one flavor
		reply.Head = xdr.AppendUint32(reply.Head, 1)                  // AUTH_SYS
		return nil
	}
	prog := &oncrpc.Program{Prog: mount.Prog, Name: "mount", Versions: []oncrpc.Version{{Vers: mount.Vers3, Procs: []oncrpc.Procedure{
		mount.ProcNull: {Name: "NULL", Handler: func(context.Context, *oncrpc.Call, *oncrpc.Reply) error { return nil }, Idempotent: true},
		mount.ProcMnt:  {Name: "MNT", Handler: mnt},
		// EXPORT and the rest: no handler (PROC_UNAVAIL), a listing the
		// client cannot use.
		mount.ProcExport: {Name: "EXPORT"},
	}}}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := oncrpc.NewServer(zap.NewNop(), oncrpc.NewDispatcher(zap.NewNop(), nil, prog), oncrpc.ServerConfig{})
	go srv.ServeTCP(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	port := l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = nfsclient.Dial(ctx, fmt.Sprintf("nfs://127.0.0.1:1/srv/export/new-file?mountport=%d", port))
	if err == nil || !strings.Contains(err.Error(), "?export=") {
		t.Fatalf("Dial against a server that MOUNTs any path: %v, want a refusal naming ?export=", err)
	}
	for _, p := range mounted.Load().([]string) {
		if p == "/srv/export/new-file" {
			t.Fatalf("the URL's path was MOUNTed (%v)", mounted.Load())
		}
	}
	// With the export named, that export is MOUNTed (the NFS port is
	// closed here, so Dial fails afterwards, connecting).
	mounted.Store([]string{})
	nfsclient.Dial(ctx, fmt.Sprintf("nfs://127.0.0.1:1/srv/export/new-file?mountport=%d&export=/srv/export&retries=-1", port))
	if got := mounted.Load().([]string); len(got) != 1 || got[0] != "/srv/export" {
		t.Fatalf("MOUNTed %q, want only the named export", got)
	}
}

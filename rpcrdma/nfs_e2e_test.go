package rpcrdma_test

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/nfstest"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs/softfabric"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/vfstest"
)

const e2eFSID = 0x4242

var e2eSeq atomic.Int32

// openFiler is what both backends report for the leak check.
type openFiler interface {
	vfs.FS
	OpenFiles() int
}

// fabricRig is a running NFS-over-RDMA server on a software fabric.
type fabricRig struct {
	c    *rdmaclient.Client
	root []byte
	rs   *rpcrdma.Server
	fab  *softfabric.Fabric
	fs   *countingFS // nil unless counted
}

// countingFS counts the bytes the backend copies: pread into the
// transport's payload buffer (ReadAt), pwrite from the call buffer into
// the file (WriteAt).
type countingFS struct {
	openFiler
	read, written atomic.Int64
}

func (f *countingFS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	n, eof, err := f.openFiler.ReadAt(h, p, off)
	f.read.Add(int64(n))
	return n, eof, err
}

func (f *countingFS) WriteAt(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	n, err := f.openFiler.WriteAt(c, h, p, off, sync)
	f.written.Add(int64(n))
	return n, err
}

// nfsOverFabric starts the NFS server behind the RDMA transport on a
// fresh software fabric and returns a connected client transport. The
// export is a leak-tracked memory filesystem, or with osBackend a
// temporary directory on the OS backend (the deployment default).
func nfsOverFabric(t testing.TB, log *zap.Logger, osBackend bool) (*rdmaclient.Client, []byte, *rpcrdma.Server) {
	r := startFabricRig(t, log, osBackend, false)
	return r.c, r.root, r.rs
}

// startFabricRig is nfsOverFabric; with count the backend is wrapped in a
// countingFS.
func startFabricRig(t testing.TB, log *zap.Logger, osBackend, count bool) *fabricRig {
	var fs openFiler
	tr := vfstest.NewTrackingFS(memfs.New())
	if osBackend {
		ofs, err := localfs.New(t.TempDir(), localfs.Options{HandleKey: []byte("0123456789abcdef0123456789abcdef")})
		if err != nil {
			t.Fatal(err)
		}
		fs = ofs
	} else {
		mfs, err := billyfs.New(tr, billyfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fs = mfs
	}
	var cfs *countingFS
	if count {
		cfs = &countingFS{openFiler: fs}
		fs = cfs
	}
	srv := nfs.NewServer(nfs.Config{Log: log, Exports: nfs.ExportList{{FSID: e2eFSID, Path: "/export", FS: fs}}})
	disp := oncrpc.NewDispatcher(log, oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program())
	disp.SetCounting(*counting)
	fab := softfabric.NewFabric()
	rs := rpcrdma.NewServer(log, disp, fab, rpcrdma.Config{})
	addr := fmt.Sprintf("fabric-nfs-%d:20049", e2eSeq.Add(1))
	l, err := fab.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rs.Serve(l) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := rdmaclient.Dial(ctx, fab, addr, rdmaclient.Config{Cred: oncrpc.NewAuthSys("nfstest", 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rs.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
		if st := fab.Stats(); st != (softfabric.FabricStats{}) {
			t.Errorf("fabric objects leaked: %+v", st)
		}
		if err := fs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := tr.OpenFiles(); n != 0 {
			t.Errorf("%d files left open: %v", n, tr.OpenNames())
		}
		if n := fs.OpenFiles(); n != 0 {
			t.Errorf("%d backend files left open after Close", n)
		}
	})
	root, ok := srv.RootHandle(e2eFSID)
	if !ok {
		t.Fatal("no root handle")
	}
	return &fabricRig{c: c, root: root, rs: rs, fab: fab, fs: cfs}
}

// TestNFSEndToEnd runs the transport-neutral NFSv3 suite over RPC-over-RDMA
// on the software fabric.
func TestNFSEndToEnd(t *testing.T) {
	nfstest.RunEndToEnd(t, func(t *testing.T) (oncrpc.Caller, []byte) {
		c, root, _ := nfsOverFabric(t, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), false)
		return c, root
	})
}

// NFS benchmarks: the NFS server behind the RDMA transport, a 1 MiB file
// on the OS backend (the memory backend's billy memfs allocates on every
// access). allocs/op counts client, transport, NFS layer and backend
// together. Every reply's nfsstat3 is checked. The per-byte figures are
// counted over the timed calls: copies/B is the bytes the backend copied
// (pread into the payload buffer, pwrite out of the call buffer: a
// counting backend) plus the bytes the transport copied (Stats), per
// payload byte; wire/B is the bytes the fabric moved per payload byte.
// counting is the dispatcher's call counting in the NFS rig: on, as the
// daemon with --metrics-listen; -counting=false as without it.
var counting = flag.Bool("counting", true, "count calls in the dispatcher, as with --metrics-listen")

func benchNFS(b *testing.B, proc uint32, payload int) {
	rig := startFabricRig(b, zap.NewNop(), true, true)
	c, root, rs := rig.c, rig.root, rig.rs
	ctx := context.Background()
	nc := client.New(c)
	res, err := nc.Create(ctx, root, "bench", wire.CreateHow{Mode: wire.Unchecked})
	if err != nil || !res.FH.Set {
		b.Fatal(err)
	}
	fh := res.FH.FH
	data := make([]byte, 1<<20)
	if err := nc.WriteAll(ctx, fh, data); err != nil {
		b.Fatal(err)
	}
	var cc oncrpc.ClientCall
	switch proc {
	case wire.ProcRead:
		cc = oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: proc,
			Args: (&wire.ReadArgs{FH: fh, Count: 1 << 20}).Append(nil), ReplyPayloadMax: 1 << 20}
	case wire.ProcWrite:
		cc = oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: proc,
			Args:    (&wire.WriteArgs{FH: fh, Count: 1 << 20, Stable: wire.Unstable, Data: data}).AppendHead(nil),
			Payload: data}
	default:
		cc = oncrpc.ClientCall{Prog: wire.Program, Vers: wire.Version, Proc: proc, Args: (&wire.GetattrArgs{FH: fh}).Append(nil)}
	}
	dst := make([]byte, 0, 2<<20)
	call := func() {
		res, err := c.CallWith(ctx, &cc, nil, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
		if len(res) < 4 {
			b.Fatalf("%s: %d-byte results", wire.ProcNames[proc], len(res))
		}
		if st := wire.Status(binary.BigEndian.Uint32(res)); st != wire.OK {
			b.Fatalf("%s: %v", wire.ProcNames[proc], st)
		}
	}
	for i := 0; i < 3; i++ {
		call()
	}
	before, movedBefore := rs.Stats().CopiedBytes, rig.fab.Moved()
	backendBefore := rig.fs.read.Load() + rig.fs.written.Load()
	b.ReportAllocs()
	if payload > 0 {
		b.SetBytes(int64(payload))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call()
	}
	b.StopTimer()
	if payload > 0 {
		per := float64(b.N) * float64(payload)
		backend := rig.fs.read.Load() + rig.fs.written.Load() - backendBefore
		b.ReportMetric(float64(backend+rs.Stats().CopiedBytes-before)/per, "copies/B")
		m := rig.fab.Moved()
		moved := m.Send + m.Write + m.Read - movedBefore.Send - movedBefore.Write - movedBefore.Read
		b.ReportMetric(float64(moved)/per, "wire/B")
	}
}

func BenchmarkNFSRead1MiB(b *testing.B)  { benchNFS(b, wire.ProcRead, 1<<20) }
func BenchmarkNFSWrite1MiB(b *testing.B) { benchNFS(b, wire.ProcWrite, 1<<20) }
func BenchmarkNFSGetattr(b *testing.B)   { benchNFS(b, wire.ProcGetattr, 0) }

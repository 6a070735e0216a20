package nfs_test

import (
	"context"
	"flag"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// counting is the dispatcher's call counting in the benchmarks' rig:
// on, as the daemon with --metrics-listen; -counting=false as without it
// (docs/performance.md compares the two).
var counting = flag.Bool("counting", true, "count calls in the dispatcher, as with --metrics-listen")

// dispatchRig runs calls through oncrpc.Dispatcher.Dispatch with a reused
// Call and Reply, as a transport's slot does.
type dispatchRig struct {
	disp  *oncrpc.Dispatcher
	ex    oncrpc.BufferExchange // TCP, payloads from one reused buffer
	call  oncrpc.Call
	reply oncrpc.Reply
	msg   []byte
	root  []byte
	xid   uint32 // the last XID run gave a call
}

func newRig(tb testing.TB, fs vfs.FS) *dispatchRig { return newRigCounting(tb, fs, *counting) }

// newRigCounting is newRig with the dispatcher's counting on or off.
func newRigCounting(tb testing.TB, fs vfs.FS, counting bool) *dispatchRig {
	// As the daemon with --metrics-listen: the export counts its bytes
	// and the connection its client's traffic.
	srv := nfs.NewServer(nfs.Config{Exports: nfs.ExportList{{FSID: testFSID, Path: "/", FS: fs, Stats: new(nfs.ExportStats)}}, Log: zap.NewNop()})
	r := &dispatchRig{
		disp: oncrpc.NewDispatcher(zap.NewNop(), oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program()),
		ex:   oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Remote: netip.MustParseAddrPort("127.0.0.1:700")}},
	}
	r.disp.SetCounting(counting)
	r.disp.OpenConn(&r.ex.From, meter.NewClients(0))
	r.reply = oncrpc.NewReply(make([]byte, 0, 4096))
	r.root, _ = srv.RootHandle(testFSID)
	return r
}

// setCall encodes a call of proc with AUTH_SYS root and args.
func (r *dispatchRig) setCall(proc uint32, args []byte) {
	h := oncrpc.CallHeader{XID: 1, Prog: wire.Program, Vers: wire.Version, Proc: proc, Cred: oncrpc.NewAuthSys("bench", 0, 0)}
	r.msg = append(oncrpc.AppendCallHeader(r.msg[:0], &h), args...)
}

// do dispatches the current call and returns the results after the
// accepted-reply header (24 bytes with AUTH_NONE verifier).
func (r *dispatchRig) do(tb testing.TB) []byte {
	r.ex.Msg = r.msg
	if !r.disp.Dispatch(context.Background(), &r.ex, &r.call, &r.reply) {
		tb.Fatal("no reply")
	}
	return r.reply.Head[24:]
}

func (r *dispatchRig) status(tb testing.TB) wire.Status {
	res := r.do(tb)
	return wire.Status(uint32(res[0])<<24 | uint32(res[1])<<16 | uint32(res[2])<<8 | uint32(res[3]))
}

// mkfile creates a file of size bytes and returns its NFS handle.
func (r *dispatchRig) mkfile(tb testing.TB, fs vfs.FS, size int) []byte {
	h, _, err := fs.Create(vfs.Cred{}, fs.Root(), "f", 0644, false, false, [8]byte{})
	if err != nil {
		tb.Fatal(err)
	}
	if size > 0 {
		if _, err := fs.WriteAt(vfs.Cred{}, h, make([]byte, size), 0, false); err != nil {
			tb.Fatal(err)
		}
	}
	return nfs.HandleFor(&nfs.Export{FSID: testFSID}, h)
}

// benchFS is the OS backend over a temporary directory (pread/pwrite, no
// backend allocations).
func benchFS(b *testing.B) vfs.FS {
	fs, err := localfs.New(b.TempDir(), localfs.Options{HandleKey: testHandleKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Close() })
	return fs
}

func BenchmarkRead1MiB(b *testing.B) {
	fs := benchFS(b)
	r := newRig(b, fs)
	fh := r.mkfile(b, fs, 1<<20)
	r.setCall(wire.ProcRead, (&wire.ReadArgs{FH: fh, Count: 1 << 20}).Append(nil))
	if st := r.status(b); st != wire.OK || len(r.reply.Payload) != 1<<20 {
		b.Fatalf("READ: %v, %d bytes", st, len(r.reply.Payload))
	}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.do(b)
	}
}

func BenchmarkWrite1MiB(b *testing.B) {
	fs := benchFS(b)
	r := newRig(b, fs)
	fh := r.mkfile(b, fs, 0)
	r.setCall(wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 1 << 20, Stable: wire.Unstable, Data: make([]byte, 1<<20)}).Append(nil))
	if st := r.status(b); st != wire.OK {
		b.Fatalf("WRITE: %v", st)
	}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.do(b)
	}
}

// BenchmarkWriteStable64KiB is a 64 KiB overwrite at each stability
// level a client may ask for: the cost of the sync the answer promises.
func BenchmarkWriteStable64KiB(b *testing.B) {
	for _, lv := range []struct {
		name   string
		stable wire.StableHow
	}{{"unstable", wire.Unstable}, {"datasync", wire.DataSync}, {"filesync", wire.FileSync}} {
		b.Run(lv.name, func(b *testing.B) {
			fs := benchFS(b)
			r := newRig(b, fs)
			fh := r.mkfile(b, fs, 64<<10)
			r.setCall(wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 64 << 10, Stable: lv.stable, Data: make([]byte, 64<<10)}).Append(nil))
			if st := r.status(b); st != wire.OK {
				b.Fatalf("WRITE: %v", st)
			}
			b.SetBytes(64 << 10)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.do(b)
			}
		})
	}
}

func BenchmarkGetattr(b *testing.B) {
	fs := benchFS(b)
	r := newRig(b, fs)
	fh := r.mkfile(b, fs, 10)
	r.setCall(wire.ProcGetattr, (&wire.GetattrArgs{FH: fh}).Append(nil))
	if st := r.status(b); st != wire.OK {
		b.Fatalf("GETATTR: %v", st)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.do(b)
	}
}

// flatFS is a one-file backend that allocates nothing, to measure the NFS
// layer alone.
type flatFS struct {
	vfs.FS
	data []byte
}

var flatRoot = vfs.Handle("flatroot")
var flatFile = vfs.Handle("flatfile")

func (f *flatFS) Root() vfs.Handle { return flatRoot }
func (f *flatFS) GetAttr(h vfs.Handle) (vfs.Attr, error) {
	if string(h) == "root" {
		return vfs.Attr{Type: vfs.TypeDir, Mode: 0755, Nlink: 2, FileID: 1}, nil
	}
	return vfs.Attr{Type: vfs.TypeReg, Mode: 0644, Nlink: 1, Size: uint64(len(f.data)), FileID: 2}, nil
}
func (f *flatFS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	if off >= int64(len(f.data)) {
		return 0, true, nil
	}
	n := copy(p, f.data[off:])
	return n, off+int64(n) >= int64(len(f.data)), nil
}
func (f *flatFS) WriteAt(_ vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	return copy(f.data[min(off, int64(len(f.data))):], p), nil
}

// TestZeroAllocs checks that READ, WRITE and GETATTR allocate nothing in
// the NFS layer (dispatcher included) in steady state.
func TestZeroAllocs(t *testing.T) {
	fs := &flatFS{data: make([]byte, 1<<20)}
	r := newRig(t, fs)
	fh := nfs.HandleFor(&nfs.Export{FSID: testFSID}, flatFile)
	calls := []struct {
		name string
		proc uint32
		args []byte
	}{
		{"READ", wire.ProcRead, (&wire.ReadArgs{FH: fh, Offset: 4096, Count: 1 << 20}).Append(nil)},
		{"WRITE", wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 65536, Data: make([]byte, 65536)}).Append(nil)},
		{"GETATTR", wire.ProcGetattr, (&wire.GetattrArgs{FH: fh}).Append(nil)},
		{"ACCESS", wire.ProcAccess, xdr.AppendUint32(wire.AppendFH(nil, fh), wire.AccessAll)},
	}
	for _, c := range calls {
		r.setCall(c.proc, c.args)
		if st := r.status(t); st != wire.OK {
			t.Fatalf("%s: %v", c.name, st)
		}
		if n := testing.AllocsPerRun(50, func() { r.do(t) }); n != 0 {
			t.Errorf("%s: %v allocations per call", c.name, n)
		}
	}
}

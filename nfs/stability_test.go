package nfs_test

import (
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// syncFS is flatFS recording what WRITE and COMMIT asked of storage.
type syncFS struct {
	flatFS
	syncedWrites, unsyncedWrites, commits int
}

func (f *syncFS) WriteAt(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	if sync {
		f.syncedWrites++
	} else {
		f.unsyncedWrites++
	}
	return f.flatFS.WriteAt(c, h, p, off, sync)
}

func (f *syncFS) Commit(vfs.Handle) error {
	f.commits++
	return nil
}

func newRigExport(tb testing.TB, ex *nfs.Export) *dispatchRig {
	srv := nfs.NewServer(nfs.Config{Exports: nfs.ExportList{ex}, Log: zap.NewNop()})
	r := &dispatchRig{
		disp: oncrpc.NewDispatcher(zap.NewNop(), oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program()),
		ex:   oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP}},
	}
	r.reply = oncrpc.NewReply(make([]byte, 0, 4096))
	return r
}

// TestWriteStability checks that WRITE answers the stability it reached
// (RFC 1813 section 3.3.7) and COMMIT syncs (3.3.21), and that an async
// export answers what was asked without asking storage to sync, as
// knfsd's async does.
func TestWriteStability(t *testing.T) {
	for _, async := range []bool{false, true} {
		fs := &syncFS{flatFS: flatFS{data: make([]byte, 8192)}}
		r := newRigExport(t, &nfs.Export{FSID: testFSID, Path: "/", FS: fs, Async: async})
		fh := nfs.HandleFor(&nfs.Export{FSID: testFSID}, flatFile)
		for _, c := range []struct {
			stable, want wire.StableHow
			synced       bool
		}{
			{wire.Unstable, wire.Unstable, false},
			{wire.DataSync, wire.FileSync, true},
			{wire.FileSync, wire.FileSync, true},
		} {
			if async {
				c.want, c.synced = c.stable, false
			}
			before := fs.syncedWrites
			r.setCall(wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 4, Stable: c.stable, Data: []byte("abcd")}).Append(nil))
			var res wire.WriteRes
			if err := res.Decode(xdr.NewReader(r.do(t))); err != nil || res.Status != wire.OK {
				t.Fatalf("async=%v WRITE %v: %v %v", async, c.stable, err, res.Status)
			}
			if res.Committed != c.want {
				t.Errorf("async=%v WRITE %v: committed %v, want %v", async, c.stable, res.Committed, c.want)
			}
			if synced := fs.syncedWrites > before; synced != c.synced {
				t.Errorf("async=%v WRITE %v: synced %v, want %v", async, c.stable, synced, c.synced)
			}
		}
		r.setCall(wire.ProcCommit, (&wire.CommitArgs{FH: fh}).Append(nil))
		var cres wire.CommitRes
		if err := cres.Decode(xdr.NewReader(r.do(t))); err != nil || cres.Status != wire.OK {
			t.Fatalf("async=%v COMMIT: %v %v", async, err, cres.Status)
		}
		if want := map[bool]int{false: 1, true: 0}[async]; fs.commits != want {
			t.Errorf("async=%v: COMMIT synced the file %d times, want %d", async, fs.commits, want)
		}
	}
}

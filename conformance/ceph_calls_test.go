//go:build ceph && linux && cgo

package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/internal/cephtest"
	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/cephfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// callRig dispatches NFS calls in process to an nfs.Server over one
// CephFS export, as a TCP client with AUTH_SYS uid/gid 1000 (no
// connection, no timing: the counts below are exact).
type callRig struct {
	disp  *oncrpc.Dispatcher
	ex    oncrpc.BufferExchange
	call  oncrpc.Call
	reply oncrpc.Reply
	root  []byte
	xid   uint32
}

const callRigFSID = 0xCEF5

func newCallRig(t *testing.T, fs vfs.FS) *callRig {
	srv := nfs.NewServer(nfs.Config{Exports: nfs.ExportList{{FSID: callRigFSID, Path: "/", FS: fs, Stats: new(nfs.ExportStats)}}, Log: zap.NewNop()})
	r := &callRig{
		disp: oncrpc.NewDispatcher(zap.NewNop(), oncrpc.NewDRC(1024, 8<<20, time.Minute), srv.Program()),
		ex:   oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP, Remote: netip.MustParseAddrPort("127.0.0.1:700")}},
	}
	r.disp.OpenConn(&r.ex.From, meter.NewClients(0))
	r.reply = oncrpc.NewReply(make([]byte, 0, 4096))
	r.root, _ = srv.RootHandle(callRigFSID)
	return r
}

// do runs one call of proc with args and decodes its result (after the
// 24-byte accepted-reply header) into res, failing the test unless the
// status is NFS3_OK.
func (r *callRig) do(t *testing.T, what string, proc uint32, args []byte, res interface{ Decode(*xdr.Reader) error }) {
	t.Helper()
	r.xid++ // the DRC must not answer a non-idempotent call from its cache
	h := oncrpc.CallHeader{XID: r.xid, Prog: wire.Program, Vers: wire.Version, Proc: proc, Cred: oncrpc.NewAuthSys("calls", 1000, 1000)}
	r.ex.Msg = append(oncrpc.AppendCallHeader(nil, &h), args...)
	if !r.disp.Dispatch(context.Background(), &r.ex, &r.call, &r.reply) {
		t.Fatalf("%s: no reply", what)
	}
	flat := r.reply.AppendFlat(nil)
	var rd xdr.Reader
	rd.Reset(flat[24:])
	if err := res.Decode(&rd); err != nil {
		t.Fatalf("%s: decoding the result: %v", what, err)
	}
}

// TestCephCallsPerProcedure holds the NFS procedures a client's I/O and
// metadata loops send to their budget of libcephfs calls (cephfs.Calls),
// counted over many calls of each on one export of the test cluster: a
// call more (a second getattr per READ, say) fails it.
func TestCephCallsPerProcedure(t *testing.T) {
	conf := cephtest.Conf(t)
	top, err := cephfs.New(cephfs.Options{ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	name := cephtest.FreshName("calls-")
	_, _, err = top.Mkdir(vfs.Cred{}, top.Root(), name, 0o777)
	top.Close()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := cephfs.New(cephfs.Options{ConfigFile: conf, Root: "/" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	r := newCallRig(t, fs)

	const n = 20
	names := make([]string, n)
	fhs := make([][]byte, n)
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i)
	}
	// Each phase runs its procedure on every file, as bench's loops do,
	// and compares the calls made with n times its budget.
	phase := func(what string, want cephfs.Calls, each func(i int)) {
		t.Helper()
		before := fs.Calls()
		for i := range n {
			each(i)
		}
		got := fs.Calls().Sub(before)
		if all := times(want, n); got != all {
			t.Errorf("%s: %d calls made %+v, want %+v (per call: %+v)", what, n, got, all, want)
		}
	}
	mode := wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}
	// CREATE GUARDED: the directory's attributes before and after, the
	// create (whose open file WRITE then uses); the new file's attributes
	// are the ones the create returned.
	phase("CREATE", cephfs.Calls{Getattr: 2, Create: 1}, func(i int) {
		names[i] = fmt.Sprintf("f%03d", i)
		var res wire.CreateRes
		r.do(t, "CREATE", wire.ProcCreate, (&wire.CreateArgs{Where: wire.DirOpArgs{Dir: r.root, Name: names[i]}, How: wire.CreateHow{Mode: wire.Guarded, Attr: mode}}).Append(nil), &res)
		if res.Status != wire.OK || !res.FH.Set || !res.Attr.Set {
			t.Fatalf("CREATE %s: %v (handle %v, attributes %v)", names[i], res.Status, res.FH.Set, res.Attr.Set)
		}
		fhs[i] = append([]byte(nil), res.FH.FH...)
	})
	// WRITE (UNSTABLE): the attributes before (permission, wcc) and the
	// ones the write returned after.
	phase("WRITE", cephfs.Calls{Getattr: 2, Write: 1}, func(i int) {
		var res wire.WriteRes
		r.do(t, "WRITE", wire.ProcWrite, (&wire.WriteArgs{FH: fhs[i], Count: uint32(len(data)), Stable: wire.Unstable, Data: data}).Append(nil), &res)
		if res.Status != wire.OK || res.Count != uint32(len(data)) || !res.Wcc.After.Set || res.Wcc.After.Attr.Size != uint64(len(data)) {
			t.Fatalf("WRITE: %v, %d bytes, after %+v", res.Status, res.Count, res.Wcc.After)
		}
	})
	// READ: one getattr serves the end-of-file flag, the permission
	// check and the reply's attributes.
	phase("READ", cephfs.Calls{Getattr: 1, Read: 1}, func(i int) {
		var res wire.ReadRes
		r.do(t, "READ", wire.ProcRead, (&wire.ReadArgs{FH: fhs[i], Count: uint32(len(data))}).Append(nil), &res)
		if res.Status != wire.OK || res.Count != uint32(len(data)) || !res.EOF || !res.Attr.Set || res.Attr.Attr.Size != uint64(len(data)) {
			t.Fatalf("READ: %v, %d bytes, eof %v, attributes %+v", res.Status, res.Count, res.EOF, res.Attr)
		}
	})
	phase("GETATTR", cephfs.Calls{Getattr: 1}, func(i int) {
		var res wire.GetattrRes
		r.do(t, "GETATTR", wire.ProcGetattr, (&wire.GetattrArgs{FH: fhs[i]}).Append(nil), &res)
		if res.Status != wire.OK {
			t.Fatalf("GETATTR: %v", res.Status)
		}
	})
	// REMOVE: the directory's attributes before and after, the unlink,
	// the lookup that finds which cached file goes, and the close of
	// that file's open file (so the MDS can purge it).
	phase("REMOVE", cephfs.Calls{Getattr: 2, Lookup: 1, Unlink: 1, Close: 1}, func(i int) {
		var res wire.RemoveRes
		r.do(t, "REMOVE", wire.ProcRemove, (&wire.RemoveArgs{Dir: r.root, Name: names[i]}).Append(nil), &res)
		if res.Status != wire.OK {
			t.Fatalf("REMOVE %s: %v", names[i], res.Status)
		}
	})
	// A READ refused by the mode bits still answers ACCES with the
	// file's attributes (the read's data is not sent).
	var cr wire.CreateRes
	r.do(t, "CREATE", wire.ProcCreate, (&wire.CreateArgs{Where: wire.DirOpArgs{Dir: r.root, Name: "closed"}, How: wire.CreateHow{Mode: wire.Guarded, Attr: mode}}).Append(nil), &cr)
	var wr wire.WriteRes
	r.do(t, "WRITE", wire.ProcWrite, (&wire.WriteArgs{FH: cr.FH.FH, Count: 4, Stable: wire.FileSync, Data: []byte("data")}).Append(nil), &wr)
	h, _, err := fs.Lookup(vfs.Cred{}, fs.Root(), "closed")
	if err != nil {
		t.Fatal(err)
	}
	zero := uint32(0)
	other := uint32(2000)
	if err := fs.SetAttr(vfs.Cred{}, h, vfs.SetAttr{Mode: &zero, UID: &other}); err != nil {
		t.Fatal(err)
	}
	var rr wire.ReadRes
	r.do(t, "READ", wire.ProcRead, (&wire.ReadArgs{FH: cr.FH.FH, Count: 4}).Append(nil), &rr)
	if rr.Status != wire.ErrAcces || !rr.Attr.Set || rr.Attr.Attr.Mode != 0 || rr.Count != 0 {
		t.Fatalf("READ of a mode-0 file of another owner: %v, attributes %+v, %d bytes", rr.Status, rr.Attr, rr.Count)
	}
}

func times(c cephfs.Calls, n uint64) cephfs.Calls {
	return cephfs.Calls{
		Getattr: c.Getattr * n, Setattr: c.Setattr * n, Lookup: c.Lookup * n, LookupVino: c.LookupVino * n,
		Open: c.Open * n, Close: c.Close * n, Read: c.Read * n, Write: c.Write * n,
		Create: c.Create * n, Unlink: c.Unlink * n, Sync: c.Sync * n,
	}
}

package nfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/billyfs"
)

func TestProgramTable(t *testing.T) {
	srv := nfs.NewServer(nfs.Config{Exports: nfs.ExportList{}})
	p := srv.Program()
	if p.Prog != 100003 || len(p.Versions) != 1 || p.Versions[0].Vers != 3 || len(p.Versions[0].Procs) != 22 {
		t.Fatalf("program %+v", p)
	}
	nonIdem := map[string]bool{"SETATTR": true, "CREATE": true, "MKDIR": true, "SYMLINK": true, "MKNOD": true,
		"REMOVE": true, "RMDIR": true, "RENAME": true, "LINK": true}
	for i, pr := range p.Versions[0].Procs {
		if pr.Name != wire.ProcNames[i] || pr.Handler == nil {
			t.Errorf("proc %d: %q", i, pr.Name)
		}
		if pr.Idempotent == nonIdem[pr.Name] {
			t.Errorf("%s: idempotent %v", pr.Name, pr.Idempotent)
		}
	}
}

// errFS answers every GetAttr with a fixed error.
type errFS struct {
	vfs.FS
	err error
}

func (e *errFS) Root() vfs.Handle                     { return vfs.Handle("errroot") }
func (e *errFS) GetAttr(vfs.Handle) (vfs.Attr, error) { return vfs.Attr{}, e.err }

// TestStatusMapping checks the single errno -> nfsstat3 mapping through
// GETATTR.
func TestStatusMapping(t *testing.T) {
	cases := []struct {
		err  error
		want wire.Status
	}{
		{syscall.ENOENT, wire.ErrNoEnt},
		{&os.PathError{Op: "x", Path: "y", Err: syscall.EEXIST}, wire.ErrExist},
		{syscall.ENOTDIR, wire.ErrNotDir},
		{syscall.EISDIR, wire.ErrIsDir},
		{syscall.EINVAL, wire.ErrInval},
		{syscall.EACCES, wire.ErrAcces},
		{syscall.EPERM, wire.ErrPerm},
		{syscall.EROFS, wire.ErrROFS},
		{syscall.ENOTEMPTY, wire.ErrNotEmpty},
		{&os.PathError{Op: "open_by_handle_at", Err: syscall.ENOMEM}, wire.ErrJukebox},
		{syscall.ENAMETOOLONG, wire.ErrNameTooLong},
		{syscall.ENOSPC, wire.ErrNoSpc},
		{syscall.EDQUOT, wire.ErrDQuot},
		{syscall.EFBIG, wire.ErrFBig},
		{syscall.EMLINK, wire.ErrMLink},
		{syscall.EXDEV, wire.ErrXDev},
		{syscall.ESTALE, wire.ErrStale},
		{syscall.ENXIO, wire.ErrNXIO},
		{syscall.ENODEV, wire.ErrNoDev},
		{syscall.EOPNOTSUPP, wire.ErrNotSupp},
		{fmt.Errorf("wrapped: %w", vfs.ErrStale), wire.ErrStale},
		{vfs.ErrBadHandle, wire.ErrBadHandle},
		{vfs.ErrNotSupported, wire.ErrNotSupp},
		{vfs.ErrExclusiveMismatch, wire.ErrExist},
		{fs.ErrNotExist, wire.ErrNoEnt},
		{fs.ErrPermission, wire.ErrAcces},
		{syscall.EBUSY, wire.ErrIO},
		{errors.New("mystery"), wire.ErrIO},
	}
	for _, c := range cases {
		efs := &errFS{err: c.err}
		r := newRig(t, efs)
		r.setCall(wire.ProcGetattr, wire.AppendFH(nil, r.root))
		if got := r.status(t); got != c.want {
			t.Errorf("%v: %v, want %v", c.err, got, c.want)
		}
	}
}

// TestReadOnlyAndAuthorize checks the export's ReadOnly flag and the
// Authorize hook.
func TestReadOnlyAndAuthorize(t *testing.T) {
	mem := billyfs.NewMem(billyfs.Options{})
	defer mem.Close()
	f, _, err := mem.Create(vfs.Cred{}, mem.Root(), "f", 0666, false, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	ro := &nfs.Export{FSID: 1, FS: mem, ReadOnly: true}
	var seen []uint32
	srv := nfs.NewServer(nfs.Config{
		Exports: nfs.ExportList{ro},
		Log:     zap.NewNop(),
		Authorize: func(call *oncrpc.Call, e *nfs.Export) (nfs.Cred, bool, wire.Status) {
			seen = append(seen, e.FSID)
			if call.Unix.UID == 666 {
				return nfs.Cred{}, true, wire.ErrAcces
			}
			return nfs.Cred{UID: call.Unix.UID, GID: call.Unix.GID}, e.ReadOnly, wire.OK
		},
	})
	r := &dispatchRig{disp: oncrpc.NewDispatcher(zap.NewNop(), nil, srv.Program()), ex: oncrpc.BufferExchange{From: oncrpc.Peer{Transport: oncrpc.TCP}}}
	r.reply = oncrpc.NewReply(nil)
	fh := nfs.HandleFor(ro, f)
	root, _ := srv.RootHandle(1)
	for _, c := range []struct {
		name string
		proc uint32
		args []byte
	}{
		{"WRITE", wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 1, Data: []byte("x")}).Append(nil)},
		{"SETATTR", wire.ProcSetattr, (&wire.SetattrArgs{FH: fh, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true}}}).Append(nil)},
		{"CREATE", wire.ProcCreate, (&wire.CreateArgs{Where: wire.DirOpArgs{Dir: root, Name: "n"}}).Append(nil)},
		{"REMOVE", wire.ProcRemove, (&wire.RemoveArgs{Dir: root, Name: "f"}).Append(nil)},
		{"COMMIT", wire.ProcCommit, (&wire.CommitArgs{FH: fh}).Append(nil)},
	} {
		r.setCall(c.proc, c.args)
		if st := r.status(t); st != wire.ErrROFS {
			t.Errorf("%s on a read-only export: %v", c.name, st)
		}
	}
	r.setCall(wire.ProcRead, (&wire.ReadArgs{FH: fh, Count: 1}).Append(nil))
	if st := r.status(t); st != wire.OK {
		t.Errorf("READ on a read-only export: %v", st)
	}
	r.setCall(wire.ProcAccess, (&wire.AccessArgs{FH: fh, Access: wire.AccessAll}).Append(nil))
	res := r.do(t)
	if got := res[len(res)-1]; got != wire.AccessRead {
		t.Errorf("ACCESS on a read-only export: %#x", got)
	}
	if len(seen) == 0 || seen[0] != 1 {
		t.Error("Authorize hook not called")
	}
	// A denial from the hook is the answer.
	h := oncrpc.CallHeader{XID: 2, Prog: wire.Program, Vers: wire.Version, Proc: wire.ProcGetattr, Cred: oncrpc.NewAuthSys("x", 666, 666)}
	r.msg = append(oncrpc.AppendCallHeader(nil, &h), wire.AppendFH(nil, fh)...)
	if st := r.status(t); st != wire.ErrAcces {
		t.Errorf("denied caller: %v", st)
	}
}

// ownershipFS checks that WRITE data is a sub-slice of the call buffer and
// that READ fills the transport's payload buffer.
type ownershipFS struct {
	flatFS
	msg, payload *[]byte
	t            *testing.T
}

func within(p, buf []byte) bool {
	if len(p) == 0 || len(buf) == 0 {
		return false
	}
	s, b := uintptr(unsafe.Pointer(&p[0])), uintptr(unsafe.Pointer(&buf[0]))
	return s >= b && s+uintptr(len(p)) <= b+uintptr(len(buf))
}

func (o *ownershipFS) WriteAt(c vfs.Cred, h vfs.Handle, p []byte, off int64, sync bool) (int, error) {
	if !within(p, *o.msg) {
		o.t.Error("WRITE data is not a sub-slice of the call buffer")
	}
	return o.flatFS.WriteAt(c, h, p, off, sync)
}

func (o *ownershipFS) ReadAt(h vfs.Handle, p []byte, off int64) (int, bool, error) {
	if !within(p, *o.payload) {
		o.t.Error("READ does not fill the transport's payload buffer")
	}
	return o.flatFS.ReadAt(h, p, off)
}

func TestBufferOwnership(t *testing.T) {
	ofs := &ownershipFS{flatFS: flatFS{data: make([]byte, 8192)}, t: t}
	r := newRig(t, ofs)
	r.ex.Payload = make([]byte, 1<<20)
	ofs.payload = &r.ex.Payload
	r.reply = oncrpc.NewReply(nil)
	ofs.msg = &r.msg
	fh := nfs.HandleFor(&nfs.Export{FSID: testFSID}, flatFile)
	r.setCall(wire.ProcWrite, (&wire.WriteArgs{FH: fh, Count: 4, Data: []byte("abcd")}).Append(nil))
	if st := r.status(t); st != wire.OK {
		t.Fatal(st)
	}
	r.setCall(wire.ProcRead, (&wire.ReadArgs{FH: fh, Count: 4}).Append(nil))
	if st := r.status(t); st != wire.OK || string(r.reply.Payload) != "abcd" || !within(r.reply.Payload, r.ex.Payload) {
		t.Fatalf("READ: %v %q", st, r.reply.Payload)
	}
}

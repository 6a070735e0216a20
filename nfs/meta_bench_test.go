package nfs_test

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// The one-call-at-a-time metadata calls (issue 19) through the dispatcher
// on the OS backend, as a squashed non-root caller (uid 1000) in a
// directory open to it: the per-call cost a depth-1 client pays, less
// the transport. Benchmarks, not run in CI; docs/performance.md.

// benchUID is the caller of the metadata benchmarks.
const benchUID = 1000

// metaRig is a dispatchRig over the OS backend on a temporary directory
// with mode 0777, so that benchUID may create in it.
func metaRig(b *testing.B) (*dispatchRig, wire.DirOpArgs) {
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		b.Fatal(err)
	}
	fs, err := localfs.New(dir, localfs.Options{HandleKey: testHandleKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Close() })
	r := newRig(b, fs)
	return r, wire.DirOpArgs{Dir: r.root, Name: "f"}
}

// callAs encodes a call of proc with AUTH_SYS benchUID and args.
func callAs(proc uint32, args []byte) []byte {
	h := oncrpc.CallHeader{XID: 1, Prog: wire.Program, Vers: wire.Version, Proc: proc, Cred: oncrpc.NewAuthSys("bench", benchUID, benchUID)}
	return append(oncrpc.AppendCallHeader(nil, &h), args...)
}

// run dispatches msg under a new XID (not answered from the duplicate
// request cache) and fails on a status other than OK.
func (r *dispatchRig) run(b *testing.B, what string, msg []byte) {
	r.xid++
	binary.BigEndian.PutUint32(msg, r.xid)
	r.msg = msg
	if st := r.status(b); st != wire.OK {
		b.Fatalf("%s: %v", what, st)
	}
}

// BenchmarkCreateRemove is one CREATE (UNCHECKED, mode 0644) and one
// REMOVE of the same name per iteration, in the export root and in a
// subdirectory (mode 0777, root's: a directory the caller does not own,
// so its ACLs are asked about on every call, as in bench-peers' export).
func BenchmarkCreateRemove(b *testing.B) {
	for _, in := range []string{"root", "subdir"} {
		b.Run(in, func(b *testing.B) {
			r, where := metaRig(b)
			if in == "subdir" {
				where = subdir(b, r, where)
			}
			create := callAs(wire.ProcCreate, (&wire.CreateArgs{Where: where, How: wire.CreateHow{Mode: wire.Unchecked,
				Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}}}).Append(nil))
			remove := callAs(wire.ProcRemove, where.Append(nil))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.run(b, "CREATE", create)
				r.run(b, "REMOVE", remove)
			}
		})
	}
}

// subdir makes directory "d" (mode 0777) in where.Dir as root and
// returns where moved into it.
func subdir(b *testing.B, r *dispatchRig, where wire.DirOpArgs) wire.DirOpArgs {
	h := oncrpc.CallHeader{XID: 1 << 31, Prog: wire.Program, Vers: wire.Version, Proc: wire.ProcMkdir, Cred: oncrpc.NewAuthSys("bench", 0, 0)}
	args := (&wire.MkdirArgs{Where: wire.DirOpArgs{Dir: where.Dir, Name: "d"}, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o777}}}).Append(nil)
	r.msg = append(oncrpc.AppendCallHeader(nil, &h), args...)
	res := r.do(b)
	var d wire.CreateRes
	var rd xdr.Reader
	rd.Reset(res)
	if d.Decode(&rd) != nil || d.Status != wire.OK || !d.FH.Set {
		b.Fatalf("MKDIR: %v", d.Status)
	}
	return wire.DirOpArgs{Dir: append([]byte(nil), d.FH.FH...), Name: where.Name}
}

// BenchmarkLookupFile is one LOOKUP of an existing file.
func BenchmarkLookupFile(b *testing.B) {
	r, where := metaRig(b)
	r.run(b, "CREATE", callAs(wire.ProcCreate, (&wire.CreateArgs{Where: where}).Append(nil)))
	lookup := callAs(wire.ProcLookup, where.Append(nil))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.run(b, "LOOKUP", lookup)
	}
}

// createdFile makes file where.Name as benchUID and returns its handle.
func createdFile(b *testing.B, r *dispatchRig, where wire.DirOpArgs) []byte {
	r.xid++
	r.msg = callAs(wire.ProcCreate, (&wire.CreateArgs{Where: where, How: wire.CreateHow{Mode: wire.Unchecked,
		Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}}}).Append(nil))
	binary.BigEndian.PutUint32(r.msg, r.xid)
	var res wire.CreateRes
	var rd xdr.Reader
	rd.Reset(r.do(b))
	if res.Decode(&rd) != nil || res.Status != wire.OK || !res.FH.Set {
		b.Fatalf("CREATE: %v", res.Status)
	}
	return append([]byte(nil), res.FH.FH...)
}

// BenchmarkSetattr is one SETATTR by the file's owner (benchUID): a
// chmod, explicit times (what tar x and cp -p send), times set to the
// server's clock (touch), and a truncation to 0 (an open with O_TRUNC).
func BenchmarkSetattr(b *testing.B) {
	cases := []struct {
		name string
		attr wire.Sattr
	}{
		{"mode", wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o640}}},
		{"times", wire.Sattr{Atime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 1e9}},
			Mtime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 1e9}}}},
		{"now", wire.Sattr{Atime: wire.SetTime{How: wire.SetToServerTime}, Mtime: wire.SetTime{How: wire.SetToServerTime}}},
		{"size0", wire.Sattr{Size: wire.SetUint64{Set: true}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			r, where := metaRig(b)
			fh := createdFile(b, r, where)
			setattr := callAs(wire.ProcSetattr, (&wire.SetattrArgs{FH: fh, Attr: c.attr}).Append(nil))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.run(b, "SETATTR", setattr)
			}
		})
	}
}

// BenchmarkRename renames a file to another name in the same directory
// and back (two RENAMEs per iteration), as an editor's or rsync's
// write-then-rename does, in the export root and in a subdirectory.
func BenchmarkRename(b *testing.B) {
	for _, in := range []string{"root", "subdir"} {
		b.Run(in, func(b *testing.B) {
			r, where := metaRig(b)
			if in == "subdir" {
				where = subdir(b, r, where)
			}
			createdFile(b, r, where)
			other := wire.DirOpArgs{Dir: where.Dir, Name: "g"}
			there := callAs(wire.ProcRename, (&wire.RenameArgs{From: where, To: other}).Append(nil))
			back := callAs(wire.ProcRename, (&wire.RenameArgs{From: other, To: where}).Append(nil))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r.run(b, "RENAME", there)
				r.run(b, "RENAME", back)
			}
		})
	}
}

// BenchmarkMkdirRmdir is one MKDIR (mode 0755) and one RMDIR of the same
// name per iteration.
func BenchmarkMkdirRmdir(b *testing.B) {
	r, where := metaRig(b)
	mkdir := callAs(wire.ProcMkdir, (&wire.MkdirArgs{Where: where, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o755}}}).Append(nil))
	rmdir := callAs(wire.ProcRmdir, where.Append(nil))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.run(b, "MKDIR", mkdir)
		r.run(b, "RMDIR", rmdir)
	}
}

// BenchmarkLinkRemove is one LINK of the caller's file to a new name and
// one REMOVE of that name per iteration (git's way of moving an object
// into place).
func BenchmarkLinkRemove(b *testing.B) {
	r, where := metaRig(b)
	fh := createdFile(b, r, where)
	other := wire.DirOpArgs{Dir: where.Dir, Name: "g"}
	link := callAs(wire.ProcLink, (&wire.LinkArgs{FH: fh, Link: other}).Append(nil))
	remove := callAs(wire.ProcRemove, other.Append(nil))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r.run(b, "LINK", link)
		r.run(b, "REMOVE", remove)
	}
}

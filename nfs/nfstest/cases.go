package nfstest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Cases returns the end-to-end table.
func Cases() []Case {
	return []Case{
		{"Null", testNull},
		{"Getattr", testGetattr},
		{"BadHandles", testBadHandles},
		{"Setattr", testSetattr},
		{"Lookup", testLookup},
		{"Access", testAccess},
		{"Readlink", testReadlink},
		{"ReadWrite", testReadWrite},
		{"Create", testCreate},
		{"Mkdir", testMkdir},
		{"Symlink", testSymlink},
		{"Mknod", testMknod},
		{"Remove", testRemove},
		{"Rmdir", testRmdir},
		{"Rename", testRename},
		{"Link", testLink},
		{"OwnerMetadata", testOwnerMetadata},
		{"DirWcc", testDirWcc},
		{"Readdir", testReaddir},
		{"Readdir2000", testReaddirLarge},
		{"Readdirplus", testReaddirplus},
		{"Fsstat", testFsstat},
		{"Fsinfo", testFsinfo},
		{"Pathconf", testPathconf},
		{"Commit", testCommit},
		{"Permissions", testPermissions},
		{"GarbageArgs", testGarbageArgs},
	}
}

func testNull(e *Env) {
	e.OK(e.C.Null(e.Ctx), "NULL")
}

func testGetattr(e *Env) {
	a := e.Attr(e.Root)
	if a.Type != wire.TypeDir || a.Nlink < 2 {
		e.T.Fatalf("root attributes %+v", a)
	}
	f := e.File(e.Root, "f", 0640, []byte("12345"))
	fa := e.Attr(f)
	if fa.Type != wire.TypeReg || fa.Size != 5 || fa.Mode != 0640 || fa.FSID != a.FSID || fa.FileID == a.FileID {
		e.T.Fatalf("file attributes %+v (root %+v)", fa, a)
	}
}

// mutate returns a copy of fh with f applied.
func mutate(fh []byte, f func(b []byte) []byte) []byte {
	return f(append([]byte(nil), fh...))
}

// handleForms splits a handle the server issued (short or long header,
// nfs/handles.go) into its fsid and backend handle, and returns the same
// handle in each of the three header forms the server accepts: short
// (nil when the fsid does not fit), long and version 1.
func handleForms(t interface{ Fatalf(string, ...any) }, fh []byte) (fsid uint32, backend, short, long, v1 []byte) {
	switch {
	case len(fh) > 1 && fh[0]&0x80 != 0:
		fsid, backend = uint32(fh[0]&0x7f), fh[1:]
	case len(fh) > 5 && fh[0] == 2:
		fsid, backend = binary.BigEndian.Uint32(fh[1:]), fh[5:]
	default:
		t.Fatalf("handle %x has neither header the server issues", fh)
	}
	if fsid < 0x80 {
		short = append([]byte{0x80 | byte(fsid)}, backend...)
	}
	long = append(binary.BigEndian.AppendUint32([]byte{2}, fsid), backend...)
	v1 = append(binary.BigEndian.AppendUint32([]byte{1, 0, 0, 0}, fsid), backend...)
	return fsid, backend, short, long, v1
}

func testBadHandles(e *Env) {
	f := e.File(e.Root, "f", 0644, nil)
	fsid, backend, _, long, v1 := handleForms(e.T, f)
	want := e.Attr(f)
	// The same file named through each accepted header form.
	for _, fh := range [][]byte{f, long, v1} {
		a, err := e.C.Getattr(e.Ctx, fh)
		e.OK(err, fmt.Sprintf("GETATTR of %x", fh))
		if a.Attr.FileID != want.FileID {
			e.T.Fatalf("handle %x: fileid %d, want %d", fh, a.Attr.FileID, want.FileID)
		}
	}
	other := fsid ^ 0x55
	cases := []struct {
		name string
		fh   []byte
		want wire.Status
	}{
		{"one byte", f[:1], wire.ErrBadHandle},
		{"long header only", long[:5], wire.ErrBadHandle},
		{"version 1 header only", v1[:8], wire.ErrBadHandle},
		{"version 0", mutate(f, func(b []byte) []byte { b[0] = 0; return b }), wire.ErrStale},
		{"version 9", mutate(f, func(b []byte) []byte { b[0] = 9; return b }), wire.ErrStale},
		{"version 1 kind", mutate(v1, func(b []byte) []byte { b[1] = 7; return b }), wire.ErrBadHandle},
		{"version 1 reserved", mutate(v1, func(b []byte) []byte { b[3] = 1; return b }), wire.ErrBadHandle},
		{"unknown short fsid", append([]byte{0x80 | byte(other&0x7f)}, backend...), wire.ErrStale},
		{"unknown long fsid", mutate(long, func(b []byte) []byte { b[1] ^= 0xff; b[4] ^= 0x55; return b }), wire.ErrStale},
		{"unknown version 1 fsid", mutate(v1, func(b []byte) []byte { b[4] ^= 0xff; b[7] ^= 0x55; return b }), wire.ErrStale},
		{"backend garbage", mutate(long, func(b []byte) []byte { return append(b[:5], 0xde, 0xad) }), wire.ErrBadHandle},
		{"backend flipped", mutate(f, func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }), 0},
		{"too long for format", append(mutate(long, func(b []byte) []byte { return b[:5] }), make([]byte, 49)...), wire.ErrBadHandle},
		{"version 1, too long for format", append(mutate(v1, func(b []byte) []byte { return b[:8] }), make([]byte, 49)...), wire.ErrBadHandle},
	}
	for _, c := range cases {
		_, err := e.C.Getattr(e.Ctx, c.fh)
		if c.want == 0 {
			// A corrupted backend handle is either garbled or stale,
			// depending on the backend; never accepted.
			if st := client.StatusOf(err); st != wire.ErrBadHandle && st != wire.ErrStale {
				e.T.Fatalf("%s: %v", c.name, err)
			}
			continue
		}
		e.Status(err, c.want, "GETATTR "+c.name)
	}
	// The same checks guard every procedure, e.g. READ and LOOKUP.
	_, err := e.C.Read(e.Ctx, f[:1], 0, 10)
	e.Status(err, wire.ErrBadHandle, "READ short handle")
	_, err = e.C.Lookup(e.Ctx, mutate(e.Root, func(b []byte) []byte { b[0] = 9; return b }), "f")
	e.Status(err, wire.ErrStale, "LOOKUP stale dir")
}

func testSetattr(e *Env) {
	f := e.File(e.Root, "f", 0644, []byte("hello world"))
	_, err := e.C.Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0600}, Size: wire.SetUint64{Set: true, V: 5},
		Mtime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 1_000_000, Nsec: 5}},
		Atime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 2_000_000}}}, nil)
	e.OK(err, "SETATTR")
	a := e.Attr(f)
	if a.Mode != 0600 || a.Size != 5 || a.Mtime.Sec != 1_000_000 || a.Atime.Sec != 2_000_000 {
		e.T.Fatalf("after SETATTR: %+v", a)
	}
	data, err := e.C.ReadAll(e.Ctx, f)
	e.OK(err, "read")
	if string(data) != "hello" {
		e.T.Fatalf("truncated content %q", data)
	}
	// Extend with zeros.
	_, err = e.C.Setattr(e.Ctx, f, wire.Sattr{Size: wire.SetUint64{Set: true, V: 8}}, nil)
	e.OK(err, "SETATTR extend")
	data, _ = e.C.ReadAll(e.Ctx, f)
	if !bytes.Equal(data, []byte("hello\x00\x00\x00")) {
		e.T.Fatalf("extended content %q", data)
	}
	// Guard: a wrong ctime is NOT_SYNC and changes nothing, with wcc_data.
	a = e.Attr(f)
	bad := wire.Time{Sec: a.Ctime.Sec - 100, Nsec: a.Ctime.Nsec}
	res, err := e.C.Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0611}}, &bad)
	e.Status(err, wire.ErrNotSync, "SETATTR guard mismatch")
	if !res.Wcc.Before.Set || res.Wcc.Before.Attr.Ctime != a.Ctime || !res.Wcc.After.Set {
		e.T.Fatalf("NOT_SYNC wcc %+v", res.Wcc)
	}
	if e.Attr(f).Mode != 0600 {
		e.T.Fatal("guarded SETATTR changed the mode")
	}
	res, err = e.C.Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0611}}, &a.Ctime)
	e.OK(err, "SETATTR guard match")
	if res.Wcc.Before.Attr.Size != 8 || res.Wcc.After.Attr.Mode != 0611 {
		e.T.Fatalf("wcc %+v", res.Wcc)
	}
	// Server time.
	_, err = e.C.Setattr(e.Ctx, f, wire.Sattr{Mtime: wire.SetTime{How: wire.SetToServerTime}}, nil)
	e.OK(err, "SETATTR server time")
	if e.Attr(f).Mtime.Sec < 1_600_000_000 {
		e.T.Fatal("SET_TO_SERVER_TIME did not set the current time")
	}
	// Size of a directory.
	_, err = e.C.Setattr(e.Ctx, e.Root, wire.Sattr{Size: wire.SetUint64{Set: true, V: 0}}, nil)
	e.Status(err, wire.ErrIsDir, "SETATTR size of a directory")
	// Only the owner changes the mode; only root the owner.
	_, err = e.User(1000, 1000).Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0777}}, nil)
	e.Status(err, wire.ErrPerm, "SETATTR mode by non-owner")
	_, err = e.C.Setattr(e.Ctx, f, wire.Sattr{UID: wire.SetUint32{Set: true, V: 1000}, GID: wire.SetUint32{Set: true, V: 1000}}, nil)
	e.OK(err, "chown by root")
	if a := e.Attr(f); a.UID != 1000 || a.GID != 1000 {
		e.T.Fatalf("chown: %+v", a)
	}
	_, err = e.User(1000, 1000).Setattr(e.Ctx, f, wire.Sattr{UID: wire.SetUint32{Set: true, V: 0}}, nil)
	e.Status(err, wire.ErrPerm, "give away by non-root")
	_, err = e.User(1000, 1000).Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0644}}, nil)
	e.OK(err, "chmod by owner")
}

func testLookup(e *Env) {
	d := e.Dir(e.Root, "d", 0755)
	f := e.File(d, "f", 0644, []byte("x"))
	res, err := e.C.Lookup(e.Ctx, d, "f")
	e.OK(err, "LOOKUP")
	if !bytes.Equal(res.FH, f) || !res.ObjAttr.Set || res.ObjAttr.Attr.Size != 1 || !res.DirAttr.Set || res.DirAttr.Attr.Type != wire.TypeDir {
		e.T.Fatalf("LOOKUP result %+v", res)
	}
	res, err = e.C.Lookup(e.Ctx, d, "missing")
	e.Status(err, wire.ErrNoEnt, "LOOKUP missing")
	if !res.DirAttr.Set {
		e.T.Fatal("LOOKUP failure without dir attributes")
	}
	_, err = e.C.Lookup(e.Ctx, f, "x")
	e.Status(err, wire.ErrNotDir, "LOOKUP in a file")
	_, err = e.C.Lookup(e.Ctx, d, strings.Repeat("n", 256))
	e.Status(err, wire.ErrNameTooLong, "LOOKUP 256-byte name")
	res, err = e.C.Lookup(e.Ctx, d, "..")
	e.OK(err, "LOOKUP ..")
	if res.ObjAttr.Attr.FileID != e.Attr(e.Root).FileID {
		e.T.Fatal("d/.. is not the root")
	}
	res, err = e.C.Lookup(e.Ctx, e.Root, "..")
	e.OK(err, "LOOKUP root/..")
	if res.ObjAttr.Attr.FileID != e.Attr(e.Root).FileID {
		e.T.Fatal("root/.. left the export")
	}
	fh, err := e.C.LookupPath(e.Ctx, e.Root, "d/f")
	e.OK(err, "LookupPath")
	if !bytes.Equal(fh, f) {
		e.T.Fatal("LookupPath handle differs")
	}
	// Search permission on the directory.
	e.Dir(e.Root, "closed", 0700)
	closed, _ := e.C.LookupPath(e.Ctx, e.Root, "closed")
	e.File(closed, "g", 0644, nil)
	_, err = e.User(1000, 1000).Lookup(e.Ctx, closed, "g")
	e.Status(err, wire.ErrAcces, "LOOKUP without search permission")
}

func testAccess(e *Env) {
	f := e.File(e.Root, "f", 0640, nil)
	x := e.File(e.Root, "x", 0755, nil)
	d := e.Dir(e.Root, "d", 0750)
	_, err := e.C.Setattr(e.Ctx, f, wire.Sattr{UID: wire.SetUint32{Set: true, V: 1000}, GID: wire.SetUint32{Set: true, V: 2000}}, nil)
	e.OK(err, "chown")
	cases := []struct {
		who  *client.Client
		name string
		fh   []byte
		ask  uint32
		want uint32
	}{
		{e.C, "root file", f, wire.AccessAll, wire.AccessRead | wire.AccessModify | wire.AccessExtend},
		{e.C, "root exec", x, wire.AccessAll, wire.AccessRead | wire.AccessModify | wire.AccessExtend | wire.AccessExecute},
		{e.C, "root dir", d, wire.AccessAll, wire.AccessRead | wire.AccessLookup | wire.AccessModify | wire.AccessExtend | wire.AccessDelete},
		{e.C, "root subset", d, wire.AccessRead | wire.AccessExecute, wire.AccessRead},
		{e.User(1000, 1), "owner", f, wire.AccessAll, wire.AccessRead | wire.AccessModify | wire.AccessExtend},
		{e.User(1001, 1, 2000), "group member", f, wire.AccessAll, wire.AccessRead},
		{e.User(1001, 2000), "group primary", f, wire.AccessRead | wire.AccessModify, wire.AccessRead},
		{e.User(1001, 1), "other", f, wire.AccessAll, 0},
		{e.User(1001, 1), "other exec", x, wire.AccessAll, wire.AccessRead | wire.AccessExecute},
		{e.User(1001, 1), "other dir", d, wire.AccessAll, 0},
		{e.User(1001, 1), "other root dir", e.Root, wire.AccessAll, wire.AccessRead | wire.AccessLookup},
	}
	for _, c := range cases {
		res, err := c.who.Access(e.Ctx, c.fh, c.ask)
		e.OK(err, "ACCESS "+c.name)
		if res.Access != c.want || !res.Attr.Set {
			e.T.Errorf("ACCESS %s: got %#x, want %#x", c.name, res.Access, c.want)
		}
	}
}

func testReadlink(e *Env) {
	target := "../some/where/" + strings.Repeat("t", 200)
	res, err := e.C.Symlink(e.Ctx, e.Root, "l", target, wire.Sattr{})
	e.OK(err, "SYMLINK")
	rl, err := e.C.Readlink(e.Ctx, res.FH.FH)
	e.OK(err, "READLINK")
	if rl.Target != target || !rl.Attr.Set || rl.Attr.Attr.Type != wire.TypeLnk {
		e.T.Fatalf("READLINK %+v", rl)
	}
	f := e.File(e.Root, "f", 0644, nil)
	_, err = e.C.Readlink(e.Ctx, f)
	e.Status(err, wire.ErrInval, "READLINK of a file")
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func testReadWrite(e *Env) {
	f := e.File(e.Root, "f", 0644, nil)
	var verf [8]byte
	for i, stable := range []wire.StableHow{wire.Unstable, wire.DataSync, wire.FileSync} {
		data := pattern(1000, byte(i))
		res, err := e.C.Write(e.Ctx, f, uint64(i*1000), data, stable)
		e.OK(err, "WRITE")
		wantCommitted := wire.FileSync
		if stable == wire.Unstable {
			wantCommitted = wire.Unstable
		}
		if res.Count != 1000 || res.Committed != wantCommitted || !res.Wcc.Before.Set || !res.Wcc.After.Set ||
			res.Wcc.Before.Attr.Size != uint64(i*1000) || res.Wcc.After.Attr.Size != uint64((i+1)*1000) {
			e.T.Fatalf("WRITE %v result %+v", stable, res)
		}
		if i > 0 && res.Verf != verf {
			e.T.Fatal("write verifier changed without a restart")
		}
		verf = res.Verf
	}
	r, err := e.C.Read(e.Ctx, f, 500, 1000)
	e.OK(err, "READ")
	want := append(pattern(1000, 0)[500:], pattern(1000, 1)[:500]...)
	if r.Count != 1000 || r.EOF || !bytes.Equal(r.Data, want) || !r.Attr.Set || r.Attr.Attr.Size != 3000 {
		e.T.Fatalf("READ middle: count %d eof %v attr %+v", r.Count, r.EOF, r.Attr)
	}
	r, err = e.C.Read(e.Ctx, f, 2500, 1000)
	e.OK(err, "READ tail")
	if r.Count != 500 || !r.EOF || !bytes.Equal(r.Data, pattern(1000, 2)[500:]) {
		e.T.Fatalf("READ tail: count %d eof %v", r.Count, r.EOF)
	}
	r, err = e.C.Read(e.Ctx, f, 10000, 10)
	e.OK(err, "READ past end")
	if r.Count != 0 || !r.EOF || len(r.Data) != 0 {
		e.T.Fatalf("READ past end: %+v", r)
	}
	// A hole reads as zeros.
	_, err = e.C.Write(e.Ctx, f, 5000, []byte("z"), wire.FileSync)
	e.OK(err, "WRITE past end")
	r, err = e.C.Read(e.Ctx, f, 3000, 3000)
	e.OK(err, "READ hole")
	if !r.EOF || !bytes.Equal(r.Data, append(make([]byte, 2000), 'z')) {
		e.T.Fatalf("hole: eof %v, %d bytes", r.EOF, len(r.Data))
	}
	// Large transfers: 2.5 MiB in 1 MiB WRITEs and READs, read back
	// exactly; READ count is clamped to 1 MiB.
	big := pattern(5<<19, 9)
	g := e.File(e.Root, "big", 0644, big)
	got, err := e.C.ReadAll(e.Ctx, g)
	e.OK(err, "ReadAll")
	if !bytes.Equal(got, big) {
		e.T.Fatalf("big file differs (%d bytes read)", len(got))
	}
	// Unaligned large READs (on TCP with the OS backend these are spliced
	// from the page cache): a server may return fewer bytes than asked
	// but never wrong ones, and EOF only at the end.
	for _, off := range []int{12345, len(big) - 100000, len(big) - 1} {
		r, err = e.C.Read(e.Ctx, g, uint64(off), 1<<20)
		e.OK(err, "READ unaligned")
		end := min(off+(1<<20), len(big))
		if r.Count == 0 || int(r.Count) != len(r.Data) || off+len(r.Data) > end ||
			!bytes.Equal(r.Data, big[off:off+len(r.Data)]) || r.EOF != (off+len(r.Data) == len(big)) {
			e.T.Fatalf("READ 1 MiB at %d: count %d, %d bytes, eof %v; data matches %v",
				off, r.Count, len(r.Data), r.EOF, bytes.Equal(r.Data, big[off:min(off+len(r.Data), len(big))]))
		}
	}
	r, err = e.C.Read(e.Ctx, g, 0, 4<<20)
	e.OK(err, "READ 4 MiB")
	if r.Count != 1<<20 || len(r.Data) != 1<<20 {
		e.T.Fatalf("READ count %d not clamped to 1 MiB", r.Count)
	}
	// Zero-length READ and WRITE.
	r, err = e.C.Read(e.Ctx, g, 0, 0)
	e.OK(err, "READ 0")
	if r.Count != 0 || r.EOF {
		e.T.Fatalf("READ 0: %+v", r)
	}
	w, err := e.C.Write(e.Ctx, g, 0, nil, wire.Unstable)
	e.OK(err, "WRITE 0")
	if w.Count != 0 {
		e.T.Fatal("WRITE 0 wrote")
	}
	// Wrong types.
	_, err = e.C.Read(e.Ctx, e.Root, 0, 10)
	e.Status(err, wire.ErrIsDir, "READ of a directory")
	_, err = e.C.Write(e.Ctx, e.Root, 0, []byte("x"), wire.Unstable)
	e.Status(err, wire.ErrIsDir, "WRITE to a directory")
	sl, err := e.C.Symlink(e.Ctx, e.Root, "l", "f", wire.Sattr{})
	e.OK(err, "SYMLINK")
	_, err = e.C.Read(e.Ctx, sl.FH.FH, 0, 10)
	e.Status(err, wire.ErrInval, "READ of a symlink")
}

func testCreate(e *Env) {
	mode := func(m uint32) wire.Sattr { return wire.Sattr{Mode: wire.SetUint32{Set: true, V: m}} }
	res, err := e.C.Create(e.Ctx, e.Root, "u", wire.CreateHow{Mode: wire.Unchecked, Attr: mode(0640)})
	e.OK(err, "CREATE UNCHECKED")
	if !res.FH.Set || !res.Attr.Set || res.Attr.Attr.Mode != 0640 || res.Attr.Attr.Type != wire.TypeReg ||
		!res.DirWcc.Before.Set || !res.DirWcc.After.Set {
		e.T.Fatalf("CREATE result %+v", res)
	}
	e.OK(e.C.WriteAll(e.Ctx, res.FH.FH, []byte("content")), "write")
	// UNCHECKED on an existing file opens it; size 0 truncates.
	again, err := e.C.Create(e.Ctx, e.Root, "u", wire.CreateHow{Mode: wire.Unchecked, Attr: wire.Sattr{Size: wire.SetUint64{Set: true}}})
	e.OK(err, "CREATE UNCHECKED existing")
	if !bytes.Equal(again.FH.FH, res.FH.FH) || again.Attr.Attr.Size != 0 || again.Attr.Attr.Mode != 0640 {
		e.T.Fatalf("UNCHECKED re-create %+v", again)
	}
	_, err = e.C.Create(e.Ctx, e.Root, "u", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0644)})
	e.Status(err, wire.ErrExist, "CREATE GUARDED existing")
	g, err := e.C.Create(e.Ctx, e.Root, "g", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0600)})
	e.OK(err, "CREATE GUARDED")
	if g.Attr.Attr.Mode != 0600 {
		e.T.Fatalf("GUARDED mode %o", g.Attr.Attr.Mode)
	}
	// UNCHECKED over a directory is EXIST.
	e.Dir(e.Root, "d", 0755)
	_, err = e.C.Create(e.Ctx, e.Root, "d", wire.CreateHow{Mode: wire.Unchecked})
	e.Status(err, wire.ErrExist, "CREATE over a directory")
	// EXCLUSIVE: a replay with the same verifier succeeds with the same
	// file; another verifier is EXIST.
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	x1, err := e.C.Create(e.Ctx, e.Root, "x", wire.CreateHow{Mode: wire.Exclusive, Verf: verf})
	e.OK(err, "CREATE EXCLUSIVE")
	x2, err := e.C.Create(e.Ctx, e.Root, "x", wire.CreateHow{Mode: wire.Exclusive, Verf: verf})
	e.OK(err, "CREATE EXCLUSIVE replay")
	if !bytes.Equal(x1.FH.FH, x2.FH.FH) {
		e.T.Fatal("EXCLUSIVE replay returned another file")
	}
	_, err = e.C.Create(e.Ctx, e.Root, "x", wire.CreateHow{Mode: wire.Exclusive, Verf: [8]byte{9}})
	e.Status(err, wire.ErrExist, "CREATE EXCLUSIVE other verifier")
	_, err = e.C.Create(e.Ctx, e.Root, "u", wire.CreateHow{Mode: wire.Exclusive, Verf: verf})
	e.Status(err, wire.ErrExist, "CREATE EXCLUSIVE over a plain file")
	// The client then sets the mode, as Linux does after EXCLUSIVE.
	_, err = e.C.Setattr(e.Ctx, x1.FH.FH, mode(0644), nil)
	e.OK(err, "SETATTR after EXCLUSIVE")
	// Names.
	_, err = e.C.Create(e.Ctx, e.Root, strings.Repeat("n", 256), wire.CreateHow{Mode: wire.Guarded})
	e.Status(err, wire.ErrNameTooLong, "CREATE 256-byte name")
	long := strings.Repeat("n", 255)
	_, err = e.C.Create(e.Ctx, e.Root, long, wire.CreateHow{Mode: wire.Guarded})
	e.OK(err, "CREATE 255-byte name")
	_, err = e.C.Create(e.Ctx, e.Root, "a/b", wire.CreateHow{Mode: wire.Guarded})
	if err == nil {
		e.T.Fatal("CREATE of a name with a slash succeeded")
	}
	f := e.File(e.Root, "f", 0644, nil)
	_, err = e.C.Create(e.Ctx, f, "n", wire.CreateHow{Mode: wire.Guarded})
	e.Status(err, wire.ErrNotDir, "CREATE in a file")
	// Ownership follows the caller.
	e.Dir(e.Root, "open", 0777)
	open, _ := e.C.LookupPath(e.Ctx, e.Root, "open")
	u, err := e.User(1000, 1001).Create(e.Ctx, open, "mine", wire.CreateHow{Mode: wire.Guarded, Attr: mode(0644)})
	e.OK(err, "CREATE as user")
	if u.Attr.Attr.UID != 1000 || u.Attr.Attr.GID != 1001 {
		e.T.Fatalf("owner %d:%d", u.Attr.Attr.UID, u.Attr.Attr.GID)
	}
}

func testMkdir(e *Env) {
	res, err := e.C.Mkdir(e.Ctx, e.Root, "d", wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0711}})
	e.OK(err, "MKDIR")
	if !res.FH.Set || res.Attr.Attr.Type != wire.TypeDir || res.Attr.Attr.Mode != 0711 ||
		!res.DirWcc.Before.Set || !res.DirWcc.After.Set {
		e.T.Fatalf("MKDIR %+v", res)
	}
	_, err = e.C.Mkdir(e.Ctx, e.Root, "d", wire.Sattr{})
	e.Status(err, wire.ErrExist, "MKDIR existing")
	sub, err := e.C.Mkdir(e.Ctx, res.FH.FH, "sub", wire.Sattr{})
	e.OK(err, "MKDIR nested")
	if sub.Attr.Attr.Mode&0700 != 0700 {
		e.T.Fatalf("default dir mode %o", sub.Attr.Attr.Mode)
	}
	_, err = e.C.Mkdir(e.Ctx, e.Root, strings.Repeat("d", 256), wire.Sattr{})
	e.Status(err, wire.ErrNameTooLong, "MKDIR long name")
}

func testSymlink(e *Env) {
	res, err := e.C.Symlink(e.Ctx, e.Root, "l", "target", wire.Sattr{})
	e.OK(err, "SYMLINK")
	if !res.FH.Set || res.Attr.Attr.Type != wire.TypeLnk || res.Attr.Attr.Size != 6 {
		e.T.Fatalf("SYMLINK %+v", res)
	}
	lk, err := e.C.Lookup(e.Ctx, e.Root, "l")
	e.OK(err, "LOOKUP symlink")
	if lk.ObjAttr.Attr.Type != wire.TypeLnk || !bytes.Equal(lk.FH, res.FH.FH) {
		e.T.Fatal("LOOKUP followed the symlink")
	}
	_, err = e.C.Symlink(e.Ctx, e.Root, "l", "other", wire.Sattr{})
	e.Status(err, wire.ErrExist, "SYMLINK existing")
	long := strings.Repeat("p/", 2047) + "p" // PATH_MAX less the NUL
	r2, err := e.C.Symlink(e.Ctx, e.Root, "long", long, wire.Sattr{})
	e.OK(err, "SYMLINK 4095-byte target")
	rl, err := e.C.Readlink(e.Ctx, r2.FH.FH)
	e.OK(err, "READLINK long")
	if rl.Target != long {
		e.T.Fatal("long target differs")
	}
}

func testMknod(e *Env) {
	res, err := e.C.Mknod(e.Ctx, e.Root, "fifo", wire.TypeFIFO, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0640}}, wire.Specdata{})
	if client.StatusOf(err) == wire.ErrNotSupp {
		e.T.Log("backend has no FIFOs")
	} else {
		e.OK(err, "MKNOD FIFO")
		if res.Attr.Attr.Type != wire.TypeFIFO || res.Attr.Attr.Mode != 0640 {
			e.T.Fatalf("MKNOD FIFO %+v", res.Attr)
		}
		_, err = e.C.Read(e.Ctx, res.FH.FH, 0, 1)
		e.Status(err, wire.ErrInval, "READ of a FIFO")
	}
	for _, typ := range []wire.FileType{wire.TypeReg, wire.TypeDir, wire.TypeLnk} {
		_, err = e.C.Mknod(e.Ctx, e.Root, "bad", typ, wire.Sattr{}, wire.Specdata{})
		e.Status(err, wire.ErrBadType, fmt.Sprintf("MKNOD type %d", typ))
	}
	_, err = e.User(1000, 1000).Mknod(e.Ctx, e.Root, "chr", wire.TypeChr, wire.Sattr{}, wire.Specdata{Major: 1, Minor: 3})
	e.Status(err, wire.ErrAcces, "MKNOD by a user in a root 0755 directory")
	res, err = e.C.Mknod(e.Ctx, e.Root, "chr", wire.TypeChr, wire.Sattr{}, wire.Specdata{Major: 1, Minor: 3})
	switch st := client.StatusOf(err); st {
	case wire.OK:
		if res.Attr.Attr.Type != wire.TypeChr || res.Attr.Attr.Rdev != (wire.Specdata{Major: 1, Minor: 3}) {
			e.T.Fatalf("MKNOD CHR %+v", res.Attr)
		}
	case wire.ErrNotSupp, wire.ErrPerm:
		e.T.Logf("MKNOD CHR: %v", st)
	default:
		e.T.Fatalf("MKNOD CHR: %v", err)
	}
	_, err = e.C.Mknod(e.Ctx, e.Root, "bad\x00name", wire.TypeSock, wire.Sattr{}, wire.Specdata{})
	if err == nil {
		e.T.Fatal("MKNOD with a NUL in the name succeeded")
	}
}

func testRemove(e *Env) {
	f := e.File(e.Root, "f", 0644, []byte("x"))
	res, err := e.C.Remove(e.Ctx, e.Root, "f")
	e.OK(err, "REMOVE")
	if !res.Wcc.Before.Set || !res.Wcc.After.Set {
		e.T.Fatalf("REMOVE wcc %+v", res.Wcc)
	}
	_, err = e.C.Getattr(e.Ctx, f)
	e.Status(err, wire.ErrStale, "GETATTR of a removed file")
	_, err = e.C.Remove(e.Ctx, e.Root, "f")
	e.Status(err, wire.ErrNoEnt, "REMOVE missing")
	e.Dir(e.Root, "d", 0755)
	_, err = e.C.Remove(e.Ctx, e.Root, "d")
	if st := client.StatusOf(err); st != wire.ErrIsDir && st != wire.ErrPerm {
		e.T.Fatalf("REMOVE of a directory: %v", err)
	}
	// Sticky directory: another user's file cannot be removed.
	e.Dir(e.Root, "tmp", 01777)
	tmp, _ := e.C.LookupPath(e.Ctx, e.Root, "tmp")
	_, err = e.User(1000, 1000).Create(e.Ctx, tmp, "a", wire.CreateHow{Mode: wire.Guarded})
	e.OK(err, "CREATE in sticky dir")
	_, err = e.User(1001, 1001).Remove(e.Ctx, tmp, "a")
	e.Status(err, wire.ErrPerm, "REMOVE other user's file in sticky dir")
	_, err = e.User(1000, 1000).Remove(e.Ctx, tmp, "a")
	e.OK(err, "REMOVE own file in sticky dir")
}

func testRmdir(e *Env) {
	d := e.Dir(e.Root, "d", 0755)
	e.File(d, "f", 0644, nil)
	_, err := e.C.Rmdir(e.Ctx, e.Root, "d")
	e.Status(err, wire.ErrNotEmpty, "RMDIR non-empty")
	_, err = e.C.Remove(e.Ctx, d, "f")
	e.OK(err, "REMOVE")
	res, err := e.C.Rmdir(e.Ctx, e.Root, "d")
	e.OK(err, "RMDIR")
	if !res.Wcc.After.Set {
		e.T.Fatal("RMDIR without wcc")
	}
	_, err = e.C.Rmdir(e.Ctx, e.Root, "d")
	e.Status(err, wire.ErrNoEnt, "RMDIR missing")
	e.File(e.Root, "f", 0644, nil)
	_, err = e.C.Rmdir(e.Ctx, e.Root, "f")
	e.Status(err, wire.ErrNotDir, "RMDIR of a file")
}

func testRename(e *Env) {
	a := e.Dir(e.Root, "a", 0755)
	b := e.Dir(e.Root, "b", 0755)
	f := e.File(a, "f", 0644, []byte("data"))
	res, err := e.C.Rename(e.Ctx, a, "f", b, "g")
	e.OK(err, "RENAME")
	if !res.FromWcc.Before.Set || !res.FromWcc.After.Set || !res.ToWcc.After.Set {
		e.T.Fatalf("RENAME wcc %+v", res)
	}
	// The handle survives the rename.
	data, err := e.C.ReadAll(e.Ctx, f)
	e.OK(err, "read renamed file by old handle")
	if string(data) != "data" {
		e.T.Fatalf("content %q", data)
	}
	lk, err := e.C.Lookup(e.Ctx, b, "g")
	e.OK(err, "LOOKUP new name")
	if !bytes.Equal(lk.FH, f) {
		e.T.Fatal("renamed file has a new handle")
	}
	_, err = e.C.Lookup(e.Ctx, a, "f")
	e.Status(err, wire.ErrNoEnt, "LOOKUP old name")
	// Replace an existing file.
	e.File(b, "h", 0644, []byte("old"))
	_, err = e.C.Rename(e.Ctx, b, "g", b, "h")
	e.OK(err, "RENAME over a file")
	data, _ = e.C.ReadAll(e.Ctx, mustLookup(e, b, "h"))
	if string(data) != "data" {
		e.T.Fatalf("replaced content %q", data)
	}
	_, err = e.C.Rename(e.Ctx, a, "missing", b, "x")
	e.Status(err, wire.ErrNoEnt, "RENAME missing")
	// A directory over a non-empty directory.
	e.Dir(a, "d1", 0755)
	d2 := e.Dir(a, "d2", 0755)
	e.File(d2, "x", 0644, nil)
	_, err = e.C.Rename(e.Ctx, a, "d1", a, "d2")
	if st := client.StatusOf(err); st != wire.ErrNotEmpty && st != wire.ErrExist {
		e.T.Fatalf("RENAME over a non-empty directory: %v", err)
	}
	// A file over a directory.
	_, err = e.C.Rename(e.Ctx, b, "h", a, "d2")
	e.Status(err, wire.ErrIsDir, "RENAME file over directory")
	// A directory into itself.
	_, err = e.C.Rename(e.Ctx, e.Root, "a", a, "inside")
	e.Status(err, wire.ErrInval, "RENAME a directory into itself")
}

func mustLookup(e *Env, dir []byte, name string) []byte {
	e.T.Helper()
	res, err := e.C.Lookup(e.Ctx, dir, name)
	e.OK(err, "LOOKUP "+name)
	return res.FH
}

func testLink(e *Env) {
	info, err := e.C.Fsinfo(e.Ctx, e.Root)
	e.OK(err, "FSINFO")
	f := e.File(e.Root, "f", 0644, []byte("shared"))
	d := e.Dir(e.Root, "d", 0755)
	res, err := e.C.Link(e.Ctx, f, d, "g")
	if info.Properties&wire.FSFLink == 0 {
		e.Status(err, wire.ErrNotSupp, "LINK without FSF3_LINK")
		return
	}
	e.OK(err, "LINK")
	if !res.Attr.Set || res.Attr.Attr.Nlink != 2 || !res.DirWcc.After.Set {
		e.T.Fatalf("LINK %+v", res)
	}
	g := mustLookup(e, d, "g")
	if e.Attr(g).FileID != e.Attr(f).FileID {
		e.T.Fatal("link is another file")
	}
	_, err = e.C.Link(e.Ctx, f, d, "g")
	e.Status(err, wire.ErrExist, "LINK existing name")
	_, err = e.C.Link(e.Ctx, d, e.Root, "dlink")
	e.Status(err, wire.ErrIsDir, "LINK of a directory")
	_, err = e.C.Link(e.Ctx, f, f, "x")
	e.Status(err, wire.ErrNotDir, "LINK into a file")
	_, err = e.C.Remove(e.Ctx, e.Root, "f")
	e.OK(err, "REMOVE one name")
	data, err := e.C.ReadAll(e.Ctx, g)
	e.OK(err, "read the other name")
	if string(data) != "shared" || e.Attr(g).Nlink != 1 {
		e.T.Fatal("link content or count wrong after REMOVE")
	}
}

func testReaddir(e *Env) {
	d := e.Dir(e.Root, "d", 0755)
	for i := 0; i < 10; i++ {
		e.File(d, fmt.Sprintf("file%02d", i), 0644, nil)
	}
	res, err := e.C.Readdir(e.Ctx, d, 0, [8]byte{}, 8192)
	e.OK(err, "READDIR")
	if !res.EOF || len(res.Entries) != 12 || !res.DirAttr.Set {
		e.T.Fatalf("READDIR: eof %v, %d entries", res.EOF, len(res.Entries))
	}
	names := map[string]bool{}
	for _, x := range res.Entries {
		names[x.Name] = true
	}
	if !names["."] || !names[".."] || !names["file00"] || !names["file09"] {
		e.T.Fatalf("names %v", names)
	}
	// The reply fits count as knfsd counts it: the entries with the list
	// end and eof are at most count (the directory attributes and the
	// verifier before them are not counted).
	for _, count := range []uint32{200, 256, 333, 512} {
		res, err := e.C.Readdir(e.Ctx, d, 0, [8]byte{}, count)
		e.OK(err, fmt.Sprintf("READDIR count %d", count))
		if n := dirListSize(len(res.Append(nil)), res.DirAttr); n > int(count) || len(res.Entries) == 0 {
			e.T.Fatalf("READDIR count %d: entries and list end are %d bytes, %d entries", count, n, len(res.Entries))
		}
		// One more entry would not have fitted.
		if !res.EOF {
			more, _ := e.C.Readdir(e.Ctx, d, res.Entries[len(res.Entries)-1].Cookie, res.Verf, count)
			next := more.Entries[0]
			if n := dirListSize(len(res.Append(nil)), res.DirAttr) + wire.EntrySize(next.Name); n <= int(count) {
				e.T.Fatalf("READDIR count %d: stopped early (%d would fit)", count, n)
			}
		}
	}
	// "." takes 28 bytes: a count of 35 leaves it 27 after the list end
	// and eof, one of 36 exactly its 28.
	_, err = e.C.Readdir(e.Ctx, d, 0, [8]byte{}, 35)
	e.Status(err, wire.ErrTooSmall, "READDIR count 35")
	one, err := e.C.Readdir(e.Ctx, d, 0, [8]byte{}, 36)
	e.OK(err, "READDIR count 36")
	if len(one.Entries) != 1 || one.Entries[0].Name != "." {
		e.T.Fatalf("READDIR count 36: %d entries, want only \".\"", len(one.Entries))
	}
	// The cookie verifier is the backend's: zero for every backend these
	// cases run on (their cookies live as long as their handles), as
	// knfsd's, which keeps the Linux client's whole directory cache on a
	// first listing (vfs package documentation); resuming with it or
	// with zero works, with another one is NFS3ERR_BAD_COOKIE; a cookie
	// past the end is an empty eof list.
	all, err := e.C.Readdir(e.Ctx, d, 0, [8]byte{}, 8192)
	e.OK(err, "READDIR")
	if all.Verf != ([8]byte{}) {
		e.T.Fatalf("READDIR returned cookie verifier %x, want zero", all.Verf)
	}
	last := all.Entries[len(all.Entries)-1].Cookie
	mid := all.Entries[5].Cookie
	for _, v := range [][8]byte{all.Verf, {}} {
		res, err = e.C.Readdir(e.Ctx, d, mid, v, 8192)
		e.OK(err, fmt.Sprintf("READDIR resumed with verifier %x", v))
		if len(res.Entries) != len(all.Entries)-6 || !res.EOF || res.Verf != all.Verf {
			e.T.Fatalf("resume after cookie with verifier %x: %d entries, verifier %x", v, len(res.Entries), res.Verf)
		}
	}
	foreign := all.Verf
	foreign[0] ^= 0xde
	foreign[7] ^= 0x01
	_, err = e.C.Readdir(e.Ctx, d, mid, foreign, 8192)
	e.Status(err, wire.ErrBadCookie, "READDIR with a foreign verifier")
	_, err = e.C.Readdirplus(e.Ctx, d, mid, foreign, 8192, 8192)
	e.Status(err, wire.ErrBadCookie, "READDIRPLUS with a foreign verifier")
	res, err = e.C.Readdir(e.Ctx, d, 0, foreign, 8192)
	e.OK(err, "READDIR from cookie 0 with any verifier")
	res, err = e.C.Readdir(e.Ctx, d, last, all.Verf, 8192)
	e.OK(err, "READDIR at the end")
	if len(res.Entries) != 0 || !res.EOF {
		e.T.Fatalf("READDIR at end: %+v", res)
	}
	// Cookies no backend issues: above 2^63-1 is a bad cookie; 2^63-1 is
	// past the end of the hash and offset spaces (an empty eof list) or,
	// on a backend numbering entries, never issued (a bad cookie).
	for _, bogus := range []uint64{math.MaxInt64, 1<<63 + 5} {
		res, err = e.C.Readdir(e.Ctx, d, bogus, [8]byte{}, 8192)
		rp, errp := e.C.Readdirplus(e.Ctx, d, bogus, [8]byte{}, 8192, 8192)
		if bogus > math.MaxInt64 || err != nil {
			e.Status(err, wire.ErrBadCookie, fmt.Sprintf("READDIR cookie %#x", bogus))
			e.Status(errp, wire.ErrBadCookie, fmt.Sprintf("READDIRPLUS cookie %#x", bogus))
			continue
		}
		if len(res.Entries) != 0 || !res.EOF {
			e.T.Fatalf("READDIR cookie %#x: %d entries, eof %v", bogus, len(res.Entries), res.EOF)
		}
		e.OK(errp, fmt.Sprintf("READDIRPLUS cookie %#x", bogus))
		if len(rp.Entries) != 0 || !rp.EOF {
			e.T.Fatalf("READDIRPLUS cookie %#x: %d entries", bogus, len(rp.Entries))
		}
	}
	f := mustLookup(e, d, "file00")
	_, err = e.C.Readdir(e.Ctx, f, 0, [8]byte{}, 8192)
	e.Status(err, wire.ErrNotDir, "READDIR of a file")
	closed := e.Dir(e.Root, "closed", 0700)
	_, err = e.User(1000, 1000).Readdir(e.Ctx, closed, 0, [8]byte{}, 8192)
	e.Status(err, wire.ErrAcces, "READDIR without read permission")
}

func testReaddirLarge(e *Env) {
	d := e.Dir(e.Root, "big", 0755)
	const n = 2000
	for i := 0; i < n; i++ {
		_, err := e.C.Create(e.Ctx, d, fmt.Sprintf("entry-%04d", i), wire.CreateHow{Mode: wire.Guarded})
		e.OK(err, "CREATE")
	}
	for _, count := range []uint32{1024, 4096, 32768} {
		names := e.Names(d, count)
		if len(names) != n+2 {
			e.T.Fatalf("count %d: %d distinct names, want %d", count, len(names), n+2)
		}
		for name, k := range names {
			if k != 1 {
				e.T.Fatalf("count %d: %q listed %d times", count, name, k)
			}
		}
		for i := 0; i < n; i++ {
			if names[fmt.Sprintf("entry-%04d", i)] != 1 {
				e.T.Fatalf("count %d: entry-%04d missing", count, i)
			}
		}
	}
	plus, err := e.C.ReaddirplusAll(e.Ctx, d, 2048, 16384)
	e.OK(err, "READDIRPLUS all")
	if len(plus) != n+2 {
		e.T.Fatalf("READDIRPLUS listed %d entries", len(plus))
	}
}

func testReaddirplus(e *Env) {
	d := e.Dir(e.Root, "d", 0755)
	for i := 0; i < 5; i++ {
		e.File(d, fmt.Sprintf("f%d", i), 0600, pattern(i*10, 0))
	}
	res, err := e.C.Readdirplus(e.Ctx, d, 0, [8]byte{}, 8192, 65536)
	e.OK(err, "READDIRPLUS")
	if !res.EOF || len(res.Entries) != 7 {
		e.T.Fatalf("READDIRPLUS %d entries eof %v", len(res.Entries), res.EOF)
	}
	for _, x := range res.Entries {
		if !x.Attr.Set || !x.FH.Set {
			e.T.Fatalf("entry %q without attributes or handle", x.Name)
		}
		a := e.Attr(x.FH.FH)
		if a.FileID != x.FileID || a.FileID != x.Attr.Attr.FileID {
			e.T.Fatalf("entry %q: handle names another file", x.Name)
		}
		if strings.HasPrefix(x.Name, "f") && (x.Attr.Attr.Size != uint64(10*int(x.Name[1]-'0')) || x.Attr.Attr.Mode != 0600) {
			e.T.Fatalf("entry %q attributes %+v", x.Name, x.Attr.Attr)
		}
	}
	// maxcount bounds the entries with the list end and eof, as READDIR's
	// count does.
	for _, max := range []uint32{400, 600, 1000} {
		r, err := e.C.Readdirplus(e.Ctx, d, 0, [8]byte{}, 8192, max)
		e.OK(err, fmt.Sprintf("READDIRPLUS maxcount %d", max))
		if n := dirListSize(len(r.Append(nil)), r.DirAttr); n > int(max) || len(r.Entries) == 0 {
			e.T.Fatalf("maxcount %d: entries and list end %d bytes, %d entries", max, n, len(r.Entries))
		}
	}
	// dircount is ignored, as knfsd ignores it: maxcount alone sizes the
	// reply (Linux clients before 5.18 send an eighth of maxcount).
	r, err := e.C.Readdirplus(e.Ctx, d, 0, [8]byte{}, uint32(2*wire.EntryPlusDirSize("f0")), 65536)
	e.OK(err, "READDIRPLUS small dircount")
	if len(r.Entries) != 7 || !r.EOF {
		e.T.Fatalf("READDIRPLUS with dircount for two entries and maxcount 65536: %d entries, eof %v; want all 7", len(r.Entries), r.EOF)
	}
	_, err = e.C.Readdirplus(e.Ctx, d, 0, [8]byte{}, 8192, 120)
	e.Status(err, wire.ErrTooSmall, "READDIRPLUS maxcount 120")
}

func testFsstat(e *Env) {
	res, err := e.C.Fsstat(e.Ctx, e.Root)
	e.OK(err, "FSSTAT")
	if !res.Attr.Set || res.TBytes == 0 || res.FBytes > res.TBytes || res.ABytes > res.TBytes {
		e.T.Fatalf("FSSTAT %+v", res)
	}
	_, err = e.C.Fsstat(e.Ctx, e.Root[:4])
	e.Status(err, wire.ErrBadHandle, "FSSTAT bad handle")
}

func testFsinfo(e *Env) {
	res, err := e.C.Fsinfo(e.Ctx, e.Root)
	e.OK(err, "FSINFO")
	if res.RTMax != 1<<20 || res.RTPref != 1<<20 || res.RTMult != 4096 || res.WTMax != 1<<20 || res.WTPref != 1<<20 ||
		res.WTMult != 4096 || res.DTPref != 1<<20 || res.MaxFileSize < 1<<40 || res.TimeDelta != (wire.Time{Nsec: 1}) ||
		res.Properties&(wire.FSFSymlink|wire.FSFHomogeneous|wire.FSFCanSetTime) != wire.FSFSymlink|wire.FSFHomogeneous|wire.FSFCanSetTime ||
		!res.Attr.Set {
		e.T.Fatalf("FSINFO %+v", res)
	}
}

func testPathconf(e *Env) {
	res, err := e.C.Pathconf(e.Ctx, e.Root)
	e.OK(err, "PATHCONF")
	if res.NameMax != 255 || !res.NoTrunc || !res.ChownRestricted || res.CaseInsensitive || !res.CasePreserving || res.LinkMax == 0 || !res.Attr.Set {
		e.T.Fatalf("PATHCONF %+v", res)
	}
}

func testCommit(e *Env) {
	f := e.File(e.Root, "f", 0644, nil)
	w, err := e.C.Write(e.Ctx, f, 0, []byte("unstable"), wire.Unstable)
	e.OK(err, "WRITE")
	c, err := e.C.Commit(e.Ctx, f, 0, 0)
	e.OK(err, "COMMIT")
	if c.Verf != w.Verf || !c.Wcc.After.Set || c.Wcc.After.Attr.Size != 8 {
		e.T.Fatalf("COMMIT %+v (write verf %x)", c, w.Verf)
	}
	_, err = e.C.Commit(e.Ctx, e.Root, 0, 0)
	e.Status(err, wire.ErrIsDir, "COMMIT of a directory")
}

func testPermissions(e *Env) {
	user := e.User(1000, 1000)
	// A user cannot create in root's 0755 directory.
	_, err := user.Create(e.Ctx, e.Root, "f", wire.CreateHow{Mode: wire.Guarded})
	e.Status(err, wire.ErrAcces, "CREATE in a root directory")
	_, err = user.Mkdir(e.Ctx, e.Root, "d", wire.Sattr{})
	e.Status(err, wire.ErrAcces, "MKDIR in a root directory")
	// Reading and writing follow the mode bits ...
	secret := e.File(e.Root, "secret", 0600, []byte("s"))
	_, err = user.Read(e.Ctx, secret, 0, 1)
	e.Status(err, wire.ErrAcces, "READ of root's 0600 file")
	_, err = user.Write(e.Ctx, secret, 0, []byte("x"), wire.FileSync)
	e.Status(err, wire.ErrAcces, "WRITE to root's 0600 file")
	pub := e.File(e.Root, "pub", 0644, []byte("p"))
	_, err = user.Read(e.Ctx, pub, 0, 1)
	e.OK(err, "READ of a 0644 file")
	_, err = user.Write(e.Ctx, pub, 0, []byte("x"), wire.FileSync)
	e.Status(err, wire.ErrAcces, "WRITE to a 0644 file of root")
	_, err = user.Setattr(e.Ctx, pub, wire.Sattr{Size: wire.SetUint64{Set: true}}, nil)
	e.Status(err, wire.ErrAcces, "truncate of a 0644 file of root")
	// ... but the owner may read and write his own 0000 file (knfsd's
	// owner override).
	home := e.Dir(e.Root, "home", 0755)
	_, err = e.C.Setattr(e.Ctx, home, wire.Sattr{UID: wire.SetUint32{Set: true, V: 1000}, GID: wire.SetUint32{Set: true, V: 1000}}, nil)
	e.OK(err, "chown home")
	own, err := user.Create(e.Ctx, home, "own", wire.CreateHow{Mode: wire.Guarded, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true}}})
	e.OK(err, "CREATE mode 0")
	if own.Attr.Attr.Mode != 0 {
		e.T.Fatalf("mode %o", own.Attr.Attr.Mode)
	}
	_, err = user.Write(e.Ctx, own.FH.FH, 0, []byte("mine"), wire.Unstable)
	e.OK(err, "owner WRITE to a 0000 file")
	r, err := user.Read(e.Ctx, own.FH.FH, 0, 10)
	e.OK(err, "owner READ of a 0000 file")
	if string(r.Data) != "mine" {
		e.T.Fatalf("read %q", r.Data)
	}
	_, err = e.User(1001, 1000).Read(e.Ctx, own.FH.FH, 0, 10)
	e.Status(err, wire.ErrAcces, "READ of another's 0000 file")
	// Group write on a directory.
	shared := e.Dir(e.Root, "shared", 0775)
	_, err = e.C.Setattr(e.Ctx, shared, wire.Sattr{GID: wire.SetUint32{Set: true, V: 500}}, nil)
	e.OK(err, "chgrp shared")
	_, err = e.User(1002, 1002, 500).Create(e.Ctx, shared, "g", wire.CreateHow{Mode: wire.Guarded})
	e.OK(err, "CREATE through a supplementary group")
	_, err = e.User(1003, 1003).Remove(e.Ctx, shared, "g")
	e.Status(err, wire.ErrAcces, "REMOVE without write permission")
	_, err = e.User(1003, 1003).Rename(e.Ctx, shared, "g", home, "stolen")
	e.Status(err, wire.ErrAcces, "RENAME without write permission")
	// Root may not execute a file with no x bit.
	acc, err := e.C.Access(e.Ctx, pub, wire.AccessExecute)
	e.OK(err, "ACCESS")
	if acc.Access != 0 {
		e.T.Fatal("root granted EXECUTE on a 0644 file")
	}
}

func testGarbageArgs(e *Env) {
	f := e.File(e.Root, "f", 0644, []byte("x"))
	long := make([]byte, 65)
	copy(long, f)
	cases := []struct {
		name string
		proc uint32
		args []byte
	}{
		{"65-byte handle", wire.ProcGetattr, wire.AppendFH(nil, long)},
		{"empty handle", wire.ProcGetattr, wire.AppendFH(nil, nil)},
		{"no args", wire.ProcGetattr, nil},
		{"truncated READ", wire.ProcRead, (&wire.ReadArgs{FH: f, Count: 10}).Append(nil)[:len(f)+8]},
		{"WRITE count mismatch", wire.ProcWrite, func() []byte {
			b := (&wire.WriteArgs{FH: f, Count: 3, Data: []byte("abc")}).Append(nil)
			binary.BigEndian.PutUint32(b[4+xdr.PaddedLen(len(f))+8:], 4)
			return b
		}()},
		{"bad createmode", wire.ProcCreate, xdr.AppendUint32((&wire.DirOpArgs{Dir: f, Name: "n"}).Append(nil), 7)},
		{"bad stable_how", wire.ProcWrite, func() []byte {
			b := (&wire.WriteArgs{FH: f, Count: 1, Data: []byte("a")}).Append(nil)
			binary.BigEndian.PutUint32(b[4+xdr.PaddedLen(len(f))+12:], 3)
			return b
		}()},
		{"1025-byte name", wire.ProcLookup, (&wire.DirOpArgs{Dir: e.Root, Name: strings.Repeat("x", 1025)}).Append(nil)},
		{"bad ftype", wire.ProcMknod, xdr.AppendUint32((&wire.DirOpArgs{Dir: e.Root, Name: "n"}).Append(nil), 0)},
	}
	for _, c := range cases {
		_, err := e.C.CallRaw(e.Ctx, c.proc, c.args)
		e.Garbage(err, c.name)
	}
	// The connection is still usable.
	e.OK(e.C.Null(e.Ctx), "NULL after garbage")
	e.Attr(f)
}

// testOwnerMetadata: the calls a user's tools make one at a time in the
// user's own files (tar x, cp -p, an editor's save, git), which the OS
// backend answers without the identity thread: SETATTR by the owner
// (mode, explicit times, times now, truncation) with wcc_data bracketing
// each change, RENAME within one directory (both wcc_data are the one
// directory's, after the change), LINK; and the same calls refused where
// the kernel refuses the caller, with names holding "/" or "..".
func testOwnerMetadata(e *Env) {
	u := e.User(1000, 1000)
	e.Dir(e.Root, "home", 0777)
	home := mustLookup(e, e.Root, "home")
	cr, err := u.Create(e.Ctx, home, "f", wire.CreateHow{Mode: wire.Guarded, Attr: wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o644}}})
	e.OK(err, "CREATE as the user")
	f := cr.FH.FH
	e.OK(u.WriteAll(e.Ctx, f, []byte("hello")), "write")
	before := e.Attr(f)
	res, err := u.Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o4750}}, nil)
	e.OK(err, "chmod u+s by the owner")
	if !res.Wcc.Before.Set || res.Wcc.Before.Attr.Ctime != before.Ctime || !res.Wcc.After.Set || res.Wcc.After.Attr.Mode != 0o4750 {
		e.T.Fatalf("chmod wcc %+v, before %+v", res.Wcc, before)
	}
	res, err = u.Setattr(e.Ctx, f, wire.Sattr{Size: wire.SetUint64{Set: true, V: 2}}, nil)
	e.OK(err, "truncate by the owner")
	if a := res.Wcc.After.Attr; !res.Wcc.After.Set || a.Size != 2 || a.Mode != 0o750 {
		e.T.Fatalf("after a truncate by the (non-root) owner: %+v, want size 2, mode 0750 (set-user-ID cleared)", res.Wcc.After)
	}
	when := wire.Time{Sec: 1_000_000_000, Nsec: 7}
	res, err = u.Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o444},
		Atime: wire.SetTime{How: wire.SetToClientTime, Time: when}, Mtime: wire.SetTime{How: wire.SetToClientTime, Time: when}}, nil)
	e.OK(err, "chmod and explicit times by the owner")
	if a := res.Wcc.After.Attr; a.Mode != 0o444 || a.Mtime.Sec != when.Sec || a.Atime.Sec != when.Sec {
		e.T.Fatalf("after chmod and times: %+v", a)
	}
	_, err = u.Setattr(e.Ctx, f, wire.Sattr{Mtime: wire.SetTime{How: wire.SetToServerTime}, Atime: wire.SetTime{How: wire.SetToServerTime}}, nil)
	e.OK(err, "times to now by the owner of a read-only file")
	if e.Attr(f).Mtime.Sec < 1_600_000_000 {
		e.T.Fatal("SET_TO_SERVER_TIME by the owner did not set the current time")
	}
	_, err = u.Setattr(e.Ctx, f, wire.Sattr{GID: wire.SetUint32{Set: true, V: 3000}}, nil)
	e.Status(err, wire.ErrPerm, "chgrp by the owner to a group it is not in")
	_, err = e.User(2000, 2000).Setattr(e.Ctx, f, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o777}}, nil)
	e.Status(err, wire.ErrPerm, "chmod by another user")

	// RENAME within one directory.
	dirBefore := e.Attr(home)
	rr, err := u.Rename(e.Ctx, home, "f", home, "g")
	e.OK(err, "RENAME within the directory")
	if !rr.FromWcc.Before.Set || rr.FromWcc.Before.Attr.Ctime != dirBefore.Ctime || !rr.FromWcc.After.Set || !rr.ToWcc.After.Set ||
		rr.FromWcc.After.Attr != rr.ToWcc.After.Attr || rr.ToWcc.After.Attr != e.Attr(home) {
		e.T.Fatalf("RENAME wcc %+v, directory before %+v", rr, dirBefore)
	}
	if !bytes.Equal(mustLookup(e, home, "g"), f) {
		e.T.Fatal("the renamed file has a new handle")
	}
	for _, bad := range []string{"a/b", "../g2", ".."} {
		_, err = u.Rename(e.Ctx, home, "g", home, bad)
		if err == nil {
			e.T.Fatalf("RENAME to %q succeeded", bad)
		}
	}
	if _, err := e.C.Lookup(e.Ctx, e.Root, "g2"); client.StatusOf(err) != wire.ErrNoEnt {
		e.T.Fatalf("RENAME left the directory: %v", err)
	}
	// In a sticky directory the owner of neither file nor directory may
	// not replace another user's file.
	e.Dir(e.Root, "tmp", 0o1777)
	tmp := mustLookup(e, e.Root, "tmp")
	_, err = e.User(2000, 2000).Create(e.Ctx, tmp, "theirs", wire.CreateHow{Mode: wire.Guarded})
	e.OK(err, "CREATE as another user")
	_, err = u.Create(e.Ctx, tmp, "mine", wire.CreateHow{Mode: wire.Guarded})
	e.OK(err, "CREATE as the user")
	_, err = u.Rename(e.Ctx, tmp, "mine", tmp, "theirs")
	e.Status(err, wire.ErrPerm, "RENAME over another user's file in a sticky directory")

	// LINK of the user's own file, where the backend has links.
	info, err := e.C.Fsinfo(e.Ctx, e.Root)
	e.OK(err, "FSINFO")
	if info.Properties&wire.FSFLink == 0 {
		return
	}
	lr, err := u.Link(e.Ctx, f, home, "h")
	e.OK(err, "LINK by the owner")
	if !lr.Attr.Set || lr.Attr.Attr.Nlink != 2 || !lr.DirWcc.After.Set {
		e.T.Fatalf("LINK result %+v", lr)
	}
	_, err = u.Link(e.Ctx, f, home, "x/y")
	if err == nil {
		e.T.Fatal("LINK to a name with a slash succeeded")
	}
}

// testDirWcc: the directory's wcc_data (RFC 1813 section 2.6) of CREATE
// (each mode), REMOVE and RMDIR as a user, succeeding and refused, in a
// directory the user may write and in one it may not: pre-op attributes
// are the directory's just before the call (an mtime set by SETATTR just
// before, new for each call, so a cached or swapped pre-op shows), post-op
// attributes its attributes just after (a new mtime when the call changed
// the directory, the set one when it did not).
func testDirWcc(e *Env) {
	u := e.User(1000, 1000)
	open := e.Dir(e.Root, "open", 0o777)
	shut := e.Dir(e.Root, "shut", 0o755)
	e.File(shut, "x", 0o644, nil)
	e.Dir(open, "sub", 0o755)
	step := int64(0)
	check := func(what string, dir []byte, changes bool, run func() (wire.WccData, error), want wire.Status) {
		e.T.Helper()
		step++
		set := wire.Time{Sec: uint32(1_000_000_000 + step*1000), Nsec: uint32(step)}
		_, err := e.C.Setattr(e.Ctx, dir, wire.Sattr{Mtime: wire.SetTime{How: wire.SetToClientTime, Time: set}}, nil)
		e.OK(err, what+": SETATTR mtime of the directory")
		pre := e.Attr(dir)
		if pre.Mtime != set {
			e.T.Fatalf("%s: directory mtime %+v after SETATTR %+v", what, pre.Mtime, set)
		}
		w, err := run()
		if want == wire.OK {
			e.OK(err, what)
		} else {
			e.Status(err, want, what)
		}
		post := e.Attr(dir)
		if b := w.Before; !b.Set || b.Attr.Mtime != pre.Mtime || b.Attr.Ctime != pre.Ctime || b.Attr.Size != pre.Size {
			e.T.Fatalf("%s: pre-op %+v, the directory before the call %+v", what, b, pre)
		}
		a := w.After
		if !a.Set || a.Attr.Mtime != post.Mtime || a.Attr.Ctime != post.Ctime || a.Attr.Size != post.Size || a.Attr.Nlink != post.Nlink || a.Attr.FileID != pre.FileID {
			e.T.Fatalf("%s: post-op %+v, the directory after the call %+v", what, a, post)
		}
		if changed := a.Attr.Mtime != set; changed != changes {
			e.T.Fatalf("%s: post-op mtime %+v with %+v set before (changes the directory: %v)", what, a.Attr.Mtime, set, changes)
		}
	}
	create := func(dir []byte, name string, how wire.CreateHow) func() (wire.WccData, error) {
		return func() (wire.WccData, error) {
			res, err := u.Create(e.Ctx, dir, name, how)
			return res.DirWcc, err
		}
	}
	remove := func(dir []byte, name string) func() (wire.WccData, error) {
		return func() (wire.WccData, error) {
			res, err := u.Remove(e.Ctx, dir, name)
			return res.Wcc, err
		}
	}
	rmdir := func(dir []byte, name string) func() (wire.WccData, error) {
		return func() (wire.WccData, error) {
			res, err := u.Rmdir(e.Ctx, dir, name)
			return res.Wcc, err
		}
	}
	mode := wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o640}}
	verf := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	check("CREATE UNCHECKED", open, true, create(open, "a", wire.CreateHow{Mode: wire.Unchecked, Attr: mode}), wire.OK)
	check("CREATE UNCHECKED of an existing file", open, false, create(open, "a", wire.CreateHow{Mode: wire.Unchecked, Attr: mode}), wire.OK)
	check("CREATE UNCHECKED with times", open, true, create(open, "t", wire.CreateHow{Mode: wire.Unchecked,
		Attr: wire.Sattr{Mtime: wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: 7}}}}), wire.OK)
	check("CREATE GUARDED", open, true, create(open, "b", wire.CreateHow{Mode: wire.Guarded, Attr: mode}), wire.OK)
	check("CREATE GUARDED of an existing name", open, false, create(open, "b", wire.CreateHow{Mode: wire.Guarded}), wire.ErrExist)
	check("CREATE EXCLUSIVE", open, true, create(open, "c", wire.CreateHow{Mode: wire.Exclusive, Verf: verf}), wire.OK)
	check("CREATE EXCLUSIVE again", open, false, create(open, "c", wire.CreateHow{Mode: wire.Exclusive, Verf: verf}), wire.OK)
	check("CREATE of a bad name", open, false, create(open, "a/b", wire.CreateHow{Mode: wire.Guarded}), wire.ErrAcces)
	check("CREATE of .", open, false, create(open, ".", wire.CreateHow{Mode: wire.Guarded}), wire.ErrExist)
	check("CREATE in a directory the user may not write", shut, false, create(shut, "n", wire.CreateHow{Mode: wire.Guarded}), wire.ErrAcces)
	check("REMOVE", open, true, remove(open, "a"), wire.OK)
	check("REMOVE of a missing name", open, false, remove(open, "a"), wire.ErrNoEnt)
	check("REMOVE in a directory the user may not write", shut, false, remove(shut, "x"), wire.ErrAcces)
	check("RMDIR", open, true, rmdir(open, "sub"), wire.OK)
	check("RMDIR of a missing name", open, false, rmdir(open, "sub"), wire.ErrNoEnt)
}

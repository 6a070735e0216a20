package conformance

import (
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// READ, WRITE, COMMIT.

func testWriteRead(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	data := pattern(3000, 9)
	res, err := e.C.Write(e.Ctx, fh, 0, data, wire.FileSync)
	if err != nil {
		return ok(err, "WRITE FILE_SYNC")
	}
	if res.Count != uint32(len(data)) {
		return Warnf("WRITE wrote %d of %d bytes", res.Count, len(data))
	}
	if res.Committed != wire.FileSync {
		return fmt.Errorf("WRITE FILE_SYNC answered committed %v", res.Committed)
	}
	r, err := e.C.Read(e.Ctx, fh, 0, 4096)
	if err != nil {
		return ok(err, "READ")
	}
	if !r.EOF {
		return fmt.Errorf("READ of the whole file without eof")
	}
	if r.Count != uint32(len(r.Data)) {
		return fmt.Errorf("READ count %d but %d bytes of data", r.Count, len(r.Data))
	}
	return sameBytes(r.Data, data, "READ")
}

func testWriteWcc(e *Env) error {
	fh, err := e.file(e.Dir, "f", pattern(100, 1))
	if err != nil {
		return err
	}
	res, err := e.C.Write(e.Ctx, fh, 100, pattern(400, 2), wire.Unstable)
	if err != nil {
		return ok(err, "WRITE")
	}
	if !res.Wcc.Before.Set || !res.Wcc.After.Set {
		return Warnf("WRITE without full wcc_data (before %v after %v)", res.Wcc.Before.Set, res.Wcc.After.Set)
	}
	if res.Wcc.Before.Attr.Size != 100 || res.Wcc.After.Attr.Size != 500 {
		return fmt.Errorf("WRITE wcc sizes %d -> %d, want 100 -> 500", res.Wcc.Before.Attr.Size, res.Wcc.After.Attr.Size)
	}
	return nil
}

func testWriteOffset(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.C.Write(e.Ctx, fh, 10000, []byte("tail"), wire.FileSync); err != nil {
		return ok(err, "WRITE at 10000")
	}
	a, err := e.attr(fh)
	if err != nil {
		return err
	}
	if a.Size != 10004 {
		return fmt.Errorf("size %d after writing 4 bytes at 10000", a.Size)
	}
	r, err := e.C.Read(e.Ctx, fh, 9998, 100)
	if err != nil {
		return ok(err, "READ")
	}
	return sameBytes(r.Data, []byte("\x00\x00tail"), "READ across the hole")
}

func testReadEOF(e *Env) error {
	fh, err := e.file(e.Dir, "f", pattern(100, 4))
	if err != nil {
		return err
	}
	r, err := e.C.Read(e.Ctx, fh, 50, 50)
	if err != nil {
		return ok(err, "READ to the end")
	}
	if r.Count != 50 {
		return fmt.Errorf("READ 50 at 50 of 100: count %d", r.Count)
	}
	if !r.EOF {
		return Warnf("READ ending at end of file without eof")
	}
	r, err = e.C.Read(e.Ctx, fh, 1000, 10)
	if err != nil {
		return ok(err, "READ past the end")
	}
	if r.Count != 0 || !r.EOF {
		return fmt.Errorf("READ past the end: count %d eof %v, want 0 and true", r.Count, r.EOF)
	}
	return nil
}

func testReadZero(e *Env) error {
	fh, err := e.file(e.Dir, "f", pattern(10, 4))
	if err != nil {
		return err
	}
	r, err := e.C.Read(e.Ctx, fh, 0, 0)
	if err != nil {
		return ok(err, "READ of count 0")
	}
	if r.Count != 0 {
		return fmt.Errorf("READ of count 0 returned %d bytes", r.Count)
	}
	return nil
}

func testReadLarge(e *Env) error {
	info, err := e.C.Fsinfo(e.Ctx, e.Root)
	if err != nil {
		return ok(err, "FSINFO")
	}
	n := int(info.WTPref)
	if n > 1<<20 {
		n = 1 << 20
	}
	data := pattern(n+12345, 5)
	fh, err := e.file(e.Dir, "f", data)
	if err != nil {
		return err
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ")
	}
	return sameBytes(got, data, "READ of a large file")
}

func testReadDir(e *Env) error {
	_, err := e.C.Read(e.Ctx, e.Dir, 0, 10)
	switch st := statusOf(err); st {
	case wire.ErrIsDir:
		return nil
	case wire.ErrInval:
		return Warnf("READ of a directory: NFS3ERR_INVAL, knfsd answers NFS3ERR_ISDIR")
	default:
		return fmt.Errorf("READ of a directory: got %v, want NFS3ERR_ISDIR", st)
	}
}

func testWriteDir(e *Env) error {
	_, err := e.C.Write(e.Ctx, e.Dir, 0, []byte("x"), wire.FileSync)
	switch st := statusOf(err); st {
	case wire.ErrIsDir:
		return nil
	case wire.ErrInval:
		return Warnf("WRITE to a directory: NFS3ERR_INVAL, knfsd answers NFS3ERR_ISDIR")
	default:
		return fmt.Errorf("WRITE to a directory: got %v, want NFS3ERR_ISDIR", st)
	}
}

func testReadStale(e *Env) error {
	return e.wantStaleFile("READ of a removed file", func(fh []byte) error {
		_, err := e.C.Read(e.Ctx, fh, 0, 10)
		return err
	})
}

func testWriteStale(e *Env) error {
	return e.wantStaleFile("WRITE to a removed file", func(fh []byte) error {
		_, err := e.C.Write(e.Ctx, fh, 0, []byte("x"), wire.FileSync)
		return err
	})
}

func testReadBadHandle(e *Env) error {
	_, err := e.C.Read(e.Ctx, badHandle(), 0, 10)
	return wantBadHandle(err, "READ of a 3-byte handle")
}

func testWriteVerf(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	w1, err := e.C.Write(e.Ctx, fh, 0, pattern(100, 1), wire.Unstable)
	if err != nil {
		return ok(err, "WRITE UNSTABLE")
	}
	w2, err := e.C.Write(e.Ctx, fh, 100, pattern(100, 2), wire.Unstable)
	if err != nil {
		return ok(err, "WRITE UNSTABLE")
	}
	if w1.Verf != w2.Verf {
		return fmt.Errorf("write verifier changed between two WRITEs: %x, %x", w1.Verf, w2.Verf)
	}
	c, err := e.C.Commit(e.Ctx, fh, 0, 0)
	if err != nil {
		return ok(err, "COMMIT")
	}
	if c.Verf != w1.Verf {
		return fmt.Errorf("COMMIT verifier %x differs from WRITE's %x", c.Verf, w1.Verf)
	}
	got, err := e.C.ReadAll(e.Ctx, fh)
	if err != nil {
		return ok(err, "READ")
	}
	return sameBytes(got, append(pattern(100, 1), pattern(100, 2)...), "READ after COMMIT")
}

func testCommitRange(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	if _, err := e.C.Write(e.Ctx, fh, 0, pattern(8192, 1), wire.Unstable); err != nil {
		return ok(err, "WRITE")
	}
	c, err := e.C.Commit(e.Ctx, fh, 4096, 4096)
	if err != nil {
		return ok(err, "COMMIT of a range")
	}
	if !c.Wcc.After.Set {
		return Warnf("COMMIT without post-op attributes")
	}
	if c.Wcc.After.Attr.Size != 8192 {
		return fmt.Errorf("COMMIT post-op size %d, want 8192", c.Wcc.After.Attr.Size)
	}
	return nil
}

func testCommitDir(e *Env) error {
	_, err := e.C.Commit(e.Ctx, e.Dir, 0, 0)
	if statusOf(err) == wire.OK && !e.Cfg.Strict {
		return Warnf("COMMIT of a directory succeeded")
	}
	// Strict: ISDIR, as READ and WRITE of a directory (knfsd).
	return oneOfStatus(e, err, "COMMIT of a directory", wire.ErrIsDir, wire.ErrInval)
}

func testCommitStale(e *Env) error {
	return e.wantStaleFile("COMMIT of a removed file", func(fh []byte) error {
		_, err := e.C.Commit(e.Ctx, fh, 0, 0)
		return err
	})
}

func testWriteCountMismatch(e *Env) error {
	fh, err := e.file(e.Dir, "f", nil)
	if err != nil {
		return err
	}
	// WRITE3args with count 10 but 4 bytes of data.
	args := wire.AppendFH(nil, fh)
	args = appendU64(args, 0)
	args = appendU32(args, 10)
	args = appendU32(args, uint32(wire.FileSync))
	args = appendU32(args, 4)
	args = append(args, 'a', 'b', 'c', 'd')
	b, err := e.C.CallRaw(e.Ctx, wire.ProcWrite, args)
	// Strict: GARBAGE_ARGS, as knfsd's decoder (count must equal the
	// opaque's length); NFS3ERR_INVAL passes the tolerant profile.
	const what = "WRITE with count 10 and 4 bytes of data"
	if err != nil {
		return acceptStat(err, oncrpc.GarbageArgs, what)
	}
	var res wire.WriteRes
	if derr := decodeInto(b, &res); derr != nil {
		return derr
	}
	return oneOf(e, what, "NFS3 status "+res.Status.String(), "GARBAGE_ARGS", "NFS3 status "+wire.ErrInval.String())
}

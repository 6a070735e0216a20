package localfs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// A handle for an object outside the export root but on the same
// filesystem is stale, whether a client forges it (no valid
// authenticator) or this server signed it (the object was moved out
// locally after the handle was issued).
func TestOSOutsideRootHandleIsStale(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "export")
	outDir := filepath.Join(base, "outside")
	for _, d := range []string{root, outDir, filepath.Join(root, "in")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outFile := filepath.Join(outDir, "file")
	inFile := filepath.Join(root, "in", "file")
	for _, p := range []string{outFile, inFile} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kernelHandle := func(p string) unix.FileHandle {
		fh, _, err := unix.NameToHandleAt(unix.AT_FDCWD, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fh
	}
	for _, p := range []string{inFile, filepath.Join(root, "in")} {
		h, err := f.encode(kernelHandle(p))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.GetAttr(h); err != nil {
			t.Errorf("signed handle of %s inside the export: %v", p, err)
		}
	}
	for _, p := range []string{outFile, outDir, base} {
		fh := kernelHandle(p)
		// Forged: right layout, wrong authenticator.
		h, err := f.encode(fh)
		if err != nil {
			t.Fatal(err)
		}
		h[len(h)-1] ^= 1
		if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("forged handle of %s: %v, want ErrStale", p, err)
		}
		// Signed: the containment check rejects it.
		h, _ = f.encode(fh)
		if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("signed handle of %s outside the export: %v, want ErrStale", p, err)
		}
		if _, _, err := f.Lookup(vfs.Cred{}, h, "file"); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("lookup in %s: %v, want ErrStale", p, err)
		}
	}
	// A signed handle of another kernel type or garbled bytes.
	fh := kernelHandle(inFile)
	var st unix.Stat_t
	if err := unix.Stat(inFile, &st); err != nil {
		t.Fatal(err)
	}
	inIno := st.Ino
	for _, bad := range []unix.FileHandle{
		unix.NewFileHandle(fh.Type()+1, fh.Bytes()),
		unix.NewFileHandle(fh.Type(), make([]byte, len(fh.Bytes()))),
		unix.NewFileHandle(fh.Type(), append(fh.Bytes(), 0, 0, 0, 0)),
		unix.NewFileHandle(0x7fffffff, []byte{1}),
	} {
		h, err := f.encode(bad)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel may read a longer or sibling-typed handle as the
		// same inode (ext4 decodes types 1 and 2 alike): then it must
		// be that very file, else stale.
		a, err := f.GetAttr(h)
		if err == nil && a.FileID != inIno {
			t.Errorf("garbled kernel handle %x resolves to inode %d", h, a.FileID)
		}
		if err != nil && !errors.Is(err, vfs.ErrStale) && !errors.Is(err, vfs.ErrBadHandle) {
			t.Errorf("garbled kernel handle %x: %v", h, err)
		}
	}
	// Handles too short for any layout are garbled; cut, extended or
	// retyped ones have the shape of another handle and fail its MAC.
	good, _ := f.encode(fh)
	for _, h := range []vfs.Handle{good[:5], good[:osV2Header+osMACLen], {2, good[1]}} {
		if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrBadHandle) {
			t.Errorf("malformed handle %x: %v, want ErrBadHandle", h, err)
		}
	}
	for _, h := range []vfs.Handle{good[:len(good)-1], append(append(vfs.Handle{}, good...), 0), append(vfs.Handle{good[0] + 1}, good[1:]...)} {
		if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("reshaped handle %x: %v, want ErrStale", h, err)
		}
	}
	// Moved out locally after issue: stale from then on.
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "in")
	if err != nil {
		t.Fatal(err)
	}
	fh2, _, err := f.Lookup(vfs.Cred{}, h, "file")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Rename(filepath.Join(root, "in"), filepath.Join(outDir, "in")); err != nil {
		t.Fatal(err)
	}
	g, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, hh := range []vfs.Handle{h, fh2} {
		if _, err := g.GetAttr(hh); !errors.Is(err, vfs.ErrStale) {
			t.Errorf("handle of an object moved out of the export: %v, want ErrStale", err)
		}
	}
}

func TestOSHandleLayout(t *testing.T) {
	f, err := New(t.TempDir(), Options{HandleKey: []byte("0123456789abcdef"), HandleDomain: []byte("export 1")})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := f.Root()
	kfh, _, err := unix.NameToHandleAt(f.rootFD, "", unix.AT_EMPTY_PATH)
	if err != nil {
		t.Fatal(err)
	}
	// Version 2: the type byte, the kernel's bytes, a 6-byte MAC.
	if len(h) != osV2Header+len(kfh.Bytes())+osMACLen || int32(h[0]) != kfh.Type() ||
		string(h[osV2Header:len(h)-osMACLen]) != string(kfh.Bytes()) {
		t.Fatalf("root handle %x, kernel handle type %d %x", h, kfh.Type(), kfh.Bytes())
	}
	fh, err := f.decode(h)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := f.encode(fh)
	if string(h2) != string(h) {
		t.Errorf("re-encoding gives %x, want %x", h2, h)
	}
	// Version 1, as the first layout issued it, still names the root;
	// with a flipped MAC byte, or relabelled as version 2, it is stale.
	v1, err := f.encodeV1(kfh)
	if err != nil || v1[0] != osV1Version || int(v1[1]) != len(kfh.Bytes()) ||
		binary.BigEndian.Uint32(v1[2:6]) != uint32(kfh.Type()) || string(v1[6:len(v1)-osV1MACLen]) != string(kfh.Bytes()) {
		t.Fatalf("version-1 handle %x, %v", v1, err)
	}
	var sum [32]byte
	if mac := f.mac(&sum, []byte("export 1"), v1[:len(v1)-osV1MACLen])[:osV1MACLen]; string(mac) != string(v1[len(v1)-osV1MACLen:]) {
		t.Errorf("version-1 MAC %x, want HMAC-SHA256 of the domain and the bytes before it, %x", v1[len(v1)-osV1MACLen:], mac)
	}
	if got, err := f.decode(v1); err != nil || got.Type() != kfh.Type() || string(got.Bytes()) != string(kfh.Bytes()) {
		t.Errorf("version-1 handle %x: %v, %x", v1, err, got.Bytes())
	}
	if _, err := f.GetAttr(v1); err != nil {
		t.Errorf("GETATTR of the version-1 root handle: %v", err)
	}
	bad := append([]byte(nil), v1...)
	bad[len(bad)-1] ^= 1
	if _, err := f.decode(bad); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("version-1 handle with a flipped MAC: %v, want ErrStale", err)
	}
	// A LOOKUP by name after a client used a file's version-1 handle
	// answers the version-2 one: clients converge on one handle a file.
	hf, _, err := f.Create(vfs.Cred{}, h, "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	ffh, err := f.decode(hf)
	if err != nil {
		t.Fatal(err)
	}
	v1f, err := f.encodeV1(ffh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetAttr(v1f); err != nil {
		t.Fatalf("GETATTR of the file's version-1 handle: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(f.rootFD, "f", &st, 0); err != nil {
		t.Fatal(err)
	}
	if key, ok := f.cache.known(st.Ino, ffh); ok && key == string(v1f) {
		t.Errorf("the cache offers the version-1 handle for a LOOKUP")
	}
	for range 2 {
		if got, _, err := f.Lookup(vfs.Cred{}, h, "f"); err != nil || string(got) != string(hf) {
			t.Errorf("LOOKUP after the version-1 handle was used: %x, %v; want %x", got, err, hf)
		}
	}
	// A kernel handle type above a byte is issued as version 1.
	big := unix.NewFileHandle(0x1ff, kfh.Bytes())
	hb, err := f.encode(big)
	if err != nil || hb[0] != osV1Version || len(hb) != osV1Header+len(kfh.Bytes())+osV1MACLen {
		t.Fatalf("type 0x1ff: %x, %v", hb, err)
	}
	if got, err := f.decode(hb); err != nil || got.Type() != 0x1ff {
		t.Errorf("type 0x1ff round trip: %v, type %d", err, got.Type())
	}
}

// The rename watch (moves_linux.go) is on as root, lets cache hits skip
// the inside check while nothing moves, and is never quiet right after a
// rename anywhere on the filesystem returns, before any event is read.
func TestOSMoveWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (fanotify): CI=true, not skipping")
		}
		t.Skip("needs root (fanotify)")
	}
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.moves.fd < 0 {
		t.Fatal("the rename watch is off as root")
	}
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "d")
	if err != nil {
		t.Fatal(err)
	}
	settle := func() uint64 {
		// Renames elsewhere on the filesystem (other processes) bump the
		// epoch; a fresh check of the cache hit catches up.
		deadline := time.Now().Add(5 * time.Second)
		for {
			e, err := f.acquire(h)
			if err != nil {
				t.Fatal(err)
			}
			v := e.verified.Load()
			f.cache.release(e)
			if f.moves.quiet(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatal("the watch never became quiet")
			}
		}
	}
	a, b := filepath.Join(root, "x"), filepath.Join(root, "y")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		verified := settle()
		if err := os.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		if f.moves.quiet(verified) {
			t.Fatalf("rename %d: the watch is quiet right after a rename", i)
		}
		a, b = b, a
	}
}

// The inside-the-export check a cache hit pays when a rename may have
// happened does not allocate, for a directory and for a file.
func TestOSWithinDoesNotAllocate(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{"e", "f"} {
		d, _, err := f.Lookup(vfs.Cred{}, f.Root(), "d")
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := f.Lookup(vfs.Cred{}, d, name)
		if err != nil {
			t.Fatal(err)
		}
		e, err := f.acquire(h)
		if err != nil {
			t.Fatal(err)
		}
		dir := e.typ == vfs.TypeDir
		if ok, err := f.within(e.fd, dir); !ok || err != nil {
			t.Fatalf("%s: within %v %v", name, ok, err)
		}
		if n := testing.AllocsPerRun(100, func() { f.within(e.fd, dir) }); n != 0 {
			t.Errorf("%s: within allocates %v times per call", name, n)
		}
		f.cache.release(e)
	}
}

// The rename watch judges events: a rename out of a directory inside the
// export may move something out (relevant), one outside the export
// cannot (not relevant). The events come from a fanotify group of the
// test's own that watches just the directory concerned, so that nobody
// else's renames on the filesystem get in.
func TestOSMoveWatchJudges(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (fanotify): CI=true, not skipping")
		}
		t.Skip("needs root (fanotify)")
	}
	base := t.TempDir()
	root, out := filepath.Join(base, "export"), filepath.Join(base, "out")
	for _, d := range []string{filepath.Join(root, "in"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	event := func(dir string) []byte {
		t.Helper()
		fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, unix.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_MOVED_FROM|unix.FAN_ONDIR, unix.AT_FDCWD, dir); err != nil {
			t.Fatal(err)
		}
		a := filepath.Join(dir, "a")
		if err := os.WriteFile(a, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(a, filepath.Join(out, "moved-"+filepath.Base(dir))); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if err != nil || n <= 0 {
			t.Fatalf("no event: %d %v", n, err)
		}
		return buf[:n]
	}
	if !f.moves.relevant(event(filepath.Join(root, "in"))) {
		t.Error("a rename out of a directory inside the export was judged irrelevant")
	}
	if !f.moves.relevant(event(root)) {
		t.Error("a rename out of the export root was judged irrelevant")
	}
	if f.moves.relevant(event(out)) {
		t.Error("a rename out of a directory outside the export was judged relevant")
	}
	if !f.moves.relevant([]byte{1, 2, 3}) {
		t.Error("a truncated event was judged irrelevant")
	}
}

// FuzzMoveEvents: the rename watch's event decoder takes any bytes
// without panicking, and judges what it cannot parse relevant (the safe
// answer: the next cache hit checks).
func FuzzMoveEvents(f *testing.F) {
	root := f.TempDir()
	fs, err := New(root, Options{HandleKey: []byte("0123456789abcdef-fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fs.Close() })
	// A well-formed event with a FID record naming the export root.
	fh, _, err := unix.NameToHandleAt(fs.rootFD, "", unix.AT_EMPTY_PATH)
	if err != nil {
		f.Fatal(err)
	}
	rec := make([]byte, 20+len(fh.Bytes()))
	rec[0] = unix.FAN_EVENT_INFO_TYPE_FID
	binary.NativeEndian.PutUint16(rec[2:], uint16(len(rec)))
	binary.NativeEndian.PutUint32(rec[12:], uint32(len(fh.Bytes())))
	binary.NativeEndian.PutUint32(rec[16:], uint32(fh.Type()))
	copy(rec[20:], fh.Bytes())
	ev := make([]byte, unix.FAN_EVENT_METADATA_LEN, unix.FAN_EVENT_METADATA_LEN+len(rec))
	binary.NativeEndian.PutUint32(ev[0:], uint32(unix.FAN_EVENT_METADATA_LEN+len(rec)))
	ev[4] = unix.FANOTIFY_METADATA_VERSION
	binary.NativeEndian.PutUint16(ev[6:], unix.FAN_EVENT_METADATA_LEN)
	binary.NativeEndian.PutUint64(ev[8:], unix.FAN_MOVED_FROM)
	ev = append(ev, rec...)
	f.Add(ev)
	f.Add(append(append([]byte(nil), ev...), ev...))
	f.Add(ev[:10])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		relevant := fs.moves.relevant(b)
		if len(b) > 0 && len(b) < unix.FAN_EVENT_METADATA_LEN && !relevant {
			t.Errorf("a truncated event (%d bytes) was judged irrelevant", len(b))
		}
	})
}

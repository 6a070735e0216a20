package nfsclient_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
	return b
}

// populate writes a small tree into the export directory on the server
// side and returns the files fstest.TestFS must find.
func populate(t *testing.T, dir string) []string {
	files := map[string][]byte{
		"hello.txt":         []byte("hello, world\n"),
		"empty":             nil,
		"dir/a.bin":         pattern(70000, 1),
		"dir/sub/b.txt":     []byte("b"),
		"dir/sub/deeper/c":  pattern(3000, 2),
		"other/large.bin":   pattern(2<<16+123, 3), // 3 READs of 64K (2 full), more than depth=2
		"other/x y (z).txt": []byte("spaces"),
	}
	var names []string
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := os.Symlink("sub/b.txt", filepath.Join(dir, "dir", "link")); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestFSTestFS(t *testing.T) {
	for _, proto := range protos {
		t.Run(proto, func(t *testing.T) {
			// fstest.TestFS reads every file back one byte per ReadAt,
			// a READ each (~200,000 calls a protocol, more for its
			// fs.Sub pass). Each protocol has its own server,
			// directory, fabric and ports, so the two run side by side.
			t.Parallel()
			s := startServer(t)
			names := populate(t, s.dir)
			f := s.dial(proto, "bs=64K&depth=2")
			if err := fstest.TestFS(f, append(names, "dir/link")...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadWriteLarge(t *testing.T) {
	forEachProto(t, "bs=64K&depth=6&nconnect=3", func(t *testing.T, proto string, s *server, f *nfsclient.FS) {
		data := pattern(5<<20+4097, 9)
		w, err := f.Create("big.bin")
		if err != nil {
			t.Fatal(err)
		}
		// ReadFrom (io.Copy) pipelines WRITEs.
		if n, err := io.Copy(w, bytes.NewReader(data)); err != nil || n != int64(len(data)) {
			t.Fatalf("copy in: %d, %v", n, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		onDisk, err := os.ReadFile(filepath.Join(s.dir, "big.bin"))
		if err != nil || !bytes.Equal(onDisk, data) {
			t.Fatalf("server file differs (%d bytes, %v)", len(onDisk), err)
		}
		got, err := f.ReadFile("big.bin")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadFile: %d bytes, %v", len(got), err)
		}
		// WriteTo (io.Copy out) pipelines READs in order.
		r, err := f.OpenFile("big.bin", nfsclient.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if n, err := io.Copy(&out, r); err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("copy out: %d, %v", n, err)
		}
		// ReadAt in the middle, across block boundaries, and at EOF.
		p := make([]byte, 200000)
		if n, err := r.ReadAt(p, 1<<20-7); err != nil || n != len(p) || !bytes.Equal(p, data[1<<20-7:1<<20-7+len(p)]) {
			t.Fatalf("ReadAt: %d, %v", n, err)
		}
		if n, err := r.ReadAt(p, int64(len(data))-100); err != io.EOF || n != 100 {
			t.Fatalf("ReadAt at the end: %d, %v, want 100, EOF", n, err)
		}
		r.Close()
		// WriteAt in the middle, then Sync.
		rw, err := f.OpenFile("big.bin", nfsclient.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		patch := pattern(300000, 4)
		if n, err := rw.WriteAt(patch, 777777); err != nil || n != len(patch) {
			t.Fatalf("WriteAt: %d, %v", n, err)
		}
		if err := rw.Sync(); err != nil {
			t.Fatal(err)
		}
		copy(data[777777:], patch)
		rw.Close()
		if got, _ := os.ReadFile(filepath.Join(s.dir, "big.bin")); !bytes.Equal(got, data) {
			t.Fatal("WriteAt did not land")
		}
		st := f.Stats()
		if st.ReadCalls == 0 || st.WriteCalls == 0 || st.Commits == 0 {
			t.Errorf("stats %+v", st)
		}
		if proto == "rdma" {
			k := st.RDMA
			if k.Binds == 0 || k.Binds != k.RemoteInvalidations+k.LocalInvalidations {
				t.Errorf("RDMA memory keys: %+v: every bind must be invalidated", k)
			}
			// READ data came through the registered region, except
			// that of READs small enough to come inline (< 4 KiB each).
			if k.PayloadCopies == 0 || k.PayloadBytes > st.BytesRead || k.PayloadBytes < st.BytesRead-st.ReadCalls*4096 {
				t.Errorf("payload copies %d (%d bytes) for %d READs of %d bytes", k.PayloadCopies, k.PayloadBytes, st.ReadCalls, st.BytesRead)
			}
		}
	})
}

func TestErrors(t *testing.T) {
	s := startServer(t)
	f := s.dial("tcp", "")
	_, err := f.Open("no/such/file")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open missing: %v, want fs.ErrNotExist", err)
	}
	var se *nfsclient.StatusError
	if !errors.As(err, &se) || se.Status != wire.ErrNoEnt {
		t.Fatalf("Open missing: %v does not carry NFS3ERR_NOENT", err)
	}
	var ce *client.StatusError
	if !errors.As(err, &ce) || ce.Status != wire.ErrNoEnt {
		t.Fatalf("no *client.StatusError in %v", err)
	}
	if _, err := f.Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Open ../x: %v", err)
	}
	if err := os.Mkdir(filepath.Join(s.dir, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(s.dir, "private"), 0o700)
	u := s.dial("tcp", "uid=4321&gid=4321")
	_, err = u.Create("private/f")
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Create in a 0700 root directory as uid 4321: %v, want fs.ErrPermission", err)
	}
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Mkdir("d", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Mkdir twice: %v", err)
	}
	w, _ := f.Create("d/f")
	w.Write([]byte("x"))
	w.Close()
	if err := f.Remove("d"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Remove of a non-empty directory: %v, want fs.ErrExist (NOTEMPTY)", err)
	}
	if fi, err := u.Stat("d/f"); err != nil || fi.Size() != 1 {
		t.Fatalf("Stat as another user: %v, %v", fi, err)
	}
}

func TestIdentity(t *testing.T) {
	s := startServer(t)
	if err := os.Chmod(s.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f := s.dial("tcp", "uid=1234&gid=5678&machine=test-host")
	w, err := f.Create("owned")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	rfi, err := f.Stat("owned")
	if err != nil {
		t.Fatal(err)
	}
	a := rfi.Sys().(*wire.Fattr)
	if a.UID != 1234 || a.GID != 5678 {
		t.Fatalf("file created as %d:%d, want 1234:5678", a.UID, a.GID)
	}
}

package nfsclient_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// memAt is an io.WriterAt into memory; it records the offsets written.
type memAt struct {
	mu   sync.Mutex
	buf  []byte
	offs []int64
}

func (m *memAt) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if end := int(off) + len(p); end > len(m.buf) {
		m.buf = append(m.buf, make([]byte, end-len(m.buf))...)
	}
	m.offs = append(m.offs, off)
	return copy(m.buf[off:], p), nil
}

// countingAt is an io.ReaderAt over data that counts the bytes read and
// runs hook (once) before the read at offset hookAt.
type countingAt struct {
	data   []byte
	read   atomic.Int64
	hookAt int64
	hook   func()
	once   sync.Once
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	if c.hook != nil && off == c.hookAt {
		c.once.Do(c.hook)
	}
	if off >= int64(len(c.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.data[off:])
	c.read.Add(int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestCopyAt: ReadFromAt and WriteToAt move whole files between the
// export and offset-addressed memory, block by block out of order, over
// both transports: sizes around the block size, a source offset, a
// count, a File offset, and a source shorter than the count.
func TestCopyAt(t *testing.T) {
	const bs = 64 << 10
	forEachProto(t, "bs=64K&depth=4", func(t *testing.T, _ string, s *server, f *nfsclient.FS) {
		var before []byte // c.bin's content after the loop
		for _, size := range []int{0, 1, bs - 1, bs, bs + 1, 5*bs + 4097} {
			data := pattern(size+100, byte(size))
			w, err := f.Create("c.bin")
			if err != nil {
				t.Fatal(err)
			}
			// Source from offset 100 to its end.
			if n, err := w.ReadFromAt(bytes.NewReader(data), 100, -1); err != nil || n != int64(size) {
				t.Fatalf("size %d: ReadFromAt: %d, %v", size, n, err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want := data[100:]
			before = want
			if got, err := os.ReadFile(filepath.Join(s.dir, "c.bin")); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("size %d: server file %d bytes, %v", size, len(got), err)
			}
			r, err := f.OpenFile("c.bin", nfsclient.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			var m memAt
			if n, err := r.WriteToAt(&m, 7); err != nil || n != int64(size) {
				t.Fatalf("size %d: WriteToAt: %d, %v", size, n, err)
			}
			if size > 0 && !bytes.Equal(m.buf[7:], want) {
				t.Fatalf("size %d: WriteToAt's data differs", size)
			}
			// The File's offset moved to the end: nothing more.
			if n, err := r.WriteToAt(&m, 0); err != nil || n != 0 {
				t.Fatalf("size %d: WriteToAt at the end: %d, %v", size, n, err)
			}
			r.Close()
		}

		// A count, at a File offset (Seek), into an existing file.
		data := pattern(3*bs+5, 42)
		w, err := f.OpenFile("c.bin", nfsclient.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Seek(1000, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if n, err := w.ReadFromAt(bytes.NewReader(data), 5, 2*bs); err != nil || n != 2*bs {
			t.Fatalf("ReadFromAt with a count: %d, %v", n, err)
		}
		// Offset moved: WriteToAt from here reads the rest.
		var m memAt
		if n, err := w.WriteToAt(&m, 0); err != nil || n != int64(len(before))-1000-2*bs {
			t.Fatalf("WriteToAt after ReadFromAt: %d, %v", n, err)
		}
		w.Close()
		want := append(append(append([]byte{}, before[:1000]...), data[5:5+2*bs]...), before[1000+2*bs:]...)
		if got, _ := os.ReadFile(filepath.Join(s.dir, "c.bin")); !bytes.Equal(got, want) {
			t.Fatal("ReadFromAt with a count at offset 1000: server file differs")
		}

		// A remote File as the source (cp nfs:// nfs://).
		r, err := f.OpenFile("c.bin", nfsclient.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.Create("d.bin")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := d.ReadFromAt(r, 0, -1); err != nil || n != int64(len(want)) {
			t.Fatalf("ReadFromAt(File): %d, %v", n, err)
		}
		d.Close()
		r.Close()
		if got, _ := os.ReadFile(filepath.Join(s.dir, "d.bin")); !bytes.Equal(got, want) {
			t.Fatal("ReadFromAt(File): the copy differs")
		}

		// A source shorter than the count: all it has is written, the
		// error says it ended early.
		w, err = f.Create("short.bin")
		if err != nil {
			t.Fatal(err)
		}
		n, err := w.ReadFromAt(bytes.NewReader(data), 0, int64(len(data))+1)
		if !errors.Is(err, io.ErrUnexpectedEOF) || n != int64(len(data)) {
			t.Fatalf("ReadFromAt past the source's end: %d, %v; want %d, io.ErrUnexpectedEOF", n, err, len(data))
		}
		w.Close()
		if got, _ := os.ReadFile(filepath.Join(s.dir, "short.bin")); !bytes.Equal(got, data) {
			t.Fatal("ReadFromAt past the source's end: the server file is not the source")
		}
	})
}

// TestReadFromAtResendsFromSource: the server restarts while ReadFromAt
// is writing (inside the source's ReadAt of the last block), so the
// COMMIT at its end sees a new write verifier; ReadFromAt re-reads every
// block from the source and writes it again (it kept no copy), and the
// file on the server is the source.
func TestReadFromAtResendsFromSource(t *testing.T) {
	const bs = 64 << 10
	s := startServer(t)
	f := s.dial("tcp", "bs=64K&depth=4&retries=20")
	src := &countingAt{data: pattern(8*bs+3, 77), hookAt: 8 * bs}
	src.hook = s.restart
	w, err := f.Create("re.bin")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.ReadFromAt(src, 0, -1); err != nil || n != int64(len(src.data)) {
		t.Fatalf("ReadFromAt across a restart: %d, %v", n, err)
	}
	st := f.Stats()
	if st.Resends != 1 || st.ResentBytes != int64(len(src.data)) {
		t.Fatalf("stats %+v: want one re-send of %d bytes", st, len(src.data))
	}
	// Read once to send and once to re-send: the data came from the
	// source both times.
	if got := src.read.Load(); got != 2*int64(len(src.data)) {
		t.Fatalf("source read %d bytes, want %d (twice)", got, 2*len(src.data))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(s.dir, "re.bin")); !bytes.Equal(got, src.data) {
		t.Fatal("server file differs from the source after the re-send")
	}
	// Close committed nothing more: ReadFromAt had committed.
	if st2 := f.Stats(); st2.Commits != st.Commits {
		t.Fatalf("Close sent %d more COMMITs after ReadFromAt", st2.Commits-st.Commits)
	}
}

// TestReadFromAtFile: a local *os.File as the source, over TCP (mapped:
// the payloads are the page cache's bytes) and RDMA (read with ReadAt),
// from offset 0 and from a page-aligned offset with a count; the server
// file is the source's bytes.
func TestReadFromAtFile(t *testing.T) {
	const bs = 64 << 10
	forEachProto(t, "bs=64K&depth=4", func(t *testing.T, _ string, s *server, f *nfsclient.FS) {
		data := pattern(7*bs+123, 5)
		p := filepath.Join(t.TempDir(), "src")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		for _, c := range []struct {
			off, n int64
			want   []byte
		}{{0, -1, data}, {4096, 3 * bs, data[4096 : 4096+3*bs]}} {
			w, err := f.Create("file.bin")
			if err != nil {
				t.Fatal(err)
			}
			if n, err := w.ReadFromAt(src, c.off, c.n); err != nil || n != int64(len(c.want)) {
				t.Fatalf("ReadFromAt(file, %d, %d): %d, %v", c.off, c.n, n, err)
			}
			w.Close()
			if got, _ := os.ReadFile(filepath.Join(s.dir, "file.bin")); !bytes.Equal(got, c.want) {
				t.Fatalf("ReadFromAt(file, %d, %d): the server file differs", c.off, c.n)
			}
		}
	})
}

// TestReadFromAtTruncatedSource: the local file shrinks after ReadFromAt
// mapped it, so the kernel finds no page behind part of a WRITE's
// payload. The copy fails with an error (EFAULT from writev, not a fault
// in this process, not a hang), and the FS keeps working on a new
// connection. One worker, so that no other WRITE meets the connection
// the failed one dropped first.
func TestReadFromAtTruncatedSource(t *testing.T) {
	const bs = 64 << 10
	s := startServer(t)
	f := s.dial("tcp", "bs=64K&depth=1&retries=2")
	p := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(p, pattern(16*bs, 6), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	nfsclient.SetAfterMapHook(func() {
		if err := src.Truncate(bs + 100); err != nil {
			t.Error(err)
		}
	})
	defer nfsclient.SetAfterMapHook(nil)
	w, err := f.Create("t.bin")
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.ReadFromAt(src, 0, -1)
	if !errors.Is(err, syscall.EFAULT) {
		t.Fatalf("ReadFromAt of a source truncated under its mapping: %d, %v; want EFAULT", n, err)
	}
	if n != bs {
		t.Fatalf("ReadFromAt reports %d bytes written, want the first block's %d", n, bs)
	}
	w.Close()
	if _, err := f.Stat("t.bin"); err != nil {
		t.Fatalf("the FS after the failed copy: %v", err)
	}
}

// TestWriteToAtFile: WriteToAt into a local *os.File at an offset, sizes
// around the block size; over TCP the data goes from the socket into the
// file, over RDMA from the registered region the server wrote it into
// (Stats.BytesReadDirect counts all of it on both). The file's bytes
// around the copy stay.
// A file that cannot be written fails the copy with the write's error.
func TestWriteToAtFile(t *testing.T) {
	const bs = 64 << 10
	forEachProto(t, "bs=64K&depth=4", func(t *testing.T, proto string, s *server, f *nfsclient.FS) {
		dst := filepath.Join(t.TempDir(), "dst")
		for _, size := range []int{0, 1, bs - 1, bs, bs + 1, 5*bs + 4097} {
			data := pattern(size, byte(size))
			if err := os.WriteFile(filepath.Join(s.dir, "r.bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			around := bytes.Repeat([]byte{0xaa}, size+200)
			if err := os.WriteFile(dst, around, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(dst, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.OpenFile("r.bin", nfsclient.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			before := f.Stats().BytesReadDirect
			n, err := r.WriteToAt(out, 100)
			r.Close()
			out.Close()
			if err != nil || n != int64(size) {
				t.Fatalf("size %d: WriteToAt: %d, %v", size, n, err)
			}
			want := append(append(around[:100:100], data...), around[100+size:]...)
			if got, _ := os.ReadFile(dst); !bytes.Equal(got, want) {
				t.Fatalf("size %d: the local file differs", size)
			}
			direct := f.Stats().BytesReadDirect - before
			if direct != int64(size) {
				t.Fatalf("size %d: %d bytes direct, want %d", size, direct, size)
			}
		}
		ro, err := os.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		r, err := f.OpenFile("r.bin", nfsclient.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if n, err := r.WriteToAt(ro, 0); err == nil || n != 0 {
			t.Fatalf("WriteToAt into a read-only file: %d, %v", n, err)
		}
	})
}

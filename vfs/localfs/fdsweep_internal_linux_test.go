package localfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// sweepWait bounds the polls below: far above the default interval (2 s),
// so a loaded machine does not fail them, and a hang still ends.
const sweepWait = 20 * time.Second

// openOn lists this process's descriptors whose kernel name is p, as
// /proc/self/fd shows it ("p (deleted)" once the last link is gone).
func openOn(t *testing.T, p string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if l == p || l == p+" (deleted)" {
			fds = append(fds, e.Name()+" -> "+l)
		}
	}
	return fds
}

// waitFor polls cond every 10 ms until it holds or sweepWait passes.
// what says, when it does not, what is wrong at that moment.
func waitFor(t *testing.T, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(sweepWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", sweepWait, what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An object another process unlinks while the server has it cached is
// closed by the cache's sweep without any further call on its handle, so
// its blocks are freed (no descriptor of this process names it any more);
// a later call on the handle is still stale. Default options: the default
// sweep interval is the one exercised.
func TestOSSweepClosesUnlinkedElsewhere(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "big")
	data := bytes.Repeat([]byte("gonfsrdma"), 1<<17) // ~1.1 MiB
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := f.OpenFiles() // the root
	h, _, err := f.Lookup(vfs.Cred{}, f.Root(), "big")
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := f.Lookup(vfs.Cred{}, f.Root(), "dir")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	if n, _, err := f.ReadAt(h, buf, 0); err != nil || n != len(data) {
		t.Fatalf("read: %d %v", n, err)
	}
	if n := f.OpenFiles(); n != base+3 { // O_PATH and O_RDONLY of the file, O_PATH of the directory
		t.Fatalf("%d descriptors open after reading, want %d", n, base+3)
	}
	if fds := openOn(t, p); len(fds) != 2 {
		t.Fatalf("descriptors on %s: %v, want 2", p, fds)
	}
	ev := f.OpenFileCache().Evictions

	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() string {
		return "the cache still holds the unlinked file and directory: OpenFiles " + strconv.Itoa(f.OpenFiles()) + ", want " + strconv.Itoa(base)
	}, func() bool {
		return f.OpenFiles() == base
	})
	if fds := openOn(t, p); len(fds) != 0 {
		t.Errorf("descriptors still open on the unlinked file: %v", fds)
	}
	if got := f.OpenFileCache().Evictions - ev; got != 2 {
		t.Errorf("sweep counted %d evictions, want 2", got)
	}
	if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr of the swept file: %v, want stale", err)
	}
	if _, _, err := f.ReadAt(h, buf, 0); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("read of the swept file: %v, want stale", err)
	}
	if _, err := f.GetAttr(d); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr of the swept directory: %v, want stale", err)
	}
	if n := f.OpenFiles(); n != base {
		t.Errorf("%d descriptors open after the stale calls, want %d", n, base)
	}
}

// An entry with a reference held (a call in progress: here a READ whose
// descriptor is lent to a callback, as NFS READ splices from it) is never
// closed by the sweep, however many sweeps pass; the first sweep after
// the call ends closes it. A short Options.SweepInterval is honoured.
func TestOSSweepSparesEntriesInUse(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "f")
	start := time.Now()
	f, err := New(root, Options{SweepInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := f.OpenFiles()
	h, _, err := f.Create(vfs.Cred{}, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("in flight")
	if _, err := f.WriteAt(vfs.Cred{}, h, want, 0, false); err != nil {
		t.Fatal(err)
	}
	n, _, err := f.ReadFD(h, 0, 64, func(fd int, off int64, n int) (int, error) {
		open := f.OpenFiles()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		// Background sweeps pass, and one run here directly, while the
		// call holds its reference.
		s := f.cache.sweeps.Load()
		waitFor(t, func() string { return "no sweep ran" }, func() bool { return f.cache.sweeps.Load() >= s+3 })
		f.cache.sweep()
		if got := f.OpenFiles(); got != open {
			t.Errorf("OpenFiles %d during the call, was %d", got, open)
		}
		e := f.cache.get(h)
		if e == nil {
			t.Fatal("entry in use was evicted by the sweep")
		}
		f.cache.release(e)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Nlink != 0 {
			t.Fatalf("lent descriptor: fstat %v, nlink %d (want a live descriptor of the unlinked file)", err, st.Nlink)
		}
		got := make([]byte, n)
		m, err := unix.Pread(fd, got, off)
		if err != nil {
			return m, err
		}
		if !bytes.Equal(got[:m], want) {
			t.Errorf("pread on the lent descriptor: %q, want %q", got[:m], want)
		}
		return m, nil
	})
	if err != nil || n != len(want) {
		t.Fatalf("ReadFD: %d %v", n, err)
	}
	waitFor(t, func() string { return "the entry released after the call is still cached" }, func() bool { return f.OpenFiles() == base })
	// The interval is honoured: more background sweeps ran (the one
	// called directly above aside) than the default interval allows in
	// the time since New (no wall-clock bound: a loaded machine delays
	// the 20 ms ticks, but would have to stall them for seconds to bring
	// their count down to the default's).
	elapsed := time.Since(start)
	if bg, most := f.cache.sweeps.Load()-1, uint64(elapsed/DefaultSweepInterval)+1; bg <= most {
		t.Errorf("%d background sweeps in %v with SweepInterval 20ms; the default interval allows up to %d", bg, elapsed, most)
	}
	if fds := openOn(t, p); len(fds) != 0 {
		t.Errorf("descriptors still open on the unlinked file: %v", fds)
	}
	if _, err := f.GetAttr(h); !errors.Is(err, vfs.ErrStale) {
		t.Errorf("getattr after the sweep: %v, want stale", err)
	}
}

// Close stops the sweep goroutine and waits for it; New rejects a
// negative interval.
func TestOSSweepStopsOnClose(t *testing.T) {
	f, err := New(t.TempDir(), Options{SweepInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := f.cache.sweepDone
	f.Close()
	select {
	case <-done:
	default:
		t.Fatal("sweep goroutine still running after Close returned")
	}
	if f.OpenFiles() != 0 {
		t.Errorf("%d descriptors open after Close", f.OpenFiles())
	}
	if _, err := New(t.TempDir(), Options{SweepInterval: -time.Second}); err == nil {
		t.Error("New accepted a negative SweepInterval")
	}
}

// The cost of one sweep over a full default-size cache of idle, live
// entries (one fstat each): the CPU it takes every interval.
func BenchmarkSweep1024(b *testing.B) {
	root := b.TempDir()
	f, err := New(root, Options{HandleKey: []byte("0123456789abcdef-bench"), SweepInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range 1024 {
		if _, _, err := f.Create(vfs.Cred{}, f.Root(), strconv.Itoa(i), 0o644, true, false, [8]byte{}); err != nil {
			b.Fatal(err)
		}
	}
	if n := f.cache.lru.Len(); n != 1024 {
		b.Fatalf("%d entries cached, want 1024", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if n := f.cache.sweep(); n != 0 {
			b.Fatalf("sweep closed %d live entries", n)
		}
	}
}

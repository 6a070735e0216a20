package vfstest

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/go-git/go-billy/v5"
)

// OpenCounter is implemented by anything that holds open files: a
// TrackingFS, *localfs.FS (cached descriptors, the root's included) and
// *billyfs.FS (cached billy files).
type OpenCounter interface {
	OpenFiles() int
}

// TrackingFS wraps a billy.Filesystem and records every file it opens
// until it is closed.
type TrackingFS struct {
	billy.Filesystem
	t *tracker
}

type tracker struct {
	mu     sync.Mutex
	next   int
	open   map[int]string // id -> name
	opened int
}

// NewTrackingFS wraps fs.
func NewTrackingFS(fs billy.Filesystem) *TrackingFS {
	return &TrackingFS{Filesystem: fs, t: &tracker{open: make(map[int]string)}}
}

func (fs *TrackingFS) track(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	fs.t.mu.Lock()
	defer fs.t.mu.Unlock()
	fs.t.next++
	fs.t.opened++
	fs.t.open[fs.t.next] = f.Name()
	return &trackedFile{File: f, t: fs.t, id: fs.t.next}, nil
}

// Create opens a tracked file.
func (fs *TrackingFS) Create(name string) (billy.File, error) {
	return fs.track(fs.Filesystem.Create(name))
}

// Open opens a tracked file.
func (fs *TrackingFS) Open(name string) (billy.File, error) {
	return fs.track(fs.Filesystem.Open(name))
}

// OpenFile opens a tracked file.
func (fs *TrackingFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	return fs.track(fs.Filesystem.OpenFile(name, flag, perm))
}

// TempFile opens a tracked file.
func (fs *TrackingFS) TempFile(dir, prefix string) (billy.File, error) {
	return fs.track(fs.Filesystem.TempFile(dir, prefix))
}

// Chroot returns a tracking view of a subtree sharing this one's counts.
func (fs *TrackingFS) Chroot(path string) (billy.Filesystem, error) {
	sub, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return &TrackingFS{Filesystem: sub, t: fs.t}, nil
}

// Capabilities forwards the wrapped filesystem's capabilities.
func (fs *TrackingFS) Capabilities() billy.Capability {
	return billy.Capabilities(fs.Filesystem)
}

// OpenFiles reports files opened and not yet closed.
func (fs *TrackingFS) OpenFiles() int {
	fs.t.mu.Lock()
	defer fs.t.mu.Unlock()
	return len(fs.t.open)
}

// Opened reports how many files were ever opened.
func (fs *TrackingFS) Opened() int {
	fs.t.mu.Lock()
	defer fs.t.mu.Unlock()
	return fs.t.opened
}

// OpenNames lists the names of the files still open, sorted.
func (fs *TrackingFS) OpenNames() []string {
	fs.t.mu.Lock()
	defer fs.t.mu.Unlock()
	var names []string
	for _, n := range fs.t.open {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type trackedFile struct {
	billy.File
	t      *tracker
	id     int
	closed bool
}

// Close closes the file once; a second Close is reported by the wrapped
// file as usual and does not change the counts.
func (f *trackedFile) Close() error {
	f.t.mu.Lock()
	if !f.closed {
		f.closed = true
		delete(f.t.open, f.id)
	}
	f.t.mu.Unlock()
	return f.File.Close()
}

// WriteAt forwards to the wrapped file's WriteAt (billy.File lacks it in
// v5), so wrapping does not change how callers write.
func (f *trackedFile) WriteAt(p []byte, off int64) (int, error) {
	if w, ok := f.File.(interface {
		WriteAt([]byte, int64) (int, error)
	}); ok {
		return w.WriteAt(p, off)
	}
	if _, err := f.File.Seek(off, 0); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

// Sync forwards to the wrapped file's Sync when it has one.
func (f *trackedFile) Sync() error {
	if s, ok := f.File.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}

// CheckNoLeaks fails t for every counter still holding open files.
func CheckNoLeaks(t testing.TB, counters ...OpenCounter) {
	t.Helper()
	for i, c := range counters {
		if n := c.OpenFiles(); n != 0 {
			detail := ""
			if named, ok := c.(interface{ OpenNames() []string }); ok {
				detail = fmt.Sprintf(": %q", named.OpenNames())
			}
			t.Errorf("leak check %d (%T): %d files still open%s", i, c, n, detail)
		}
	}
}

package localfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// A LOOKUP of an object already cached answers with that entry's handle
// (fdCache.known) and opens nothing new; a cached entry is reused only
// when its kernel handle is byte for byte the one of the object opened,
// never on the inode number alone.
func TestLookupReusesCachedEntry(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	f, err := New(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h1, a1, err := f.Lookup(vfs.Cred{}, f.Root(), "a")
	if err != nil {
		t.Fatal(err)
	}
	open := f.OpenFiles()
	h2, a2, err := f.Lookup(vfs.Cred{}, f.Root(), "a")
	if err != nil {
		t.Fatal(err)
	}
	h3, _, err := f.Lookup(vfs.Cred{}, f.Root(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h1, h2) || !bytes.Equal(h1, h3) || a1.FileID != a2.FileID {
		t.Fatalf("the same file looked up again: handles %x, %x (hard link %x), ids %d, %d", h1, h2, h3, a1.FileID, a2.FileID)
	}
	if n := f.OpenFiles(); n != open {
		t.Errorf("%d descriptors open after looking up a cached file again, want %d", n, open)
	}
	h2[0] ^= 0xff // the caller owns what it got: not the cache's key
	if _, err := f.GetAttr(h1); err != nil {
		t.Fatalf("GETATTR of the first handle after the caller changed its copy: %v", err)
	}

	// Removed and made again: another inode, another handle, not the old entry's.
	if err := os.Remove(filepath.Join(root, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h4, _, err := f.Lookup(vfs.Cred{}, f.Root(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(h1, h4) {
		t.Errorf("a new file got the old one's handle %x", h4)
	}

	// Same inode number, other kernel handle bytes (as a reused inode
	// number with another generation would give): not the cached entry.
	e, err := f.acquire(h4)
	if err != nil {
		t.Fatal(err)
	}
	ino, fh := e.ino, e.fh
	f.cache.release(e)
	if key, ok := f.cache.known(ino, fh); !ok || key != string(h4) {
		t.Fatalf("known(the entry's own inode and handle) = %x, %v, want %x", key, ok, h4)
	}
	other := append([]byte(nil), fh.Bytes()...)
	other[len(other)-1] ^= 1
	if key, ok := f.cache.known(ino, unix.NewFileHandle(fh.Type(), other)); ok {
		t.Errorf("known(same inode, other handle bytes) = %x: an entry reused on the inode number alone", key)
	}
	if key, ok := f.cache.known(ino, unix.NewFileHandle(fh.Type()+1, fh.Bytes())); ok {
		t.Errorf("known(same inode, other handle type) = %x", key)
	}
}

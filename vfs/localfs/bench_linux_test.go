package localfs_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
)

// The OS backend's per-call cost on a cached file beyond os_linux_test.go's
// BenchmarkReadAt and BenchmarkGetAttr: a 4 KiB WRITE by a caller (no
// set-id bits: no identity switch, only the inside-the-export check of a
// cache hit) and a LOOKUP that switches identity. The file "f" is the
// server's, or owner's when given (the export root is then
// world-writable).
func benchOS(b *testing.B, fn func(f *localfs.FS, h vfs.Handle, buf []byte) error, owner ...vfs.Cred) {
	root := b.TempDir()
	var c vfs.Cred
	if len(owner) > 0 {
		c = owner[0]
		if err := os.Chmod(root, 0o777); err != nil {
			b.Fatal(err)
		}
	}
	f := newOS(b, root, localfs.Options{HandleKey: []byte("0123456789abcdef-bench")})
	h, _, err := f.Create(c, f.Root(), "f", 0o644, true, false, [8]byte{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := f.WriteAt(vfs.Cred{}, h, buf, 0, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := fn(f, h, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOSWriteAt4K(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000}
	benchOS(b, func(f *localfs.FS, h vfs.Handle, buf []byte) error {
		_, err := f.WriteAt(user, h, buf, 0, false)
		return err
	})
}

// A metadata call that switches identity: LOOKUP of a name as a caller
// other than the server.
func BenchmarkOSLookupAsCaller(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	benchOS(b, func(f *localfs.FS, _ vfs.Handle, _ []byte) error {
		_, _, err := f.Lookup(user, f.Root(), "f")
		return err
	})
}

// CREATE then REMOVE of a new name by a caller other than the server, in
// a world-writable directory (the metadata programs' pattern): with
// CREATE's fast path (servercreate_linux.go) neither call hops to an
// identity thread.
func BenchmarkOSCreateRemoveAsCaller(b *testing.B) {
	root := b.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		b.Fatal(err)
	}
	f := newOS(b, root, localfs.Options{HandleKey: []byte("0123456789abcdef-bench")})
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		name := "f" + strconv.Itoa(i)
		if _, _, err := f.Create(user, f.Root(), name, 0o644, true, false, [8]byte{}); err != nil {
			b.Fatal(err)
		}
		if err := f.Remove(user, f.Root(), name); err != nil {
			b.Fatal(err)
		}
	}
}

// SETATTR of a caller's own file by that caller: a chmod and explicit
// times, the calls tar x and cp -p make after each file.
func BenchmarkOSSetAttrAsCaller(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	benchOS(b, func(f *localfs.FS, h vfs.Handle, _ []byte) error {
		mode := uint32(0o640)
		return f.SetAttr(user, h, vfs.SetAttr{Mode: &mode})
	}, user)
}

// RENAME of a caller's file to another name in the same directory, as
// that caller (in a world-writable directory).
func BenchmarkOSRenameAsCaller(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	names := [2]string{"f", "g"}
	i := 0
	benchOS(b, func(f *localfs.FS, _ vfs.Handle, _ []byte) error {
		i++
		return f.Rename(user, f.Root(), names[(i+1)%2], f.Root(), names[i%2])
	}, user)
}

// MKDIR then RMDIR of a new name by a caller other than the server.
func BenchmarkOSMkdirRmdirAsCaller(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	benchOS(b, func(f *localfs.FS, _ vfs.Handle, _ []byte) error {
		if _, _, err := f.Mkdir(user, f.Root(), "d", 0o755); err != nil {
			return err
		}
		return f.Rmdir(user, f.Root(), "d")
	}, user)
}

// LINK of a caller's file to a new name, then REMOVE of that name.
func BenchmarkOSLinkRemoveAsCaller(b *testing.B) {
	user := vfs.Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	benchOS(b, func(f *localfs.FS, h vfs.Handle, _ []byte) error {
		if err := f.Link(user, h, f.Root(), "g"); err != nil {
			return err
		}
		return f.Remove(user, f.Root(), "g")
	}, user)
}

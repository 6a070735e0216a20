package nfsclient

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/helper/chroot"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Billy returns f as a writable go-billy filesystem. Paths may be
// absolute ("/a/b") or relative; both name the same file below the
// export's root, and ".." cannot leave it. Errors are *fs.PathError whose
// Err is the syscall.Errno of the nfsstat3 (StatusError.Errno), so that
// os.IsNotExist, os.IsExist and os.IsPermission work as go-billy users
// expect. NFSv3 has no locks of its own (NLM is a separate protocol), so
// File.Lock and Unlock return billy.ErrNotSupported and Capabilities
// leaves out LockCapability.
func (f *FS) Billy() billy.Filesystem { return &billyFS{f: f} }

type billyFS struct{ f *FS }

var (
	_ billy.Filesystem = (*billyFS)(nil)
	_ billy.Change     = (*billyFS)(nil)
	_ billy.Capable    = (*billyFS)(nil)
)

// fsName turns a billy path into an io/fs name.
func fsName(op, name string) (string, error) {
	p := path.Clean("/" + name)
	if p == "/" {
		return ".", nil
	}
	n := strings.TrimPrefix(p, "/")
	if !fs.ValidPath(n) {
		return "", &fs.PathError{Op: op, Path: name, Err: os.ErrInvalid}
	}
	return n, nil
}

// billyErr converts a *StatusError inside err to its errno.
func billyErr(err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	var se *StatusError
	if errors.As(err, &pe) && errors.As(err, &se) {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: se.Errno()}
	}
	return err
}

func (b *billyFS) Capabilities() billy.Capability {
	return billy.WriteCapability | billy.ReadCapability | billy.ReadAndWriteCapability |
		billy.SeekCapability | billy.TruncateCapability
}

func (b *billyFS) Create(filename string) (billy.File, error) {
	return b.OpenFile(filename, O_RDWR|O_CREATE|O_TRUNC, 0o666)
}

func (b *billyFS) Open(filename string) (billy.File, error) {
	return b.OpenFile(filename, O_RDONLY, 0)
}

// OpenFile creates missing parent directories for O_CREATE, as go-billy's
// osfs does.
func (b *billyFS) OpenFile(filename string, flag int, perm os.FileMode) (billy.File, error) {
	n, err := fsName("open", filename)
	if err != nil {
		return nil, err
	}
	file, err := b.f.OpenFile(n, flag, perm)
	if flag&O_CREATE != 0 && errors.Is(err, fs.ErrNotExist) && path.Dir(n) != "." {
		if err := b.f.MkdirAll(path.Dir(n), 0o755); err != nil {
			return nil, billyErr(err)
		}
		file, err = b.f.OpenFile(n, flag, perm)
	}
	if err != nil {
		return nil, billyErr(err)
	}
	if file.dir {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: filename, Err: statusErr(wire.ProcRead, wire.ErrIsDir).Errno()}
	}
	return &billyFile{File: file, name: n}, nil
}

func (b *billyFS) Stat(filename string) (os.FileInfo, error) {
	n, err := fsName("stat", filename)
	if err != nil {
		return nil, err
	}
	fi, err := b.f.Stat(n)
	return fi, billyErr(err)
}

func (b *billyFS) Lstat(filename string) (os.FileInfo, error) {
	n, err := fsName("lstat", filename)
	if err != nil {
		return nil, err
	}
	fi, err := b.f.Lstat(n)
	return fi, billyErr(err)
}

func (b *billyFS) Rename(oldpath, newpath string) error {
	o, err := fsName("rename", oldpath)
	if err != nil {
		return err
	}
	n, err := fsName("rename", newpath)
	if err != nil {
		return err
	}
	if d := path.Dir(n); d != "." {
		if err := b.f.MkdirAll(d, 0o755); err != nil {
			return billyErr(err)
		}
	}
	return billyErr(b.f.Rename(o, n))
}

func (b *billyFS) Remove(filename string) error {
	n, err := fsName("remove", filename)
	if err != nil {
		return err
	}
	return billyErr(b.f.Remove(n))
}

func (b *billyFS) Join(elem ...string) string { return path.Join(elem...) }

func (b *billyFS) TempFile(dir, prefix string) (billy.File, error) {
	for i := 0; i < 100; i++ {
		var r [6]byte
		rand.Read(r[:])
		name := path.Join(dir, prefix+hex.EncodeToString(r[:]))
		f, err := b.OpenFile(name, O_RDWR|O_CREATE|O_EXCL, 0o600)
		if os.IsExist(err) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "tempfile", Path: dir, Err: os.ErrExist}
}

func (b *billyFS) ReadDir(p string) ([]os.FileInfo, error) {
	n, err := fsName("readdir", p)
	if err != nil {
		return nil, err
	}
	ents, err := b.f.ReadDir(n)
	if err != nil {
		return nil, billyErr(err)
	}
	out := make([]os.FileInfo, len(ents))
	for i, e := range ents {
		out[i], _ = e.Info()
	}
	return out, nil
}

func (b *billyFS) MkdirAll(filename string, perm os.FileMode) error {
	n, err := fsName("mkdir", filename)
	if err != nil {
		return err
	}
	return billyErr(b.f.MkdirAll(n, perm))
}

func (b *billyFS) Symlink(target, link string) error {
	n, err := fsName("symlink", link)
	if err != nil {
		return err
	}
	if d := path.Dir(n); d != "." {
		if err := b.f.MkdirAll(d, 0o755); err != nil {
			return billyErr(err)
		}
	}
	return billyErr(b.f.Symlink(target, n))
}

func (b *billyFS) Readlink(link string) (string, error) {
	n, err := fsName("readlink", link)
	if err != nil {
		return "", err
	}
	t, err := b.f.Readlink(n)
	return t, billyErr(err)
}

func (b *billyFS) Chroot(p string) (billy.Filesystem, error) {
	return chroot.New(b, path.Join("/", p)), nil
}
func (b *billyFS) Root() string { return "/" }

func (b *billyFS) Chmod(name string, mode os.FileMode) error {
	n, err := fsName("chmod", name)
	if err != nil {
		return err
	}
	return billyErr(b.f.Chmod(n, mode))
}

// Lchown changes the owner of a symbolic link itself; NFSv3 SETATTR on a
// link's handle does that.
func (b *billyFS) Lchown(name string, uid, gid int) error {
	n, err := fsName("lchown", name)
	if err != nil {
		return err
	}
	node, err := b.f.resolve("lchown", n, false)
	if err != nil {
		return billyErr(err)
	}
	return billyErr(b.f.setattrNode("lchown", n, node, uid, gid))
}

func (b *billyFS) Chown(name string, uid, gid int) error {
	n, err := fsName("chown", name)
	if err != nil {
		return err
	}
	return billyErr(b.f.Chown(n, uid, gid))
}

func (b *billyFS) Chtimes(name string, atime, mtime time.Time) error {
	n, err := fsName("chtimes", name)
	if err != nil {
		return err
	}
	return billyErr(b.f.Chtimes(n, atime, mtime))
}

// billyFile adapts *File to billy.File.
type billyFile struct {
	*File
	name string
}

func (f *billyFile) Name() string { return f.name }
func (f *billyFile) Lock() error  { return billy.ErrNotSupported }
func (f *billyFile) Unlock() error {
	return billy.ErrNotSupported
}

func (f *billyFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	return n, billyErr(err)
}

func (f *billyFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, billyErr(err)
}

func (f *billyFile) Close() error { return billyErr(f.File.Close()) }

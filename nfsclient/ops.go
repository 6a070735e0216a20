package nfsclient

import (
	"errors"
	"io/fs"
	"path"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// Create creates or truncates name for reading and writing (mode 0666).
func (f *FS) Create(name string) (*File, error) {
	return f.OpenFile(name, O_RDWR|O_CREATE|O_TRUNC, 0o666)
}

// Mkdir creates directory name.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	dir, base, err := f.parent("mkdir", name)
	if err != nil {
		return err
	}
	_, err = f.nfs.Mkdir(f.ctx, dir.fh, base, wire.Sattr{Mode: wire.SetUint32{Set: true, V: uint32(perm.Perm())}})
	return pathErr("mkdir", name, err)
}

// MkdirAll creates name and any missing parents; existing directories are
// fine.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	if name == "." {
		return nil
	}
	if fi, err := f.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return pathErr("mkdir", name, statusErr(wire.ProcMkdir, wire.ErrNotDir))
	}
	if d := path.Dir(name); d != "." {
		if err := f.MkdirAll(d, perm); err != nil {
			return err
		}
	}
	err := f.Mkdir(name, perm)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := f.Stat(name); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes a file, symbolic link or empty directory.
func (f *FS) Remove(name string) error {
	dir, base, err := f.parent("remove", name)
	if err != nil {
		return err
	}
	res, err := f.nfs.Lookup(f.ctx, dir.fh, base)
	if err != nil {
		return pathErr("remove", name, err)
	}
	isDir := res.ObjAttr.Set && res.ObjAttr.Attr.Type == wire.TypeDir
	if !res.ObjAttr.Set {
		g, err := f.nfs.Getattr(f.ctx, res.FH)
		if err != nil {
			return pathErr("remove", name, err)
		}
		isDir = g.Attr.Type == wire.TypeDir
	}
	if isDir {
		f.dirs.forget(name)
		_, err = f.nfs.Rmdir(f.ctx, dir.fh, base)
	} else {
		_, err = f.nfs.Remove(f.ctx, dir.fh, base)
	}
	return pathErr("remove", name, err)
}

// RemoveAll removes name and everything below it; a missing name is not
// an error.
func (f *FS) RemoveAll(name string) error {
	fi, err := f.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		ents, err := f.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := f.RemoveAll(path.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := f.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Rename renames (moves) oldname to newname, replacing newname if the
// server's rules allow.
func (f *FS) Rename(oldname, newname string) error {
	from, fromBase, err := f.parent("rename", oldname)
	if err != nil {
		return err
	}
	to, toBase, err := f.parent("rename", newname)
	if err != nil {
		return err
	}
	f.dirs.forget(oldname)
	f.dirs.forget(newname)
	_, err = f.nfs.Rename(f.ctx, from.fh, fromBase, to.fh, toBase)
	return pathErr("rename", oldname, err)
}

// Symlink creates the symbolic link newname pointing to target.
func (f *FS) Symlink(target, newname string) error {
	dir, base, err := f.parent("symlink", newname)
	if err != nil {
		return err
	}
	_, err = f.nfs.Symlink(f.ctx, dir.fh, base, target, wire.Sattr{})
	return pathErr("symlink", newname, err)
}

// Chmod sets the permission bits of name.
func (f *FS) Chmod(name string, mode fs.FileMode) error {
	return f.setattr("chmod", name, wire.Sattr{Mode: wire.SetUint32{Set: true, V: uint32(mode.Perm() | unixSpecial(mode))}})
}

func unixSpecial(m fs.FileMode) fs.FileMode {
	var s fs.FileMode
	if m&fs.ModeSetuid != 0 {
		s |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		s |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		s |= 0o1000
	}
	return s
}

// Chtimes sets the access and modification times of name.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	toNFS := func(t time.Time) wire.SetTime {
		return wire.SetTime{How: wire.SetToClientTime, Time: wire.Time{Sec: uint32(t.Unix()), Nsec: uint32(t.Nanosecond())}}
	}
	return f.setattr("chtimes", name, wire.Sattr{Atime: toNFS(atime), Mtime: toNFS(mtime)})
}

// Chown sets the owner and group of name.
func (f *FS) Chown(name string, uid, gid int) error {
	return f.setattr("chown", name, wire.Sattr{UID: wire.SetUint32{Set: uid >= 0, V: uint32(uid)}, GID: wire.SetUint32{Set: gid >= 0, V: uint32(gid)}})
}

// setattrNode sets the owner of an already resolved node.
func (f *FS) setattrNode(op, name string, n *node, uid, gid int) error {
	_, err := f.nfs.Setattr(f.ctx, n.fh, wire.Sattr{UID: wire.SetUint32{Set: uid >= 0, V: uint32(uid)}, GID: wire.SetUint32{Set: gid >= 0, V: uint32(gid)}}, nil)
	return pathErr(op, name, err)
}

func (f *FS) setattr(op, name string, sa wire.Sattr) error {
	n, err := f.resolve(op, name, true)
	if err != nil {
		return err
	}
	_, err = f.nfs.Setattr(f.ctx, n.fh, sa, nil)
	return pathErr(op, name, err)
}

// StatFS is the FSSTAT result (RFC 1813 section 3.3.18): total, free and
// available-to-this-user bytes and files.
type StatFS struct {
	TotalBytes, FreeBytes, AvailBytes uint64
	TotalFiles, FreeFiles, AvailFiles uint64
}

// Statfs returns the file system's space figures for name's file system.
func (f *FS) Statfs(name string) (StatFS, error) {
	n, err := f.resolve("statfs", name, true)
	if err != nil {
		return StatFS{}, err
	}
	res, err := f.nfs.Fsstat(f.ctx, n.fh)
	if err != nil {
		return StatFS{}, pathErr("statfs", name, err)
	}
	return StatFS{res.TBytes, res.FBytes, res.ABytes, res.TFiles, res.FFiles, res.AFiles}, nil
}

package nfsclient

import (
	"io/fs"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
)

// FileInfo is an fs.FileInfo from fattr3 (RFC 1813 section 2.6). Sys
// returns the *wire.Fattr.
type FileInfo struct {
	name string
	attr wire.Fattr
}

var _ fs.FileInfo = (*FileInfo)(nil)

func newFileInfo(name string, a *wire.Fattr) *FileInfo { return &FileInfo{name: name, attr: *a} }

func (fi *FileInfo) Name() string       { return fi.name }
func (fi *FileInfo) Size() int64        { return int64(fi.attr.Size) }
func (fi *FileInfo) Mode() fs.FileMode  { return fileMode(&fi.attr) }
func (fi *FileInfo) ModTime() time.Time { return nfsTime(fi.attr.Mtime) }
func (fi *FileInfo) IsDir() bool        { return fi.attr.Type == wire.TypeDir }
func (fi *FileInfo) Sys() any           { return &fi.attr }

func nfsTime(t wire.Time) time.Time { return time.Unix(int64(t.Sec), int64(t.Nsec)) }

// fileMode converts ftype3 and mode3 to an fs.FileMode.
func fileMode(a *wire.Fattr) fs.FileMode {
	m := fs.FileMode(a.Mode & 0o777)
	if a.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if a.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if a.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	switch a.Type {
	case wire.TypeDir:
		m |= fs.ModeDir
	case wire.TypeLnk:
		m |= fs.ModeSymlink
	case wire.TypeBlk:
		m |= fs.ModeDevice
	case wire.TypeChr:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case wire.TypeSock:
		m |= fs.ModeSocket
	case wire.TypeFIFO:
		m |= fs.ModeNamedPipe
	}
	return m
}

// dirEntry is an fs.DirEntry from READDIRPLUS.
type dirEntry struct{ info *FileInfo }

func (d dirEntry) Name() string               { return d.info.name }
func (d dirEntry) IsDir() bool                { return d.info.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.info.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.info, nil }
func (d dirEntry) String() string             { return fs.FormatDirEntry(d) }

package vfs

import (
	"errors"
	"time"
)

// MaxHandle is the largest backend handle. The NFS layer wraps it with its
// own header (the fsid, 1 to 8 bytes) and must stay within NFS3_FHSIZE (64
// bytes).
const MaxHandle = 48

// MinHandle is the smallest backend handle: the NFS layer answers a handle
// too short to hold its header and MinHandle bytes NFS3ERR_BADHANDLE
// before it asks any backend (as knfsd answers one too short for its
// header).
const MinHandle = 7

// Handle is a backend's opaque, stable file identity: it survives server
// restarts and renames, and names exactly one file of one export. The NFS
// layer never looks inside it.
type Handle []byte

// FileType is ftype3, RFC 1813 section 2.6, with the same numbering.
type FileType uint32

// File types.
const (
	TypeReg  FileType = 1
	TypeDir  FileType = 2
	TypeBlk  FileType = 3
	TypeChr  FileType = 4
	TypeLnk  FileType = 5
	TypeSock FileType = 6
	TypeFIFO FileType = 7
)

// Attr is what fattr3 (RFC 1813 section 2.6) needs from a backend.
type Attr struct {
	Type   FileType
	Mode   uint32 // permission bits with setuid (04000), setgid (02000), sticky (01000)
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Major  uint32 // rdev for TypeBlk and TypeChr
	Minor  uint32
	FileID uint64
	Atime  time.Time
	Mtime  time.Time
	Ctime  time.Time
}

// SetAttr lists the attributes to change (nil: leave alone), as sattr3
// (RFC 1813 section 2.6) after the NFS layer resolved SET_TO_SERVER_TIME.
//
// AtimeNow and MtimeNow set the time to the server's clock (utimensat's
// UTIME_NOW, NFS SET_TO_SERVER_TIME): anybody with write permission may,
// where an explicit Atime or Mtime needs ownership. They take precedence
// over Atime and Mtime.
type SetAttr struct {
	Mode     *uint32
	UID      *uint32
	GID      *uint32
	Size     *uint64
	Atime    *time.Time
	Mtime    *time.Time
	AtimeNow bool
	MtimeNow bool
}

// DirEntry is one READDIR entry. Cookie resumes the listing after it.
type DirEntry struct {
	Name   string
	FileID uint64
	Cookie uint64
}

// FSStat is what FSSTAT (RFC 1813 section 3.3.18) reports.
type FSStat struct {
	TotalBytes, FreeBytes, AvailBytes uint64
	TotalFiles, FreeFiles, AvailFiles uint64
}

// Errors specific to the backend layer. Everything else is an errno
// (syscall.Errno, possibly wrapped in *os.PathError) or one of the io/fs
// sentinel errors; the NFS layer maps them to nfsstat3 in one place.
var (
	// ErrStale: the handle named a file that no longer exists, or one
	// outside this export.
	ErrStale = errors.New("vfs: stale file handle")
	// ErrBadHandle: the handle is not one this backend could have made.
	ErrBadHandle = errors.New("vfs: malformed file handle")
	// ErrNotSupported: the backend cannot do this (hard links on a
	// backend without them, mknod of a device, ...).
	ErrNotSupported = errors.New("vfs: operation not supported by this backend")
	// ErrExclusiveMismatch: an EXCLUSIVE create found the name taken by a
	// file created with another verifier (or not by EXCLUSIVE create).
	ErrExclusiveMismatch = errors.New("vfs: exclusive create verifier mismatch")
	// ErrBadCookie: a ReadDir cookie this backend could not have issued
	// for the directory (NFS3ERR_BAD_COOKIE).
	ErrBadCookie = errors.New("vfs: bad readdir cookie")
)

// MaxName is the longest name component a backend accepts (NAME_MAX);
// longer names fail with ENAMETOOLONG.
const MaxName = 255

// FDReader is implemented by backends whose regular files are kernel
// files. ReadFD hands fn a descriptor open for reading on the file named by
// h, with the offset and count of the read, and returns fn's count with
// the end-of-file flag READ needs, as ReadAt does. fn must neither close
// nor keep the descriptor. The NFS READ path uses it to splice file pages
// to a TCP socket without copying them through user memory.
type FDReader interface {
	ReadFD(h Handle, off int64, n int, fn func(fd int, off int64, n int) (int, error)) (int, bool, error)
}

// AttrReader is an optional FS extension for backends that must look at
// a file's attributes to read it anyway (the CephFS backend: its end-of-file
// test needs the size): ReadAtAttr is ReadAt that also returns h's
// attributes as that read found them, so that READ needs no GetAttr of
// its own. On error the attributes are not meaningful (READ then asks
// GetAttr to give the error its status). The NFS layer uses it instead
// of GetAttr and ReadAt (or ReadFD) for every READ of at least one byte
// and checks read permission on the attributes it returns: the data of a
// READ refused that way is read but never sent.
type AttrReader interface {
	ReadAtAttr(h Handle, p []byte, off int64) (n int, eof bool, a Attr, err error)
}

// AttrWriter is an optional FS extension for backends that look at a
// file's attributes after writing it anyway (the CephFS backend, for the
// set-user-ID rule): WriteAtAttr is WriteAt that also returns h's
// attributes after the write, which WRITE reports instead of asking
// GetAttr again. On error the attributes are not meaningful.
type AttrWriter interface {
	WriteAtAttr(c Cred, h Handle, p []byte, off int64, sync bool) (n int, after Attr, err error)
}

// DirAttrs are a directory's attributes around a change of one of its
// entries, taken by the backend on the directory object it changed:
// Before just before the change, After just after it (whether or not the
// change succeeded). The NFS layer reports them as the call's wcc_data
// (RFC 1813 section 2.6) instead of asking GetAttr before and after.
type DirAttrs struct {
	Before, After         Attr
	HaveBefore, HaveAfter bool
}

// DirAttrChanger is an optional FS extension for backends that hold the
// directory open while they change it (the OS backend): CreateDirAttrs,
// RemoveDirAttrs and RmdirDirAttrs are Create, Remove and Rmdir that
// also return d (by value: a pointer through the interface would put it
// on the heap for every call). When d.HaveBefore is false, the backend changed
// nothing (the directory could not be resolved or looked at, or the name
// was refused first) and the error says why; the caller then finds the
// directory's attributes itself. After is only as good as a GetAttr
// right after the call: HaveAfter false asks the caller to fetch them.
type DirAttrChanger interface {
	CreateDirAttrs(c Cred, dir Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (h Handle, a Attr, d DirAttrs, err error)
	RemoveDirAttrs(c Cred, dir Handle, name string) (d DirAttrs, err error)
	RmdirDirAttrs(c Cred, dir Handle, name string) (d DirAttrs, err error)
}

// DirLookuper is an optional FS extension for backends that hold the
// directory open while they look a name up in it (the OS backend):
// LookupDirAttr is Lookup that also returns the directory's attributes,
// taken on the object it looked in, for LOOKUP's dir_attributes (RFC 1813
// section 3.3.3) instead of a GetAttr of its own: one resolution and one
// stat of the directory instead of two. haveDir false means the
// directory could not be resolved or looked at (err says why; the caller
// asks GetAttr); with haveDir true, err is the lookup's own answer (a
// directory that is not one answers ENOTDIR).
type DirLookuper interface {
	LookupDirAttr(c Cred, dir Handle, name string) (h Handle, a Attr, d Attr, haveDir bool, err error)
}

// AttrSetter is an optional FS extension for SETATTR (RFC 1813 section
// 3.3.2), which needs the object's attributes before the change (for its
// guard, its own permission checks and wcc_data) and after it:
// SetAttrAround resolves h once and stats it, hands those attributes to
// decide, and, when decide says apply, makes the change s as SetAttr does
// (deciding as SetAttr would from that same stat) and stats the object
// again. havePre false means h could not be resolved or stat'ed: decide
// did not run and err says why. havePost false after an applied change
// asks the caller to fetch the attributes itself; when decide did not
// apply, nothing changed, err is nil and post is not set.
type AttrSetter interface {
	SetAttrAround(c Cred, h Handle, decide func(pre *Attr) (s SetAttr, apply bool)) (pre, post Attr, havePre, havePost bool, err error)
}

// EntryLooker is an optional FS extension for READDIRPLUS (RFC 1813
// section 3.3.17), whose every entry is a lookup in the one directory:
// LookupEntries resolves dir once and calls fn with lookup, which answers
// as Lookup(Cred{}, dir, name) does (the server's own lookup: the caller's
// search permission was checked once for the page), without resolving
// dir again for each name; lookup is valid only while fn runs. An error
// means dir could not be resolved and fn did not run (the caller then
// looks each name up with Lookup, which reports it).
type EntryLooker interface {
	LookupEntries(dir Handle, fn func(lookup func(name string) (Handle, Attr, error))) error
}

// LinkSupporter is an optional FS extension: a backend without hard
// links reports false and FSINFO then leaves FSF3_LINK out. For backends
// without the method, FSINFO probes: it asks for a hard link of the
// export root (a directory, which no Unix file system links: EPERM,
// nothing changes) and takes ErrNotSupported as "no links".
type LinkSupporter interface {
	SupportsLinks() bool
}

// FS is one export's filesystem, addressed by handles. Implementations are
// safe for concurrent use. Names are single path components: the backend
// rejects "", "/"-containing names and anything that would leave the
// export (EINVAL or EACCES); "." and ".." are resolved by Lookup only, and
// ".." of the root is the root.
//
// Methods that take a Cred run as that identity and enforce the Unix
// permission rules for it (search and write permission on directories,
// sticky directories, ownership for chmod, chown and explicit times,
// set-group-ID inheritance and clearing, set-user-ID clearing on write
// and truncation, protected hard links); the owner of a new object is the
// Cred (group: the directory's when it is set-group-ID). Permission
// failures are EACCES or EPERM, as the kernel's. Methods without a Cred
// (GetAttr, ReadLink, ReadAt, ReadFD, Commit, ReadDir, FSStat) run as the
// server: the NFS layer checks read access for READ and READDIR itself,
// with NFS's owner override (see doc.go, "Identity").
type FS interface {
	// Root returns the export root's handle.
	Root() Handle
	// GetAttr returns the attributes of h.
	GetAttr(h Handle) (Attr, error)
	// SetAttr changes attributes of h as c (a size change truncates or
	// extends; the caller has checked write permission for it, which NFS
	// grants the owner regardless of the mode).
	SetAttr(c Cred, h Handle, s SetAttr) error
	// Lookup finds name in directory dir; c needs search permission.
	Lookup(c Cred, dir Handle, name string) (Handle, Attr, error)
	// ReadLink returns a symbolic link's target.
	ReadLink(h Handle) (string, error)
	// ReadAt reads into p from offset off. eof is true when the read
	// reached the end of the file. Open files are cached across calls.
	ReadAt(h Handle, p []byte, off int64) (n int, eof bool, err error)
	// WriteAt writes p at offset off as c (the caller has checked write
	// permission; c decides whether set-user-ID and set-group-ID bits are
	// cleared); with sync the data and all of the file's metadata are on
	// stable storage before it returns (fsync(2), what RFC 1813 calls
	// FILE_SYNC).
	WriteAt(c Cred, h Handle, p []byte, off int64, sync bool) (int, error)
	// Commit flushes h's data and metadata to stable storage.
	Commit(h Handle) error
	// Create makes a regular file owned by c. With exclusive, verf is
	// stored so that a retransmitted create with the same verifier
	// succeeds (returning the same file) and one with another verifier
	// fails with ErrExclusiveMismatch; without it, an existing name fails
	// with fs.ErrExist only when guarded is true, else the file is opened
	// (and truncated when the caller then sets size 0 through SetAttr).
	Create(c Cred, dir Handle, name string, mode uint32, guarded, exclusive bool, verf [8]byte) (Handle, Attr, error)
	// Mkdir makes a directory owned by c.
	Mkdir(c Cred, dir Handle, name string, mode uint32) (Handle, Attr, error)
	// Symlink makes a symbolic link to target owned by c.
	Symlink(c Cred, dir Handle, name, target string, mode uint32) (Handle, Attr, error)
	// Mknod makes a FIFO, socket or device node owned by c;
	// ErrNotSupported where the backend cannot.
	Mknod(c Cred, dir Handle, name string, typ FileType, mode uint32, major, minor uint32) (Handle, Attr, error)
	// Remove unlinks a non-directory.
	Remove(c Cred, dir Handle, name string) error
	// Rmdir removes an empty directory.
	Rmdir(c Cred, dir Handle, name string) error
	// Rename moves fromName in fromDir to toName in toDir, replacing a
	// compatible target, as rename(2).
	Rename(c Cred, fromDir Handle, fromName string, toDir Handle, toName string) error
	// Link makes a hard link to h; ErrNotSupported where the backend has
	// none.
	Link(c Cred, h Handle, dir Handle, name string) error
	// ReadDir lists dir starting after cookie (0: from the start),
	// returning at most max entries, "." and ".." included, and the
	// cookie verifier to hand out with them (zero where cookies stay
	// valid as long as handles do; see the package documentation). verf is the
	// verifier the caller got with cookie: zero (none known) is accepted,
	// any other value than the current one fails a nonzero cookie with
	// ErrBadCookie, as does a cookie the backend can no longer honour.
	// An entry that is not removed is returned exactly once across a
	// listing resumed from any cookie the backend issued, however the
	// directory changes between calls; entries added or removed meanwhile
	// may or may not appear. Each backend's doc.go gives its scheme.
	ReadDir(dir Handle, cookie, verf uint64, max int) (entries []DirEntry, newVerf uint64, eof bool, err error)
	// FSStat reports space and file counts.
	FSStat() (FSStat, error)
	// Close releases cached open files and other resources.
	Close() error
}

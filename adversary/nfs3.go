package adversary

import "fmt"

// Program numbers and versions, RFC 1813 sections 3 and 5.
const (
	nfsProgram   = 100003
	nfsVersion   = 3
	mountProgram = 100005
	mountVersion = 3
)

// NFSv3 procedure numbers, RFC 1813 section 3.3.
const (
	procNull    = 0
	procGetattr = 1
	procSetattr = 2
	procLookup  = 3
	procRead    = 6
	procWrite   = 7
	procCreate  = 8
	procMkdir   = 9
	procSymlink = 10
	procMknod   = 11
	procRemove  = 12
	procRmdir   = 13
	procRename  = 14
	procLink    = 15
	procReaddir = 16
)

// Status is an nfsstat3, RFC 1813 section 2.6.
type Status uint32

// The nfsstat3 values the tests name.
const (
	OK           Status = 0
	ErrPerm      Status = 1
	ErrNoEnt     Status = 2
	ErrAcces     Status = 13
	ErrExist     Status = 17
	ErrXDev      Status = 18
	ErrNotDir    Status = 20
	ErrIsDir     Status = 21
	ErrInval     Status = 22
	ErrROFS      Status = 30
	ErrStale     Status = 70
	ErrBadHandle Status = 10001
)

func (s Status) String() string {
	names := map[Status]string{OK: "OK", ErrPerm: "PERM", ErrNoEnt: "NOENT", ErrAcces: "ACCES", ErrExist: "EXIST",
		ErrXDev: "XDEV", ErrNotDir: "NOTDIR", ErrIsDir: "ISDIR", ErrInval: "INVAL", ErrROFS: "ROFS",
		ErrStale: "STALE", ErrBadHandle: "BADHANDLE"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("nfsstat3(%d)", uint32(s))
}

// Sattr is a sattr3, RFC 1813 section 2.6: each field is sent only when
// its Set flag is on. Times are always DONT_CHANGE.
type Sattr struct {
	SetMode, SetUID, SetGID, SetSize bool
	Mode, UID, GID                   uint32
	Size                             uint64
}

// Mode is a sattr3 setting only the mode.
func Mode(m uint32) Sattr { return Sattr{SetMode: true, Mode: m} }

func (e *encoder) sattr(a Sattr) {
	e.bool(a.SetMode)
	if a.SetMode {
		e.u32(a.Mode)
	}
	e.bool(a.SetUID)
	if a.SetUID {
		e.u32(a.UID)
	}
	e.bool(a.SetGID)
	if a.SetGID {
		e.u32(a.GID)
	}
	e.bool(a.SetSize)
	if a.SetSize {
		e.u64(a.Size)
	}
	e.u32(0) // atime DONT_CHANGE
	e.u32(0) // mtime DONT_CHANGE
}

// diropargs3, RFC 1813 section 3.3.3.
func (e *encoder) dirop(dir []byte, name string) {
	e.opaque(dir)
	e.str(name)
}

// Attr is the part of a fattr3 (RFC 1813 section 2.6) the tests use.
type Attr struct {
	Type, Mode, Nlink, UID, GID uint32
	Size                        uint64
	FSID, FileID                uint64
}

func (d *decoder) fattr() Attr {
	var a Attr
	a.Type, a.Mode, a.Nlink, a.UID, a.GID = d.u32(), d.u32(), d.u32(), d.u32(), d.u32()
	a.Size = d.u64()
	d.skip(8 + 8) // used, rdev
	a.FSID, a.FileID = d.u64(), d.u64()
	d.skip(3 * 8) // atime, mtime, ctime
	return a
}

// postOpAttr reads a post_op_attr.
func (d *decoder) postOpAttr() (Attr, bool) {
	if d.bool() {
		return d.fattr(), true
	}
	return Attr{}, false
}

// wcc reads a wcc_data, RFC 1813 section 2.6.
func (d *decoder) wcc() {
	if d.bool() {
		d.skip(8 + 8 + 8) // size, mtime, ctime
	}
	d.postOpAttr()
}

// maxFH is NFS3_FHSIZE, RFC 1813 section 2.4.
const maxFH = 64

// nfs sends an NFSv3 call and decodes the status word of its results.
func (c *Conn) nfs(proc uint32, e *encoder) (Status, *decoder, error) {
	res, err := c.Call(nfsProgram, nfsVersion, proc, e.b)
	if err != nil {
		return 0, nil, err
	}
	d := &decoder{b: res}
	st := Status(d.u32())
	return st, d, d.err
}

// Null calls NFSPROC3_NULL.
func (c *Conn) Null() error {
	_, err := c.Call(nfsProgram, nfsVersion, procNull, nil)
	return err
}

// Mnt calls MOUNTPROC3_MNT (RFC 1813 section 5.2.1) and returns the
// mountstat3 and, when it is 0, the root handle.
func (c *Conn) Mnt(path string) ([]byte, uint32, error) {
	var e encoder
	e.str(path)
	res, err := c.Call(mountProgram, mountVersion, 1, e.b)
	if err != nil {
		return nil, 0, err
	}
	d := decoder{b: res}
	st := d.u32()
	if st != 0 {
		return nil, st, d.err
	}
	fh := append([]byte(nil), d.opaque(maxFH)...)
	return fh, 0, d.err
}

// Getattr calls GETATTR3, RFC 1813 section 3.3.1.
func (c *Conn) Getattr(fh []byte) (Attr, Status, error) {
	var e encoder
	e.opaque(fh)
	st, d, err := c.nfs(procGetattr, &e)
	if err != nil || st != OK {
		return Attr{}, st, err
	}
	a := d.fattr()
	return a, st, d.err
}

// Setattr calls SETATTR3 without a guard, RFC 1813 section 3.3.2.
func (c *Conn) Setattr(fh []byte, a Sattr) (Status, error) {
	var e encoder
	e.opaque(fh)
	e.sattr(a)
	e.bool(false)
	st, _, err := c.nfs(procSetattr, &e)
	return st, err
}

// Lookup calls LOOKUP3, RFC 1813 section 3.3.3.
func (c *Conn) Lookup(dir []byte, name string) ([]byte, Attr, Status, error) {
	var e encoder
	e.dirop(dir, name)
	st, d, err := c.nfs(procLookup, &e)
	if err != nil || st != OK {
		return nil, Attr{}, st, err
	}
	fh := append([]byte(nil), d.opaque(maxFH)...)
	a, _ := d.postOpAttr()
	return fh, a, st, d.err
}

// Read calls READ3, RFC 1813 section 3.3.6. The data is a copy.
func (c *Conn) Read(fh []byte, off uint64, count uint32) ([]byte, Status, error) {
	var e encoder
	e.opaque(fh)
	e.u64(off)
	e.u32(count)
	st, d, err := c.nfs(procRead, &e)
	if err != nil || st != OK {
		return nil, st, err
	}
	d.postOpAttr()
	d.u32() // count
	d.bool()
	data := append([]byte(nil), d.opaque(MaxRecord)...)
	return data, st, d.err
}

// ReadArgs is the argument of READ3, for tests that send calls with
// Send and never read the replies.
func ReadArgs(fh []byte, off uint64, count uint32) []byte {
	var e encoder
	e.opaque(fh)
	e.u64(off)
	e.u32(count)
	return e.b
}

// Program, version and procedure numbers for calls made with Send.
const (
	NFSProgram = nfsProgram
	NFSVersion = nfsVersion
	ProcRead   = procRead
	ProcNull   = procNull
)

// Write calls WRITE3 with stable FILE_SYNC, RFC 1813 section 3.3.7.
func (c *Conn) Write(fh []byte, off uint64, data []byte) (Status, error) {
	var e encoder
	e.opaque(fh)
	e.u64(off)
	e.u32(uint32(len(data)))
	e.u32(2) // FILE_SYNC
	e.opaque(data)
	st, _, err := c.nfs(procWrite, &e)
	return st, err
}

// CreateMode is a createmode3, RFC 1813 section 3.3.8.
type CreateMode uint32

// The createmode3 values.
const (
	Unchecked CreateMode = 0
	Guarded   CreateMode = 1
)

// newObject reads the post_op_fh3 of CREATE, MKDIR, SYMLINK and MKNOD
// results.
func newObject(st Status, d *decoder, err error) ([]byte, Status, error) {
	if err != nil || st != OK {
		return nil, st, err
	}
	var fh []byte
	if d.bool() {
		fh = append([]byte(nil), d.opaque(maxFH)...)
	}
	return fh, st, d.err
}

// Create calls CREATE3 in mode UNCHECKED or GUARDED.
func (c *Conn) Create(dir []byte, name string, how CreateMode, a Sattr) ([]byte, Status, error) {
	var e encoder
	e.dirop(dir, name)
	e.u32(uint32(how))
	e.sattr(a)
	return newObject(c.nfs(procCreate, &e))
}

// Mkdir calls MKDIR3, RFC 1813 section 3.3.9.
func (c *Conn) Mkdir(dir []byte, name string, a Sattr) ([]byte, Status, error) {
	var e encoder
	e.dirop(dir, name)
	e.sattr(a)
	return newObject(c.nfs(procMkdir, &e))
}

// Symlink calls SYMLINK3, RFC 1813 section 3.3.10.
func (c *Conn) Symlink(dir []byte, name, target string, a Sattr) ([]byte, Status, error) {
	var e encoder
	e.dirop(dir, name)
	e.sattr(a)
	e.str(target)
	return newObject(c.nfs(procSymlink, &e))
}

// MknodFIFO calls MKNOD3 for a FIFO (ftype3 NF3FIFO, 7), RFC 1813
// section 3.3.11.
func (c *Conn) MknodFIFO(dir []byte, name string, a Sattr) ([]byte, Status, error) {
	var e encoder
	e.dirop(dir, name)
	e.u32(7)
	e.sattr(a)
	return newObject(c.nfs(procMknod, &e))
}

// Remove calls REMOVE3, RFC 1813 section 3.3.12.
func (c *Conn) Remove(dir []byte, name string) (Status, error) {
	var e encoder
	e.dirop(dir, name)
	st, _, err := c.nfs(procRemove, &e)
	return st, err
}

// Rmdir calls RMDIR3, RFC 1813 section 3.3.13.
func (c *Conn) Rmdir(dir []byte, name string) (Status, error) {
	var e encoder
	e.dirop(dir, name)
	st, _, err := c.nfs(procRmdir, &e)
	return st, err
}

// Rename calls RENAME3, RFC 1813 section 3.3.14.
func (c *Conn) Rename(fromDir []byte, from string, toDir []byte, to string) (Status, error) {
	var e encoder
	e.dirop(fromDir, from)
	e.dirop(toDir, to)
	st, _, err := c.nfs(procRename, &e)
	return st, err
}

// Link calls LINK3, RFC 1813 section 3.3.15.
func (c *Conn) Link(file, dir []byte, name string) (Status, error) {
	var e encoder
	e.opaque(file)
	e.dirop(dir, name)
	st, _, err := c.nfs(procLink, &e)
	return st, err
}

// Readdir calls READDIR3 (RFC 1813 section 3.3.16) until EOF, at most
// 64 pages, and returns the names without "." and "..".
func (c *Conn) Readdir(dir []byte) ([]string, Status, error) {
	var names []string
	var cookie uint64
	verf := make([]byte, 8)
	for page := 0; page < 64; page++ {
		var e encoder
		e.opaque(dir)
		e.u64(cookie)
		e.fixed(verf)
		e.u32(8192)
		st, d, err := c.nfs(procReaddir, &e)
		if err != nil || st != OK {
			return names, st, err
		}
		d.postOpAttr()
		verf = append([]byte(nil), d.fixed(8)...)
		for d.err == nil && d.bool() {
			d.u64() // fileid
			name := string(d.opaque(255))
			cookie = d.u64()
			if name != "." && name != ".." {
				names = append(names, name)
			}
		}
		eof := d.bool()
		if d.err != nil {
			return names, st, d.err
		}
		if eof {
			return names, OK, nil
		}
	}
	return names, OK, fmt.Errorf("adversary: READDIR did not reach EOF in 64 pages")
}

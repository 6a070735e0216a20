package wire

import "fmt"

// Program and version numbers, RFC 1813 section 3.
const (
	Program = 100003
	Version = 3
)

// Procedure numbers, RFC 1813 section 3.
const (
	ProcNull        = 0
	ProcGetattr     = 1
	ProcSetattr     = 2
	ProcLookup      = 3
	ProcAccess      = 4
	ProcReadlink    = 5
	ProcRead        = 6
	ProcWrite       = 7
	ProcCreate      = 8
	ProcMkdir       = 9
	ProcSymlink     = 10
	ProcMknod       = 11
	ProcRemove      = 12
	ProcRmdir       = 13
	ProcRename      = 14
	ProcLink        = 15
	ProcReaddir     = 16
	ProcReaddirplus = 17
	ProcFsstat      = 18
	ProcFsinfo      = 19
	ProcPathconf    = 20
	ProcCommit      = 21
	// NumProcs is the number of NFSv3 procedures.
	NumProcs = 22
)

// ProcNames is indexed by procedure number.
var ProcNames = [NumProcs]string{
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ",
	"WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR",
	"RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",
	"PATHCONF", "COMMIT",
}

// Sizes and limits, RFC 1813 section 2.4 and 2.5.
const (
	FHSize         = 64      // NFS3_FHSIZE
	CookieVerfSize = 8       // NFS3_COOKIEVERFSIZE
	CreateVerfSize = 8       // NFS3_CREATEVERFSIZE
	WriteVerfSize  = 8       // NFS3_WRITEVERFSIZE
	MaxName        = 255     // longest filename3 the server accepts (NAME_MAX)
	NameDecodeMax  = 1024    // longest filename3 decoded; longer is GARBAGE_ARGS
	MaxPath        = 4096    // longest nfspath3 (PATH_MAX)
	MaxData        = 1 << 20 // largest READ or WRITE transfer
)

// Status is nfsstat3, RFC 1813 section 2.6.
type Status uint32

// nfsstat3 values.
const (
	OK             Status = 0
	ErrPerm        Status = 1
	ErrNoEnt       Status = 2
	ErrIO          Status = 5
	ErrNXIO        Status = 6
	ErrAcces       Status = 13
	ErrExist       Status = 17
	ErrXDev        Status = 18
	ErrNoDev       Status = 19
	ErrNotDir      Status = 20
	ErrIsDir       Status = 21
	ErrInval       Status = 22
	ErrFBig        Status = 27
	ErrNoSpc       Status = 28
	ErrROFS        Status = 30
	ErrMLink       Status = 31
	ErrNameTooLong Status = 63
	ErrNotEmpty    Status = 66
	ErrDQuot       Status = 69
	ErrStale       Status = 70
	ErrRemote      Status = 71
	ErrBadHandle   Status = 10001
	ErrNotSync     Status = 10002
	ErrBadCookie   Status = 10003
	ErrNotSupp     Status = 10004
	ErrTooSmall    Status = 10005
	ErrServerFault Status = 10006
	ErrBadType     Status = 10007
	ErrJukebox     Status = 10008
)

var statusNames = map[Status]string{
	OK: "NFS3_OK", ErrPerm: "NFS3ERR_PERM", ErrNoEnt: "NFS3ERR_NOENT", ErrIO: "NFS3ERR_IO",
	ErrNXIO: "NFS3ERR_NXIO", ErrAcces: "NFS3ERR_ACCES", ErrExist: "NFS3ERR_EXIST",
	ErrXDev: "NFS3ERR_XDEV", ErrNoDev: "NFS3ERR_NODEV", ErrNotDir: "NFS3ERR_NOTDIR",
	ErrIsDir: "NFS3ERR_ISDIR", ErrInval: "NFS3ERR_INVAL", ErrFBig: "NFS3ERR_FBIG",
	ErrNoSpc: "NFS3ERR_NOSPC", ErrROFS: "NFS3ERR_ROFS", ErrMLink: "NFS3ERR_MLINK",
	ErrNameTooLong: "NFS3ERR_NAMETOOLONG", ErrNotEmpty: "NFS3ERR_NOTEMPTY",
	ErrDQuot: "NFS3ERR_DQUOT", ErrStale: "NFS3ERR_STALE", ErrRemote: "NFS3ERR_REMOTE",
	ErrBadHandle: "NFS3ERR_BADHANDLE", ErrNotSync: "NFS3ERR_NOT_SYNC",
	ErrBadCookie: "NFS3ERR_BAD_COOKIE", ErrNotSupp: "NFS3ERR_NOTSUPP",
	ErrTooSmall: "NFS3ERR_TOOSMALL", ErrServerFault: "NFS3ERR_SERVERFAULT",
	ErrBadType: "NFS3ERR_BADTYPE", ErrJukebox: "NFS3ERR_JUKEBOX",
}

// StatusNames returns the nfsstat3 names by value (a new map).
func StatusNames() map[uint32]string {
	m := make(map[uint32]string, len(statusNames))
	for st, name := range statusNames {
		m[uint32(st)] = name
	}
	return m
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("nfsstat3(%d)", uint32(s))
}

// FileType is ftype3, RFC 1813 section 2.6.
type FileType uint32

// ftype3 values.
const (
	TypeReg  FileType = 1
	TypeDir  FileType = 2
	TypeBlk  FileType = 3
	TypeChr  FileType = 4
	TypeLnk  FileType = 5
	TypeSock FileType = 6
	TypeFIFO FileType = 7
)

// ACCESS3 bits, RFC 1813 section 3.3.4.
const (
	AccessRead    = 0x0001
	AccessLookup  = 0x0002
	AccessModify  = 0x0004
	AccessExtend  = 0x0008
	AccessDelete  = 0x0010
	AccessExecute = 0x0020
	AccessAll     = 0x003f
)

// StableHow is stable_how, RFC 1813 section 3.3.7.
type StableHow uint32

// stable_how values.
const (
	Unstable StableHow = 0
	DataSync StableHow = 1
	FileSync StableHow = 2
)

// String is the RFC's name of s.
func (s StableHow) String() string {
	switch s {
	case Unstable:
		return "UNSTABLE"
	case DataSync:
		return "DATA_SYNC"
	case FileSync:
		return "FILE_SYNC"
	}
	return fmt.Sprintf("stable_how(%d)", uint32(s))
}

// CreateMode is createmode3, RFC 1813 section 3.3.8.
type CreateMode uint32

// createmode3 values.
const (
	Unchecked CreateMode = 0
	Guarded   CreateMode = 1
	Exclusive CreateMode = 2
)

// TimeHow is time_how, RFC 1813 section 2.6 (sattr3).
type TimeHow uint32

// time_how values.
const (
	DontChange      TimeHow = 0
	SetToServerTime TimeHow = 1
	SetToClientTime TimeHow = 2
)

// FSINFO properties, RFC 1813 section 3.3.19.
const (
	FSFLink        = 0x0001
	FSFSymlink     = 0x0002
	FSFHomogeneous = 0x0008
	FSFCanSetTime  = 0x0010
)

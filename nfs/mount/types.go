package mount

import (
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Program number and versions (RFC 1813 appendix I; versions 1 and 2 from
// RFC 1094 appendix A and the POSIX extension).
const (
	Prog  = 100005
	Vers1 = 1
	Vers2 = 2
	Vers3 = 3
)

// Procedures, the same numbers in every version (RFC 1813 section 5.2).
const (
	ProcNull    = 0
	ProcMnt     = 1
	ProcDump    = 2
	ProcUmnt    = 3
	ProcUmntAll = 4
	ProcExport  = 5
)

// Limits, RFC 1813 section 5.1.
const (
	MNTPATHLEN = 1024 // maximum bytes in a dirpath
	MNTNAMLEN  = 255  // maximum bytes in a name
	FHSIZE3    = 64   // maximum bytes in an fhandle3
)

// Authentication flavors that appear in a MNT reply (RFC 5531 appendix A).
const (
	AuthNone = 0
	AuthSys  = 1
)

// Stat is mountstat3, RFC 1813 section 5.1.5. It implements error, so
// client helpers return it for a failed MNT and errors.Is matches it.
type Stat uint32

// mountstat3 values.
const (
	StatOK          Stat = 0     // MNT3_OK
	StatPerm        Stat = 1     // MNT3ERR_PERM
	StatNoEnt       Stat = 2     // MNT3ERR_NOENT
	StatIO          Stat = 5     // MNT3ERR_IO
	StatAcces       Stat = 13    // MNT3ERR_ACCES
	StatNotDir      Stat = 20    // MNT3ERR_NOTDIR
	StatInval       Stat = 22    // MNT3ERR_INVAL
	StatNameTooLong Stat = 63    // MNT3ERR_NAMETOOLONG
	StatNotSupp     Stat = 10004 // MNT3ERR_NOTSUPP
	StatServerFault Stat = 10006 // MNT3ERR_SERVERFAULT
)

func (s Stat) String() string {
	switch s {
	case StatOK:
		return "MNT3_OK"
	case StatPerm:
		return "MNT3ERR_PERM"
	case StatNoEnt:
		return "MNT3ERR_NOENT"
	case StatIO:
		return "MNT3ERR_IO"
	case StatAcces:
		return "MNT3ERR_ACCES"
	case StatNotDir:
		return "MNT3ERR_NOTDIR"
	case StatInval:
		return "MNT3ERR_INVAL"
	case StatNameTooLong:
		return "MNT3ERR_NAMETOOLONG"
	case StatNotSupp:
		return "MNT3ERR_NOTSUPP"
	case StatServerFault:
		return "MNT3ERR_SERVERFAULT"
	}
	return fmt.Sprintf("mountstat3(%d)", uint32(s))
}

func (s Stat) Error() string { return "mount: " + s.String() }

// Export is one entry of the export list: exportnode, RFC 1813 section
// 5.2.5 (ex_dir and ex_groups). AuthFlavors is not on the wire of EXPORT;
// backends use it to describe the export and it is ignored here.
type Export struct {
	Path        string
	Groups      []string
	AuthFlavors []uint32
}

// Entry is one entry of the mount list: mountbody, RFC 1813 section 5.2.2.
type Entry struct {
	Hostname  string // ml_hostname, the client's IP address here
	Directory string // ml_directory
}

// DecodeDirpath decodes the dirpath argument of MNT and UMNT: a string of
// at most MNTPATHLEN bytes (RFC 1813 section 5.1.1). Trailing bytes are
// ignored, as rpcgen's decoders do.
func DecodeDirpath(args []byte) (string, error) {
	r := xdr.NewReader(args)
	p := r.String(MNTPATHLEN)
	return p, r.Err()
}

// AppendDirpath appends a dirpath.
func AppendDirpath(b []byte, p string) []byte { return xdr.AppendString(b, p) }

// AppendMountRes appends mountres3 (RFC 1813 section 5.2.1): the status and,
// for MNT3_OK, mountres3_ok { fhandle3 fhandle; int auth_flavors<>; }.
func AppendMountRes(b []byte, stat Stat, fh []byte, flavors []uint32) []byte {
	b = xdr.AppendUint32(b, uint32(stat))
	if stat != StatOK {
		return b
	}
	b = xdr.AppendOpaque(b, fh)
	b = xdr.AppendUint32(b, uint32(len(flavors)))
	for _, f := range flavors {
		b = xdr.AppendUint32(b, f)
	}
	return b
}

// maxFlavors bounds the auth_flavors array a client accepts.
const maxFlavors = 64

// DecodeMountRes decodes mountres3. A status other than MNT3_OK is returned
// as the Stat error.
func DecodeMountRes(r *xdr.Reader) (fh []byte, flavors []uint32, err error) {
	stat := Stat(r.Uint32())
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	if stat != StatOK {
		return nil, nil, stat
	}
	fh = append([]byte(nil), r.Opaque(FHSIZE3)...)
	n := r.Count(maxFlavors, 4)
	flavors = make([]uint32, n)
	for i := range flavors {
		flavors[i] = r.Uint32()
	}
	if err := r.Err(); err != nil {
		return nil, nil, err
	}
	return fh, flavors, nil
}

// AppendMountBody appends one element of a mountlist: TRUE, then mountbody
// up to ml_next.
func AppendMountBody(b []byte, e *Entry) []byte {
	b = xdr.AppendBool(b, true)
	b = xdr.AppendString(b, e.Hostname)
	return xdr.AppendString(b, e.Directory)
}

// AppendMountList appends a mountlist (RFC 1813 section 5.2.2): each
// mountbody preceded by TRUE, ended by FALSE.
func AppendMountList(b []byte, l []Entry) []byte {
	for i := range l {
		b = AppendMountBody(b, &l[i])
	}
	return xdr.AppendBool(b, false)
}

// DecodeMountList decodes a mountlist.
func DecodeMountList(r *xdr.Reader) ([]Entry, error) {
	var l []Entry
	for r.Bool() {
		var e Entry
		e.Hostname = r.String(MNTNAMLEN)
		e.Directory = r.String(MNTPATHLEN)
		if r.Err() != nil {
			break
		}
		l = append(l, e)
	}
	return l, r.Err()
}

// AppendExportNode appends one element of an exports list: TRUE, ex_dir
// and the groups list (RFC 1813 section 5.2.5).
func AppendExportNode(b []byte, e *Export) []byte {
	b = xdr.AppendBool(b, true)
	b = xdr.AppendString(b, e.Path)
	for _, g := range e.Groups {
		b = xdr.AppendBool(b, true)
		b = xdr.AppendString(b, g)
	}
	return xdr.AppendBool(b, false)
}

// AppendExports appends an exports list.
func AppendExports(b []byte, l []Export) []byte {
	for i := range l {
		b = AppendExportNode(b, &l[i])
	}
	return xdr.AppendBool(b, false)
}

// DecodeExports decodes an exports list.
func DecodeExports(r *xdr.Reader) ([]Export, error) {
	var l []Export
	for r.Bool() {
		e := Export{Path: r.String(MNTPATHLEN)}
		for r.Bool() {
			g := r.String(MNTNAMLEN)
			if r.Err() != nil {
				break
			}
			e.Groups = append(e.Groups, g)
		}
		if r.Err() != nil {
			break
		}
		l = append(l, e)
	}
	return l, r.Err()
}

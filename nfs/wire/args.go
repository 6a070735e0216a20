package wire

import "github.com/gonfsrdma/gonfsrdma/xdr"

// Trailing bytes after the arguments are ignored, as knfsd does.

// FHArgs is the argument of GETATTR (GETATTR3args, RFC 1813 section
// 3.3.1), READLINK (READLINK3args, section 3.3.5), FSSTAT (FSSTAT3args,
// section 3.3.18), FSINFO (FSINFO3args, section 3.3.19) and PATHCONF
// (PATHCONF3args, section 3.3.20): a single nfs_fh3.
type FHArgs struct {
	FH []byte
}

// Append appends a.
func (a *FHArgs) Append(b []byte) []byte { return AppendFH(b, a.FH) }

// Decode decodes a.
func (a *FHArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	return r.Err()
}

// Argument types named after their RFC structs.
type (
	GetattrArgs  = FHArgs    // GETATTR3args, RFC 1813 section 3.3.1
	ReadlinkArgs = FHArgs    // READLINK3args, RFC 1813 section 3.3.5
	FsstatArgs   = FHArgs    // FSSTAT3args, RFC 1813 section 3.3.18
	FsinfoArgs   = FHArgs    // FSINFO3args, RFC 1813 section 3.3.19
	PathconfArgs = FHArgs    // PATHCONF3args, RFC 1813 section 3.3.20
	LookupArgs   = DirOpArgs // LOOKUP3args, RFC 1813 section 3.3.3
	RemoveArgs   = DirOpArgs // REMOVE3args, RFC 1813 section 3.3.12
	RmdirArgs    = DirOpArgs // RMDIR3args, RFC 1813 section 3.3.13
)

// SetattrArgs is SETATTR3args, RFC 1813 section 3.3.2.
type SetattrArgs struct {
	FH    []byte
	Attr  Sattr
	Guard bool // sattrguard3: check Ctime against the object's ctime
	Ctime Time
}

// Append appends a.
func (a *SetattrArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.FH)
	b = a.Attr.Append(b)
	b = xdr.AppendBool(b, a.Guard)
	if a.Guard {
		b = a.Ctime.Append(b)
	}
	return b
}

// Decode decodes a.
func (a *SetattrArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	a.Attr.Decode(r)
	a.Guard = r.Bool()
	a.Ctime = Time{}
	if a.Guard {
		a.Ctime.Decode(r)
	}
	return r.Err()
}

// AccessArgs is ACCESS3args, RFC 1813 section 3.3.4.
type AccessArgs struct {
	FH     []byte
	Access uint32
}

// Append appends a.
func (a *AccessArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.FH)
	return xdr.AppendUint32(b, a.Access)
}

// Decode decodes a.
func (a *AccessArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	a.Access = r.Uint32()
	return r.Err()
}

// RangeArgs is arguments that are a file handle, an offset and a count:
// READ3args (RFC 1813 section 3.3.6) and COMMIT3args (section 3.3.21).
type RangeArgs struct {
	FH     []byte
	Offset uint64
	Count  uint32
}

// Argument types named after their RFC structs.
type (
	ReadArgs   = RangeArgs // READ3args, RFC 1813 section 3.3.6
	CommitArgs = RangeArgs // COMMIT3args, RFC 1813 section 3.3.21
)

// Append appends a.
func (a *RangeArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.FH)
	b = xdr.AppendUint64(b, a.Offset)
	return xdr.AppendUint32(b, a.Count)
}

// Decode decodes a.
func (a *RangeArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	a.Offset = r.Uint64()
	a.Count = r.Uint32()
	return r.Err()
}

// WriteArgs is WRITE3args, RFC 1813 section 3.3.7. Data is a sub-slice of
// the decoded buffer.
type WriteArgs struct {
	FH     []byte
	Offset uint64
	Count  uint32
	Stable StableHow
	Data   []byte
}

// AppendHead appends a up to and including the data's length word; the
// data follows as an RPC payload.
func (a *WriteArgs) AppendHead(b []byte) []byte {
	b = AppendFH(b, a.FH)
	b = xdr.AppendUint64(b, a.Offset)
	b = xdr.AppendUint32(b, a.Count)
	b = xdr.AppendUint32(b, uint32(a.Stable))
	return xdr.AppendUint32(b, uint32(len(a.Data)))
}

// Append appends a with its data.
func (a *WriteArgs) Append(b []byte) []byte {
	b = a.AppendHead(b)
	return xdr.AppendFixedOpaque(b, a.Data)
}

// Decode decodes a: the data is at most MaxData bytes and its length must
// equal Count (knfsd: GARBAGE_ARGS otherwise).
func (a *WriteArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	a.Offset = r.Uint64()
	a.Count = r.Uint32()
	a.Stable = StableHow(r.Uint32())
	if r.Err() == nil && a.Stable > FileSync {
		r.SetErr(&DiscriminantError{"stable_how", uint32(a.Stable)})
	}
	a.Data = r.Opaque(MaxData)
	if r.Err() == nil && uint32(len(a.Data)) != a.Count {
		r.SetErr(ErrCountMismatch)
	}
	return r.Err()
}

// CreateHow is createhow3, RFC 1813 section 3.3.8.
type CreateHow struct {
	Mode CreateMode
	Attr Sattr                // UNCHECKED and GUARDED
	Verf [CreateVerfSize]byte // EXCLUSIVE
}

// CreateArgs is CREATE3args, RFC 1813 section 3.3.8.
type CreateArgs struct {
	Where DirOpArgs
	How   CreateHow
}

// Append appends a.
func (a *CreateArgs) Append(b []byte) []byte {
	b = a.Where.Append(b)
	b = xdr.AppendUint32(b, uint32(a.How.Mode))
	if a.How.Mode == Exclusive {
		return append(b, a.How.Verf[:]...)
	}
	return a.How.Attr.Append(b)
}

// Decode decodes a.
func (a *CreateArgs) Decode(r *xdr.Reader) error {
	a.Where.Decode(r)
	a.How = CreateHow{Mode: CreateMode(r.Uint32())}
	switch a.How.Mode {
	case Unchecked, Guarded:
		a.How.Attr.Decode(r)
	case Exclusive:
		copy(a.How.Verf[:], r.FixedOpaque(CreateVerfSize))
	default:
		r.SetErr(&DiscriminantError{"createmode3", uint32(a.How.Mode)})
	}
	return r.Err()
}

// MkdirArgs is MKDIR3args, RFC 1813 section 3.3.9.
type MkdirArgs struct {
	Where DirOpArgs
	Attr  Sattr
}

// Append appends a.
func (a *MkdirArgs) Append(b []byte) []byte {
	b = a.Where.Append(b)
	return a.Attr.Append(b)
}

// Decode decodes a.
func (a *MkdirArgs) Decode(r *xdr.Reader) error {
	a.Where.Decode(r)
	return a.Attr.Decode(r)
}

// SymlinkArgs is SYMLINK3args, RFC 1813 section 3.3.10 (with symlinkdata3
// inlined).
type SymlinkArgs struct {
	Where  DirOpArgs
	Attr   Sattr
	Target string
}

// Append appends a.
func (a *SymlinkArgs) Append(b []byte) []byte {
	b = a.Where.Append(b)
	b = a.Attr.Append(b)
	return xdr.AppendString(b, a.Target)
}

// Decode decodes a.
func (a *SymlinkArgs) Decode(r *xdr.Reader) error {
	a.Where.Decode(r)
	a.Attr.Decode(r)
	a.Target = r.String(MaxPath)
	return r.Err()
}

// MknodArgs is MKNOD3args, RFC 1813 section 3.3.11 (with mknoddata3
// flattened). Types REG, DIR and LNK decode (the server answers
// NFS3ERR_BADTYPE, as knfsd); other values are GARBAGE_ARGS.
type MknodArgs struct {
	Where DirOpArgs
	Type  FileType
	Attr  Sattr    // CHR, BLK, SOCK, FIFO
	Spec  Specdata // CHR, BLK
}

// Append appends a.
func (a *MknodArgs) Append(b []byte) []byte {
	b = a.Where.Append(b)
	b = xdr.AppendUint32(b, uint32(a.Type))
	switch a.Type {
	case TypeChr, TypeBlk:
		b = a.Attr.Append(b)
		b = xdr.AppendUint32(b, a.Spec.Major)
		b = xdr.AppendUint32(b, a.Spec.Minor)
	case TypeSock, TypeFIFO:
		b = a.Attr.Append(b)
	}
	return b
}

// Decode decodes a.
func (a *MknodArgs) Decode(r *xdr.Reader) error {
	a.Where.Decode(r)
	a.Type = FileType(r.Uint32())
	a.Attr = Sattr{}
	a.Spec = Specdata{}
	switch a.Type {
	case TypeChr, TypeBlk:
		a.Attr.Decode(r)
		a.Spec.Major = r.Uint32()
		a.Spec.Minor = r.Uint32()
	case TypeSock, TypeFIFO:
		a.Attr.Decode(r)
	case TypeReg, TypeDir, TypeLnk:
	default:
		if r.Err() == nil {
			r.SetErr(&DiscriminantError{"ftype3", uint32(a.Type)})
		}
	}
	return r.Err()
}

// RenameArgs is RENAME3args, RFC 1813 section 3.3.14.
type RenameArgs struct {
	From DirOpArgs
	To   DirOpArgs
}

// Append appends a.
func (a *RenameArgs) Append(b []byte) []byte {
	b = a.From.Append(b)
	return a.To.Append(b)
}

// Decode decodes a.
func (a *RenameArgs) Decode(r *xdr.Reader) error {
	a.From.Decode(r)
	return a.To.Decode(r)
}

// LinkArgs is LINK3args, RFC 1813 section 3.3.15.
type LinkArgs struct {
	FH   []byte
	Link DirOpArgs
}

// Append appends a.
func (a *LinkArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.FH)
	return a.Link.Append(b)
}

// Decode decodes a.
func (a *LinkArgs) Decode(r *xdr.Reader) error {
	a.FH = DecodeFH(r)
	return a.Link.Decode(r)
}

// ReaddirArgs is READDIR3args, RFC 1813 section 3.3.16.
type ReaddirArgs struct {
	Dir    []byte
	Cookie uint64
	Verf   [CookieVerfSize]byte
	Count  uint32
}

// Append appends a.
func (a *ReaddirArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.Dir)
	b = xdr.AppendUint64(b, a.Cookie)
	b = append(b, a.Verf[:]...)
	return xdr.AppendUint32(b, a.Count)
}

// Decode decodes a.
func (a *ReaddirArgs) Decode(r *xdr.Reader) error {
	a.Dir = DecodeFH(r)
	a.Cookie = r.Uint64()
	copy(a.Verf[:], r.FixedOpaque(CookieVerfSize))
	a.Count = r.Uint32()
	return r.Err()
}

// ReaddirplusArgs is READDIRPLUS3args, RFC 1813 section 3.3.17.
type ReaddirplusArgs struct {
	Dir      []byte
	Cookie   uint64
	Verf     [CookieVerfSize]byte
	DirCount uint32
	MaxCount uint32
}

// Append appends a.
func (a *ReaddirplusArgs) Append(b []byte) []byte {
	b = AppendFH(b, a.Dir)
	b = xdr.AppendUint64(b, a.Cookie)
	b = append(b, a.Verf[:]...)
	b = xdr.AppendUint32(b, a.DirCount)
	return xdr.AppendUint32(b, a.MaxCount)
}

// Decode decodes a.
func (a *ReaddirplusArgs) Decode(r *xdr.Reader) error {
	a.Dir = DecodeFH(r)
	a.Cookie = r.Uint64()
	copy(a.Verf[:], r.FixedOpaque(CookieVerfSize))
	a.DirCount = r.Uint32()
	a.MaxCount = r.Uint32()
	return r.Err()
}

package wire

import "github.com/gonfsrdma/gonfsrdma/xdr"

// Every result starts with its nfsstat3; the arms below follow RFC 1813.

func appendStatus(b []byte, s Status) []byte { return xdr.AppendUint32(b, uint32(s)) }

func decodeStatus(r *xdr.Reader) Status { return Status(r.Uint32()) }

// GetattrRes is GETATTR3res, RFC 1813 section 3.3.1.
type GetattrRes struct {
	Status Status
	Attr   Fattr // OK only
}

// Append appends res.
func (res *GetattrRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	if res.Status == OK {
		b = res.Attr.Append(b)
	}
	return b
}

// Decode decodes res.
func (res *GetattrRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	if res.Status == OK {
		res.Attr.Decode(r)
	}
	return r.Err()
}

// WccRes is a result that is a status and one wcc_data in both arms:
// SETATTR3res (RFC 1813 section 3.3.2), REMOVE3res (section 3.3.12) and
// RMDIR3res (section 3.3.13).
type WccRes struct {
	Status Status
	Wcc    WccData
}

// Result types named after their RFC structs.
type (
	SetattrRes = WccRes    // SETATTR3res, RFC 1813 section 3.3.2
	RemoveRes  = WccRes    // REMOVE3res, RFC 1813 section 3.3.12
	RmdirRes   = WccRes    // RMDIR3res, RFC 1813 section 3.3.13
	MkdirRes   = CreateRes // MKDIR3res, RFC 1813 section 3.3.9
	SymlinkRes = CreateRes // SYMLINK3res, RFC 1813 section 3.3.10
	MknodRes   = CreateRes // MKNOD3res, RFC 1813 section 3.3.11
)

// Append appends res.
func (res *WccRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	return res.Wcc.Append(b)
}

// Decode decodes res.
func (res *WccRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	return res.Wcc.Decode(r)
}

// LookupRes is LOOKUP3res, RFC 1813 section 3.3.3.
type LookupRes struct {
	Status  Status
	FH      []byte     // OK only
	ObjAttr PostOpAttr // OK only
	DirAttr PostOpAttr
}

// Append appends res.
func (res *LookupRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	if res.Status == OK {
		b = AppendFH(b, res.FH)
		b = res.ObjAttr.Append(b)
	}
	return res.DirAttr.Append(b)
}

// Decode decodes res.
func (res *LookupRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	if res.Status == OK {
		res.FH = DecodeFH(r)
		res.ObjAttr.Decode(r)
	}
	return res.DirAttr.Decode(r)
}

// AccessRes is ACCESS3res, RFC 1813 section 3.3.4.
type AccessRes struct {
	Status Status
	Attr   PostOpAttr
	Access uint32 // OK only
}

// Append appends res.
func (res *AccessRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		b = xdr.AppendUint32(b, res.Access)
	}
	return b
}

// Decode decodes res.
func (res *AccessRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	if res.Status == OK {
		res.Access = r.Uint32()
	}
	return r.Err()
}

// ReadlinkRes is READLINK3res, RFC 1813 section 3.3.5.
type ReadlinkRes struct {
	Status Status
	Attr   PostOpAttr
	Target string // OK only
}

// Append appends res.
func (res *ReadlinkRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		b = xdr.AppendString(b, res.Target)
	}
	return b
}

// Decode decodes res.
func (res *ReadlinkRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	if res.Status == OK {
		res.Target = r.String(MaxPath)
	}
	return r.Err()
}

// ReadRes is READ3res, RFC 1813 section 3.3.6. Data is a sub-slice of the
// decoded buffer.
type ReadRes struct {
	Status Status
	Attr   PostOpAttr
	Count  uint32 // OK only, from here on
	EOF    bool
	Data   []byte
}

// AppendHead appends res up to and including the data's length word; the
// data itself is the reply payload. The length is len(Data), or Count when
// Data is nil (the payload is held by the transport, as a spliced one).
// For an error it appends everything.
func (res *ReadRes) AppendHead(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		n := uint32(len(res.Data))
		if res.Data == nil {
			n = res.Count
		}
		b = xdr.AppendUint32(b, res.Count)
		b = xdr.AppendBool(b, res.EOF)
		b = xdr.AppendUint32(b, n)
	}
	return b
}

// Append appends res with its data.
func (res *ReadRes) Append(b []byte) []byte {
	b = res.AppendHead(b)
	if res.Status == OK {
		b = xdr.AppendFixedOpaque(b, res.Data)
	}
	return b
}

// Decode decodes res.
func (res *ReadRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	res.Count, res.EOF, res.Data = 0, false, nil
	if res.Status == OK {
		res.Count = r.Uint32()
		res.EOF = r.Bool()
		res.Data = r.Opaque(MaxData)
	}
	return r.Err()
}

// WriteRes is WRITE3res, RFC 1813 section 3.3.7.
type WriteRes struct {
	Status    Status
	Wcc       WccData
	Count     uint32 // OK only, from here on
	Committed StableHow
	Verf      [WriteVerfSize]byte
}

// Append appends res.
func (res *WriteRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Wcc.Append(b)
	if res.Status == OK {
		b = xdr.AppendUint32(b, res.Count)
		b = xdr.AppendUint32(b, uint32(res.Committed))
		b = append(b, res.Verf[:]...)
	}
	return b
}

// Decode decodes res.
func (res *WriteRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Wcc.Decode(r)
	if res.Status == OK {
		res.Count = r.Uint32()
		res.Committed = StableHow(r.Uint32())
		copy(res.Verf[:], r.FixedOpaque(WriteVerfSize))
	}
	return r.Err()
}

// CreateRes is CREATE3res, RFC 1813 section 3.3.8; MKDIR, SYMLINK and
// MKNOD results have the same shape.
type CreateRes struct {
	Status Status
	FH     PostOpFH   // OK only
	Attr   PostOpAttr // OK only
	DirWcc WccData
}

// Append appends res.
func (res *CreateRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	if res.Status == OK {
		b = res.FH.Append(b)
		b = res.Attr.Append(b)
	}
	return res.DirWcc.Append(b)
}

// Decode decodes res.
func (res *CreateRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	if res.Status == OK {
		res.FH.Decode(r)
		res.Attr.Decode(r)
	}
	return res.DirWcc.Decode(r)
}

// RenameRes is RENAME3res, RFC 1813 section 3.3.14.
type RenameRes struct {
	Status  Status
	FromWcc WccData
	ToWcc   WccData
}

// Append appends res.
func (res *RenameRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.FromWcc.Append(b)
	return res.ToWcc.Append(b)
}

// Decode decodes res.
func (res *RenameRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.FromWcc.Decode(r)
	return res.ToWcc.Decode(r)
}

// LinkRes is LINK3res, RFC 1813 section 3.3.15.
type LinkRes struct {
	Status Status
	Attr   PostOpAttr
	DirWcc WccData
}

// Append appends res.
func (res *LinkRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	return res.DirWcc.Append(b)
}

// Decode decodes res.
func (res *LinkRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	return res.DirWcc.Decode(r)
}

// Entry is entry3, RFC 1813 section 3.3.16.
type Entry struct {
	FileID uint64
	Name   string
	Cookie uint64
}

// EntrySize is the encoded size of an entry3 named name, with the
// value_follows word before it.
func EntrySize(name string) int { return 4 + 8 + 4 + xdr.PaddedLen(len(name)) + 8 }

// AppendEntry appends value_follows TRUE and an entry3.
func AppendEntry(b []byte, fileID uint64, name string, cookie uint64) []byte {
	b = xdr.AppendUint32(b, 1)
	b = xdr.AppendUint64(b, fileID)
	b = xdr.AppendString(b, name)
	return xdr.AppendUint64(b, cookie)
}

// AppendDirListEnd appends the end of a dirlist3 or dirlistplus3: value_follows
// FALSE and eof.
func AppendDirListEnd(b []byte, eof bool) []byte {
	b = xdr.AppendUint32(b, 0)
	return xdr.AppendBool(b, eof)
}

// ReaddirRes is READDIR3res, RFC 1813 section 3.3.16.
type ReaddirRes struct {
	Status  Status
	DirAttr PostOpAttr
	Verf    [CookieVerfSize]byte // OK only, from here on
	Entries []Entry
	EOF     bool
}

// Append appends res.
func (res *ReaddirRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.DirAttr.Append(b)
	if res.Status != OK {
		return b
	}
	b = append(b, res.Verf[:]...)
	for i := range res.Entries {
		e := &res.Entries[i]
		b = AppendEntry(b, e.FileID, e.Name, e.Cookie)
	}
	return AppendDirListEnd(b, res.EOF)
}

// Decode decodes res.
func (res *ReaddirRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.DirAttr.Decode(r)
	res.Entries, res.EOF = nil, false
	if res.Status != OK {
		return r.Err()
	}
	copy(res.Verf[:], r.FixedOpaque(CookieVerfSize))
	for r.Bool() {
		var e Entry
		e.FileID = r.Uint64()
		e.Name = decodeName(r)
		e.Cookie = r.Uint64()
		if r.Err() != nil {
			break
		}
		res.Entries = append(res.Entries, e)
	}
	res.EOF = r.Bool()
	return r.Err()
}

// EntryPlus is entryplus3, RFC 1813 section 3.3.17.
type EntryPlus struct {
	FileID uint64
	Name   string
	Cookie uint64
	Attr   PostOpAttr
	FH     PostOpFH
}

// EntryPlusDirSize is the part of an entryplus3 that counts against
// READDIRPLUS dircount: fileid, name and cookie.
func EntryPlusDirSize(name string) int { return 8 + 4 + xdr.PaddedLen(len(name)) + 8 }

// Append appends value_follows TRUE and e.
func (e *EntryPlus) Append(b []byte) []byte {
	b = AppendEntry(b, e.FileID, e.Name, e.Cookie)
	b = e.Attr.Append(b)
	return e.FH.Append(b)
}

// ReaddirplusRes is READDIRPLUS3res, RFC 1813 section 3.3.17.
type ReaddirplusRes struct {
	Status  Status
	DirAttr PostOpAttr
	Verf    [CookieVerfSize]byte // OK only, from here on
	Entries []EntryPlus
	EOF     bool
}

// Append appends res.
func (res *ReaddirplusRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.DirAttr.Append(b)
	if res.Status != OK {
		return b
	}
	b = append(b, res.Verf[:]...)
	for i := range res.Entries {
		b = res.Entries[i].Append(b)
	}
	return AppendDirListEnd(b, res.EOF)
}

// Decode decodes res.
func (res *ReaddirplusRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.DirAttr.Decode(r)
	res.Entries, res.EOF = nil, false
	if res.Status != OK {
		return r.Err()
	}
	copy(res.Verf[:], r.FixedOpaque(CookieVerfSize))
	for r.Bool() {
		var e EntryPlus
		e.FileID = r.Uint64()
		e.Name = decodeName(r)
		e.Cookie = r.Uint64()
		e.Attr.Decode(r)
		e.FH.Decode(r)
		if r.Err() != nil {
			break
		}
		res.Entries = append(res.Entries, e)
	}
	res.EOF = r.Bool()
	return r.Err()
}

// FsstatRes is FSSTAT3res, RFC 1813 section 3.3.18.
type FsstatRes struct {
	Status                 Status
	Attr                   PostOpAttr
	TBytes, FBytes, ABytes uint64 // OK only, from here on
	TFiles, FFiles, AFiles uint64
	Invarsec               uint32
}

// Append appends res.
func (res *FsstatRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		for _, v := range [...]uint64{res.TBytes, res.FBytes, res.ABytes, res.TFiles, res.FFiles, res.AFiles} {
			b = xdr.AppendUint64(b, v)
		}
		b = xdr.AppendUint32(b, res.Invarsec)
	}
	return b
}

// Decode decodes res.
func (res *FsstatRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	if res.Status == OK {
		for _, p := range [...]*uint64{&res.TBytes, &res.FBytes, &res.ABytes, &res.TFiles, &res.FFiles, &res.AFiles} {
			*p = r.Uint64()
		}
		res.Invarsec = r.Uint32()
	}
	return r.Err()
}

// FsinfoRes is FSINFO3res, RFC 1813 section 3.3.19.
type FsinfoRes struct {
	Status                Status
	Attr                  PostOpAttr
	RTMax, RTPref, RTMult uint32 // OK only, from here on
	WTMax, WTPref, WTMult uint32
	DTPref                uint32
	MaxFileSize           uint64
	TimeDelta             Time
	Properties            uint32
}

// Append appends res.
func (res *FsinfoRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		for _, v := range [...]uint32{res.RTMax, res.RTPref, res.RTMult, res.WTMax, res.WTPref, res.WTMult, res.DTPref} {
			b = xdr.AppendUint32(b, v)
		}
		b = xdr.AppendUint64(b, res.MaxFileSize)
		b = res.TimeDelta.Append(b)
		b = xdr.AppendUint32(b, res.Properties)
	}
	return b
}

// Decode decodes res.
func (res *FsinfoRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	if res.Status == OK {
		for _, p := range [...]*uint32{&res.RTMax, &res.RTPref, &res.RTMult, &res.WTMax, &res.WTPref, &res.WTMult, &res.DTPref} {
			*p = r.Uint32()
		}
		res.MaxFileSize = r.Uint64()
		res.TimeDelta.Decode(r)
		res.Properties = r.Uint32()
	}
	return r.Err()
}

// PathconfRes is PATHCONF3res, RFC 1813 section 3.3.20.
type PathconfRes struct {
	Status          Status
	Attr            PostOpAttr
	LinkMax         uint32 // OK only, from here on
	NameMax         uint32
	NoTrunc         bool
	ChownRestricted bool
	CaseInsensitive bool
	CasePreserving  bool
}

// Append appends res.
func (res *PathconfRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Attr.Append(b)
	if res.Status == OK {
		b = xdr.AppendUint32(b, res.LinkMax)
		b = xdr.AppendUint32(b, res.NameMax)
		b = xdr.AppendBool(b, res.NoTrunc)
		b = xdr.AppendBool(b, res.ChownRestricted)
		b = xdr.AppendBool(b, res.CaseInsensitive)
		b = xdr.AppendBool(b, res.CasePreserving)
	}
	return b
}

// Decode decodes res.
func (res *PathconfRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Attr.Decode(r)
	if res.Status == OK {
		res.LinkMax = r.Uint32()
		res.NameMax = r.Uint32()
		res.NoTrunc = r.Bool()
		res.ChownRestricted = r.Bool()
		res.CaseInsensitive = r.Bool()
		res.CasePreserving = r.Bool()
	}
	return r.Err()
}

// CommitRes is COMMIT3res, RFC 1813 section 3.3.21.
type CommitRes struct {
	Status Status
	Wcc    WccData
	Verf   [WriteVerfSize]byte // OK only
}

// Append appends res.
func (res *CommitRes) Append(b []byte) []byte {
	b = appendStatus(b, res.Status)
	b = res.Wcc.Append(b)
	if res.Status == OK {
		b = append(b, res.Verf[:]...)
	}
	return b
}

// Decode decodes res.
func (res *CommitRes) Decode(r *xdr.Reader) error {
	res.Status = decodeStatus(r)
	res.Wcc.Decode(r)
	if res.Status == OK {
		copy(res.Verf[:], r.FixedOpaque(WriteVerfSize))
	}
	return r.Err()
}

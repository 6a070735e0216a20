package wire

import (
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Decoding errors beyond the xdr package's own.
var (
	// ErrEmptyFH: an nfs_fh3 of length zero (knfsd: GARBAGE_ARGS).
	ErrEmptyFH = errors.New("nfs: empty file handle")
	// ErrCountMismatch: WRITE3args count differs from the data length.
	ErrCountMismatch = errors.New("nfs: WRITE count differs from data length")
)

// DiscriminantError reports a union discriminant with no arm.
type DiscriminantError struct {
	Type  string
	Value uint32
}

func (e *DiscriminantError) Error() string {
	return fmt.Sprintf("nfs: invalid %s discriminant %d", e.Type, e.Value)
}

// DecodeFH decodes an nfs_fh3 (RFC 1813 section 2.5): at most FHSize bytes
// and not empty. The result is a sub-slice of the input.
func DecodeFH(r *xdr.Reader) []byte {
	fh := r.Opaque(FHSize)
	if r.Err() == nil && len(fh) == 0 {
		r.SetErr(ErrEmptyFH)
	}
	return fh
}

// AppendFH appends an nfs_fh3.
func AppendFH(b, fh []byte) []byte { return xdr.AppendOpaque(b, fh) }

func decodeName(r *xdr.Reader) string { return r.String(NameDecodeMax) }

// Time is nfstime3, RFC 1813 section 2.6.
type Time struct {
	Sec  uint32
	Nsec uint32
}

// Append appends t.
func (t Time) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, t.Sec)
	return xdr.AppendUint32(b, t.Nsec)
}

// Decode decodes t.
func (t *Time) Decode(r *xdr.Reader) error {
	t.Sec = r.Uint32()
	t.Nsec = r.Uint32()
	return r.Err()
}

// Specdata is specdata3, RFC 1813 section 2.6.
type Specdata struct {
	Major, Minor uint32
}

// Fattr is fattr3, RFC 1813 section 2.6 (84 bytes on the wire).
type Fattr struct {
	Type   FileType
	Mode   uint32
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Rdev   Specdata
	FSID   uint64
	FileID uint64
	Atime  Time
	Mtime  Time
	Ctime  Time
}

// FattrSize is the encoded size of fattr3.
const FattrSize = 84

// Append appends a.
func (a *Fattr) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(a.Type))
	b = xdr.AppendUint32(b, a.Mode)
	b = xdr.AppendUint32(b, a.Nlink)
	b = xdr.AppendUint32(b, a.UID)
	b = xdr.AppendUint32(b, a.GID)
	b = xdr.AppendUint64(b, a.Size)
	b = xdr.AppendUint64(b, a.Used)
	b = xdr.AppendUint32(b, a.Rdev.Major)
	b = xdr.AppendUint32(b, a.Rdev.Minor)
	b = xdr.AppendUint64(b, a.FSID)
	b = xdr.AppendUint64(b, a.FileID)
	b = a.Atime.Append(b)
	b = a.Mtime.Append(b)
	return a.Ctime.Append(b)
}

// Decode decodes a.
func (a *Fattr) Decode(r *xdr.Reader) error {
	a.Type = FileType(r.Uint32())
	a.Mode = r.Uint32()
	a.Nlink = r.Uint32()
	a.UID = r.Uint32()
	a.GID = r.Uint32()
	a.Size = r.Uint64()
	a.Used = r.Uint64()
	a.Rdev.Major = r.Uint32()
	a.Rdev.Minor = r.Uint32()
	a.FSID = r.Uint64()
	a.FileID = r.Uint64()
	a.Atime.Decode(r)
	a.Mtime.Decode(r)
	return a.Ctime.Decode(r)
}

// PostOpAttr is post_op_attr, RFC 1813 section 2.6.
type PostOpAttr struct {
	Set  bool
	Attr Fattr
}

// Append appends p.
func (p *PostOpAttr) Append(b []byte) []byte {
	if !p.Set {
		return xdr.AppendUint32(b, 0)
	}
	b = xdr.AppendUint32(b, 1)
	return p.Attr.Append(b)
}

// Decode decodes p.
func (p *PostOpAttr) Decode(r *xdr.Reader) error {
	p.Set = r.Bool()
	if p.Set {
		return p.Attr.Decode(r)
	}
	p.Attr = Fattr{}
	return r.Err()
}

// WccAttr is wcc_attr, RFC 1813 section 2.6.
type WccAttr struct {
	Size  uint64
	Mtime Time
	Ctime Time
}

// PreOpAttr is pre_op_attr, RFC 1813 section 2.6.
type PreOpAttr struct {
	Set  bool
	Attr WccAttr
}

// Append appends p.
func (p *PreOpAttr) Append(b []byte) []byte {
	if !p.Set {
		return xdr.AppendUint32(b, 0)
	}
	b = xdr.AppendUint32(b, 1)
	b = xdr.AppendUint64(b, p.Attr.Size)
	b = p.Attr.Mtime.Append(b)
	return p.Attr.Ctime.Append(b)
}

// Decode decodes p.
func (p *PreOpAttr) Decode(r *xdr.Reader) error {
	p.Set = r.Bool()
	p.Attr = WccAttr{}
	if p.Set {
		p.Attr.Size = r.Uint64()
		p.Attr.Mtime.Decode(r)
		p.Attr.Ctime.Decode(r)
	}
	return r.Err()
}

// WccData is wcc_data, RFC 1813 section 2.6.
type WccData struct {
	Before PreOpAttr
	After  PostOpAttr
}

// Append appends w.
func (w *WccData) Append(b []byte) []byte {
	b = w.Before.Append(b)
	return w.After.Append(b)
}

// Decode decodes w.
func (w *WccData) Decode(r *xdr.Reader) error {
	w.Before.Decode(r)
	return w.After.Decode(r)
}

// PostOpFH is post_op_fh3, RFC 1813 section 2.6.
type PostOpFH struct {
	Set bool
	FH  []byte
}

// Append appends p.
func (p *PostOpFH) Append(b []byte) []byte {
	if !p.Set {
		return xdr.AppendUint32(b, 0)
	}
	b = xdr.AppendUint32(b, 1)
	return AppendFH(b, p.FH)
}

// Decode decodes p.
func (p *PostOpFH) Decode(r *xdr.Reader) error {
	p.Set = r.Bool()
	p.FH = nil
	if p.Set {
		p.FH = DecodeFH(r)
	}
	return r.Err()
}

// SetUint32 is the set_mode3 / set_uid3 / set_gid3 union, RFC 1813
// section 2.6.
type SetUint32 struct {
	Set bool
	V   uint32
}

// SetUint64 is set_size3, RFC 1813 section 2.6.
type SetUint64 struct {
	Set bool
	V   uint64
}

// SetTime is set_atime / set_mtime, RFC 1813 section 2.6: Time is used
// only with SetToClientTime.
type SetTime struct {
	How  TimeHow
	Time Time
}

// Sattr is sattr3, RFC 1813 section 2.6.
type Sattr struct {
	Mode  SetUint32
	UID   SetUint32
	GID   SetUint32
	Size  SetUint64
	Atime SetTime
	Mtime SetTime
}

func appendSet32(b []byte, s SetUint32) []byte {
	if !s.Set {
		return xdr.AppendUint32(b, 0)
	}
	b = xdr.AppendUint32(b, 1)
	return xdr.AppendUint32(b, s.V)
}

func appendSetTime(b []byte, s SetTime) []byte {
	b = xdr.AppendUint32(b, uint32(s.How))
	if s.How == SetToClientTime {
		b = s.Time.Append(b)
	}
	return b
}

// Append appends s.
func (s *Sattr) Append(b []byte) []byte {
	b = appendSet32(b, s.Mode)
	b = appendSet32(b, s.UID)
	b = appendSet32(b, s.GID)
	if s.Size.Set {
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint64(b, s.Size.V)
	} else {
		b = xdr.AppendUint32(b, 0)
	}
	b = appendSetTime(b, s.Atime)
	return appendSetTime(b, s.Mtime)
}

func decodeSet32(r *xdr.Reader, s *SetUint32) {
	s.Set = r.Bool()
	s.V = 0
	if s.Set {
		s.V = r.Uint32()
	}
}

func decodeSetTime(r *xdr.Reader, s *SetTime) {
	s.How = TimeHow(r.Uint32())
	s.Time = Time{}
	switch s.How {
	case DontChange, SetToServerTime:
	case SetToClientTime:
		s.Time.Decode(r)
	default:
		r.SetErr(&DiscriminantError{"time_how", uint32(s.How)})
	}
}

// Decode decodes s.
func (s *Sattr) Decode(r *xdr.Reader) error {
	decodeSet32(r, &s.Mode)
	decodeSet32(r, &s.UID)
	decodeSet32(r, &s.GID)
	s.Size.Set = r.Bool()
	s.Size.V = 0
	if s.Size.Set {
		s.Size.V = r.Uint64()
	}
	decodeSetTime(r, &s.Atime)
	decodeSetTime(r, &s.Mtime)
	return r.Err()
}

// DirOpArgs is diropargs3, RFC 1813 section 3.3.3. Name may be longer than
// MaxName after decoding; the server answers NFS3ERR_NAMETOOLONG.
type DirOpArgs struct {
	Dir  []byte
	Name string
}

// Append appends d.
func (d *DirOpArgs) Append(b []byte) []byte {
	b = AppendFH(b, d.Dir)
	return xdr.AppendString(b, d.Name)
}

// Decode decodes d.
func (d *DirOpArgs) Decode(r *xdr.Reader) error {
	d.Dir = DecodeFH(r)
	d.Name = decodeName(r)
	return r.Err()
}

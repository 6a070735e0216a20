// header.go: the RPC-over-RDMA version 1 transport header (RFC 8166
// section 4) and the RFC 8797 connection private data.
//
// Buffer ownership: encoders append to a caller-owned []byte and keep no
// reference to it. Header.Decode reads from an xdr.Reader over the
// caller's receive buffer but copies every field it keeps into storage
// owned by the Header (reused across decodes, so a Header held by a
// per-call slot decodes without allocating); the message that follows an
// RDMA_MSG header is reported as an offset, never copied.

package proto

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Version is the only RPC-over-RDMA protocol version spoken (RFC 8166).
const Version = 1

// Proc is rdma_proc, RFC 8166 section 4.2.4.
type Proc uint32

// rdma_proc values.
const (
	ProcMsg   Proc = 0 // RDMA_MSG: an RPC message follows the header
	ProcNoMsg Proc = 1 // RDMA_NOMSG: the RPC message travels in a chunk
	ProcMsgP  Proc = 2 // RDMA_MSGP: deprecated (RFC 8166 section 4.5)
	ProcDone  Proc = 3 // RDMA_DONE: deprecated
	ProcError Proc = 4 // RDMA_ERROR
)

func (p Proc) String() string {
	switch p {
	case ProcMsg:
		return "RDMA_MSG"
	case ProcNoMsg:
		return "RDMA_NOMSG"
	case ProcMsgP:
		return "RDMA_MSGP"
	case ProcDone:
		return "RDMA_DONE"
	case ProcError:
		return "RDMA_ERROR"
	}
	return fmt.Sprintf("rdma_proc(%d)", uint32(p))
}

// ErrCode is rpcrdma_errcode, RFC 8166 section 4.2.4.
type ErrCode uint32

// rpcrdma_errcode values.
const (
	ErrVers  ErrCode = 1 // ERR_VERS
	ErrChunk ErrCode = 2 // ERR_CHUNK
)

func (e ErrCode) String() string {
	switch e {
	case ErrVers:
		return "ERR_VERS"
	case ErrChunk:
		return "ERR_CHUNK"
	}
	return fmt.Sprintf("rpcrdma_errcode(%d)", uint32(e))
}

// Segment is xdr_rdma_segment (RFC 8166 section 4.2.1): Length bytes of
// the peer's memory at Offset under the steering tag Handle.
type Segment struct {
	Handle uint32
	Length uint32
	Offset uint64
}

// ReadSegment is xdr_read_chunk (RFC 8166 section 4.2.2.1): a segment of
// a Read chunk with the XDR position of the chunk in the RPC message.
type ReadSegment struct {
	Position uint32
	Segment
}

// Chunk is a Write or Reply chunk: xdr_write_chunk, a counted array of
// segments (RFC 8166 section 4.2.2.2).
type Chunk []Segment

// Len is the total length of the chunk's segments.
func (c Chunk) Len() int {
	n := 0
	for _, s := range c {
		n += int(s.Length)
	}
	return n
}

// Limits bound what a decoder accepts. The Linux client uses at most a
// handful of segments per chunk (one FRWR MR covers up to its device's
// page-list depth; 1 MiB with 4 KiB pages on a small-depth device needs 8
// or so) and at most one Write chunk for NFSv3.
type Limits struct {
	MaxReadSegments  int // segments in the whole Read list
	MaxWriteChunks   int // chunks in the Write list
	MaxChunkSegments int // segments in one Write or Reply chunk
}

// DefaultLimits cover the Linux client with room to spare.
var DefaultLimits = Limits{MaxReadSegments: 32, MaxWriteChunks: 4, MaxChunkSegments: 32}

// Header is a decoded rdma_msg (RFC 8166 section 4.2.4). For RDMA_MSG and
// RDMA_NOMSG the chunk lists are set; for RDMA_ERROR Err (and VersLow,
// VersHigh for ERR_VERS). Slices are owned by the Header and reused by the
// next Decode.
type Header struct {
	XID     uint32
	Vers    uint32
	Credits uint32
	Proc    Proc

	ReadList  []ReadSegment
	WriteList []Chunk
	// ReplyChunk is the Reply chunk when HasReply; a present chunk may
	// have zero segments.
	ReplyChunk Chunk
	HasReply   bool

	Err               ErrCode
	VersLow, VersHigh uint32

	segs   []Segment // backing store of WriteList and ReplyChunk
	bounds []int     // chunk boundaries in segs during decode
}

// Reset clears h, keeping its storage.
func (h *Header) Reset() {
	*h = Header{ReadList: h.ReadList[:0], WriteList: h.WriteList[:0], segs: h.segs[:0], bounds: h.bounds[:0]}
}

// Sizes of the XDR items, in bytes.
const (
	fixedHeaderSize = 16                  // xid, vers, credits, proc
	segmentSize     = 16                  // handle, length, offset
	readSegSize     = 4 + 4 + segmentSize // present, position, segment
	// ReadSegmentSize is the bytes one Read-list entry adds to a header
	// (the list's discriminator, position and segment).
	ReadSegmentSize = readSegSize
	// MinHeaderSize is an RDMA_MSG with empty lists (7 words).
	MinHeaderSize = fixedHeaderSize + 12
)

// HeaderError is a transport header that cannot be used. Code is what the
// peer must be told (ERR_VERS or ERR_CHUNK); XIDValid says whether the
// header was long enough to address a reply.
type HeaderError struct {
	XID      uint32
	XIDValid bool
	Code     ErrCode
	Err      error
}

func (e *HeaderError) Error() string {
	return "rpcrdma: bad transport header (" + e.Code.String() + "): " + e.Err.Error()
}

func (e *HeaderError) Unwrap() error { return e.Err }

// Decoding errors wrapped in *HeaderError.
var (
	ErrBadVersion   = errors.New("unsupported RPC-over-RDMA version")
	ErrMsgP         = errors.New("RDMA_MSGP is not supported")
	ErrUnknownProc  = errors.New("unknown rdma_proc")
	ErrTooManySegs  = errors.New("too many segments")
	ErrTooManyChunk = errors.New("too many chunks")
	ErrBadDiscrim   = errors.New("bad list discriminator")
)

// Decode decodes a transport header from r, which is left at the first
// byte after it (the RPC message of an RDMA_MSG). Version mismatches are
// reported as ERR_VERS, everything else (truncation, RDMA_MSGP, unknown
// procedures, lists over lim) as ERR_CHUNK. RDMA_DONE decodes without
// error: the caller drops it.
func (h *Header) Decode(r *xdr.Reader, lim Limits) error {
	h.Reset()
	h.XID = r.Uint32()
	h.Vers = r.Uint32()
	h.Credits = r.Uint32()
	h.Proc = Proc(r.Uint32())
	if r.Err() != nil {
		// Fewer than four words: knfsd drops these; so do we (XIDValid
		// tells whether an answer could be addressed).
		return &HeaderError{XID: h.XID, XIDValid: r.Offset() >= 4, Code: ErrChunk, Err: r.Err()}
	}
	if h.Vers != Version {
		return &HeaderError{XID: h.XID, XIDValid: true, Code: ErrVers, Err: ErrBadVersion}
	}
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
		h.decodeLists(r, lim)
	case ProcDone:
		// Nothing follows that matters.
	case ProcError:
		h.Err = ErrCode(r.Uint32())
		switch h.Err {
		case ErrVers:
			h.VersLow, h.VersHigh = r.Uint32(), r.Uint32()
		case ErrChunk:
		default:
			r.SetErr(fmt.Errorf("unknown rpcrdma_errcode %d", h.Err))
		}
	case ProcMsgP:
		r.SetErr(ErrMsgP)
	default:
		r.SetErr(fmt.Errorf("%w %d", ErrUnknownProc, uint32(h.Proc)))
	}
	if err := r.Err(); err != nil {
		return &HeaderError{XID: h.XID, XIDValid: true, Code: ErrChunk, Err: err}
	}
	return nil
}

// present decodes an optional-data / list discriminator.
func present(r *xdr.Reader) bool {
	v := r.Uint32()
	if v > 1 {
		r.SetErr(ErrBadDiscrim)
		return false
	}
	return v == 1 && r.Err() == nil
}

func (h *Header) decodeLists(r *xdr.Reader, lim Limits) {
	// Read list: { 1, position, segment } ... 0
	for present(r) {
		if len(h.ReadList) == lim.MaxReadSegments {
			r.SetErr(ErrTooManySegs)
			return
		}
		var s ReadSegment
		s.Position = r.Uint32()
		s.Segment = decodeSegment(r)
		if r.Err() != nil {
			return
		}
		h.ReadList = append(h.ReadList, s)
	}
	// Write list: { 1, nsegs, segments } ... 0
	h.bounds = append(h.bounds, 0)
	for present(r) {
		if len(h.bounds)-1 == lim.MaxWriteChunks {
			r.SetErr(ErrTooManyChunk)
			return
		}
		h.decodeChunk(r, lim)
		h.bounds = append(h.bounds, len(h.segs))
	}
	// Reply chunk: 0 | 1, nsegs, segments
	if h.HasReply = present(r); h.HasReply {
		h.decodeChunk(r, lim)
	}
	if r.Err() != nil {
		return
	}
	for i := 1; i < len(h.bounds); i++ {
		h.WriteList = append(h.WriteList, Chunk(h.segs[h.bounds[i-1]:h.bounds[i]:h.bounds[i]]))
	}
	if h.HasReply {
		start := h.bounds[len(h.bounds)-1]
		h.ReplyChunk = Chunk(h.segs[start:len(h.segs):len(h.segs)])
	}
}

func (h *Header) decodeChunk(r *xdr.Reader, lim Limits) {
	n := r.Uint32()
	if r.Err() != nil {
		return
	}
	if uint64(n) > uint64(lim.MaxChunkSegments) {
		r.SetErr(ErrTooManySegs)
		return
	}
	if uint64(n)*segmentSize > uint64(r.Len()) {
		r.SetErr(xdr.ErrShort)
		return
	}
	for i := 0; i < int(n); i++ {
		h.segs = append(h.segs, decodeSegment(r))
	}
}

func decodeSegment(r *xdr.Reader) Segment {
	return Segment{Handle: r.Uint32(), Length: r.Uint32(), Offset: r.Uint64()}
}

// AppendFixed appends the four fixed words of rdma_msg.
func AppendFixed(b []byte, xid, credits uint32, proc Proc) []byte {
	b = xdr.AppendUint32(b, xid)
	b = xdr.AppendUint32(b, Version)
	b = xdr.AppendUint32(b, credits)
	return xdr.AppendUint32(b, uint32(proc))
}

// AppendSegment appends xdr_rdma_segment.
func AppendSegment(b []byte, s Segment) []byte {
	b = xdr.AppendUint32(b, s.Handle)
	b = xdr.AppendUint32(b, s.Length)
	return xdr.AppendUint64(b, s.Offset)
}

// AppendReadList appends a Read list (empty for nil).
func AppendReadList(b []byte, rl []ReadSegment) []byte {
	for _, s := range rl {
		b = xdr.AppendUint32(b, 1)
		b = xdr.AppendUint32(b, s.Position)
		b = AppendSegment(b, s.Segment)
	}
	return xdr.AppendUint32(b, 0)
}

// AppendChunk appends a counted segment array (a Write or Reply chunk).
func AppendChunk(b []byte, c Chunk) []byte {
	b = xdr.AppendUint32(b, uint32(len(c)))
	for _, s := range c {
		b = AppendSegment(b, s)
	}
	return b
}

// AppendWriteList appends a Write list (empty for nil).
func AppendWriteList(b []byte, wl []Chunk) []byte {
	for _, c := range wl {
		b = xdr.AppendUint32(b, 1)
		b = AppendChunk(b, c)
	}
	return xdr.AppendUint32(b, 0)
}

// AppendReplyChunk appends the optional Reply chunk; nil (not merely
// empty) is absent.
func AppendReplyChunk(b []byte, c Chunk) []byte {
	if c == nil {
		return xdr.AppendUint32(b, 0)
	}
	b = xdr.AppendUint32(b, 1)
	return AppendChunk(b, c)
}

// Append appends h as an RDMA_MSG/RDMA_NOMSG header with its lists, or an
// RDMA_ERROR/RDMA_DONE header, according to h.Proc. Vers is written as
// Version unless h.Vers is set (tests of version handling).
func (h *Header) Append(b []byte) []byte {
	v := h.Vers
	if v == 0 {
		v = Version
	}
	b = xdr.AppendUint32(b, h.XID)
	b = xdr.AppendUint32(b, v)
	b = xdr.AppendUint32(b, h.Credits)
	b = xdr.AppendUint32(b, uint32(h.Proc))
	switch h.Proc {
	case ProcMsg, ProcNoMsg, ProcMsgP:
		b = AppendReadList(b, h.ReadList)
		b = AppendWriteList(b, h.WriteList)
		if h.HasReply || h.ReplyChunk != nil {
			b = xdr.AppendUint32(b, 1)
			b = AppendChunk(b, h.ReplyChunk)
		} else {
			b = xdr.AppendUint32(b, 0)
		}
	case ProcError:
		b = xdr.AppendUint32(b, uint32(h.Err))
		if h.Err == ErrVers {
			b = xdr.AppendUint32(b, h.VersLow)
			b = xdr.AppendUint32(b, h.VersHigh)
		}
	}
	return b
}

// AppendError appends an RDMA_ERROR header: ERR_VERS carries the
// supported range low = high = 1.
func AppendError(b []byte, xid, credits uint32, code ErrCode) []byte {
	b = AppendFixed(b, xid, credits, ProcError)
	b = xdr.AppendUint32(b, uint32(code))
	if code == ErrVers {
		b = xdr.AppendUint32(b, Version)
		b = xdr.AppendUint32(b, Version)
	}
	return b
}

// RFC 8797 connection private data.
const (
	PrivateDataMagic   = 0xf6ab0e18
	PrivateDataVersion = 1
	PrivateDataSize    = 8
	// DefaultInline is the inline size both sides assume without private
	// data (RFC 8166 section 3.3.3).
	DefaultInline = 1024
	// MaxInline is the largest size the private data encoding can carry.
	MaxInline            = 256 * 1024
	flagRemoteInvalidate = 0x01
)

// PrivateData is RFC 8797 rpcrdma_connect_private.
type PrivateData struct {
	// RemoteInvalidate: the sender accepts Send-With-Invalidate.
	RemoteInvalidate bool
	// SendSize and RecvSize are the sender's maximum inline send size and
	// its inline receive buffer size, in bytes (multiples of 1024,
	// 1024..262144).
	SendSize, RecvSize int
}

func encodeSize(n int) byte {
	if n < 1024 {
		n = 1024
	}
	if n > MaxInline {
		n = MaxInline
	}
	return byte(n/1024 - 1)
}

// Append appends the 8-byte encoding.
func (p PrivateData) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, PrivateDataMagic)
	var flags byte
	if p.RemoteInvalidate {
		flags |= flagRemoteInvalidate
	}
	return append(b, PrivateDataVersion, flags, encodeSize(p.SendSize), encodeSize(p.RecvSize))
}

// ParsePrivateData decodes RFC 8797 private data. Data that is too short,
// has the wrong magic or an unknown version is not RFC 8797 data: ok is
// false and the result holds the RFC 8166 defaults (1024-byte inline
// sizes, no remote invalidation). Trailing bytes (CM zero padding) are
// ignored.
func ParsePrivateData(b []byte) (p PrivateData, ok bool) {
	p = PrivateData{SendSize: DefaultInline, RecvSize: DefaultInline}
	if len(b) < PrivateDataSize || binary.BigEndian.Uint32(b) != PrivateDataMagic || b[4] != PrivateDataVersion {
		return p, false
	}
	p.RemoteInvalidate = b[5]&flagRemoteInvalidate != 0
	p.SendSize = (int(b[6]) + 1) * 1024
	p.RecvSize = (int(b[7]) + 1) * 1024
	return p, true
}

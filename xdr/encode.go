package xdr

import "encoding/binary"

// Pad returns the number of zero bytes that follow n bytes of opaque data to
// reach a four-byte boundary (RFC 4506 section 4.10).
func Pad(n int) int { return (4 - n&3) & 3 }

// PaddedLen returns n rounded up to a multiple of four.
func PaddedLen(n int) int { return n + Pad(n) }

var zeros [4]byte

// AppendUint32 appends an unsigned int (RFC 4506 section 4.2).
func AppendUint32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

// AppendInt32 appends a signed int (RFC 4506 section 4.1).
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendUint64 appends an unsigned hyper (RFC 4506 section 4.5).
func AppendUint64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// AppendBool appends a boolean (RFC 4506 section 4.4).
func AppendBool(b []byte, v bool) []byte {
	if v {
		return AppendUint32(b, 1)
	}
	return AppendUint32(b, 0)
}

// Padding returns the zero bytes that follow n bytes of opaque data, for
// gather writes. The slice is shared: callers must not write to it.
func Padding(n int) []byte { return zeros[:Pad(n)] }

// AppendPad appends the zero padding that follows n bytes of opaque data.
func AppendPad(b []byte, n int) []byte { return append(b, zeros[:Pad(n)]...) }

// AppendFixedOpaque appends fixed-length opaque data and its padding
// (RFC 4506 section 4.9).
func AppendFixedOpaque(b, data []byte) []byte {
	b = append(b, data...)
	return AppendPad(b, len(data))
}

// AppendOpaque appends variable-length opaque data: length, bytes, padding
// (RFC 4506 section 4.10).
func AppendOpaque(b, data []byte) []byte {
	b = AppendUint32(b, uint32(len(data)))
	return AppendFixedOpaque(b, data)
}

// AppendString appends a string (RFC 4506 section 4.11).
func AppendString(b []byte, s string) []byte {
	b = AppendUint32(b, uint32(len(s)))
	b = append(b, s...)
	return AppendPad(b, len(s))
}

// PutUint32 overwrites the word at b[off:off+4]; it is used to back-patch a
// length or count once the encoded size is known.
func PutUint32(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }

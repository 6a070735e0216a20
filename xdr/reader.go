package xdr

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort reports input that ends inside an item.
var ErrShort = errors.New("xdr: input too short")

// LengthError reports a variable-length item whose length word exceeds the
// maximum allowed by the protocol or by the caller.
type LengthError struct {
	Length uint32
	Max    int
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("xdr: length %d exceeds maximum %d", e.Length, e.Max)
}

// BoolError reports a boolean word that is neither 0 nor 1.
type BoolError struct{ Value uint32 }

func (e *BoolError) Error() string { return fmt.Sprintf("xdr: invalid boolean %d", e.Value) }

// Reader decodes XDR from a byte slice with a sticky error. It never copies
// opaque data: see the package documentation for ownership.
type Reader struct {
	buf []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) *Reader { return &Reader{buf: b} }

// Reset makes r read b from its start and clears the error.
func (r *Reader) Reset(b []byte) { *r = Reader{buf: b} }

// Err returns the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// SetErr records err if no error was recorded yet; decoders use it to report
// semantic errors (an unknown union discriminant) through the same channel.
func (r *Reader) SetErr(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Offset returns the number of bytes consumed.
func (r *Reader) Offset() int { return r.off }

// Len returns the number of bytes not yet consumed.
func (r *Reader) Len() int { return len(r.buf) - r.off }

// Rest returns the unconsumed bytes without consuming them.
func (r *Reader) Rest() []byte { return r.buf[r.off:] }

func (r *Reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.buf)-r.off {
		r.err = ErrShort
		return nil
	}
	b := r.buf[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

// Uint32 decodes an unsigned int.
func (r *Reader) Uint32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Int32 decodes a signed int.
func (r *Reader) Int32() int32 { return int32(r.Uint32()) }

// Uint64 decodes an unsigned hyper.
func (r *Reader) Uint64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Bool decodes a boolean; a word other than 0 or 1 is an error.
func (r *Reader) Bool() bool {
	v := r.Uint32()
	if v > 1 {
		r.SetErr(&BoolError{v})
		return false
	}
	return v == 1
}

// FixedOpaque decodes n bytes of fixed-length opaque data and its padding,
// returning a sub-slice of the input.
func (r *Reader) FixedOpaque(n int) []byte {
	b := r.take(PaddedLen(n))
	if b == nil {
		return nil
	}
	return b[:n:n]
}

// Opaque decodes variable-length opaque data of at most max bytes and returns
// a sub-slice of the input. The length is checked against max and against
// the remaining input before anything else happens.
func (r *Reader) Opaque(max int) []byte {
	n := r.Uint32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		r.err = &LengthError{Length: n, Max: max}
		return nil
	}
	return r.FixedOpaque(int(n))
}

// String decodes a string of at most max bytes. The result is a copy.
func (r *Reader) String(max int) string { return string(r.Opaque(max)) }

// Count decodes an array length or list size of at most max elements. Each
// element needs at least minSize bytes of input, so a count larger than the
// remaining input could hold is rejected without allocating.
func (r *Reader) Count(max, minSize int) int {
	n := r.Uint32()
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(max) {
		r.err = &LengthError{Length: n, Max: max}
		return 0
	}
	if minSize > 0 && uint64(n)*uint64(minSize) > uint64(r.Len()) {
		r.err = ErrShort
		return 0
	}
	return int(n)
}

// Skip consumes n bytes.
func (r *Reader) Skip(n int) { r.take(n) }

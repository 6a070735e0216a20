package oncrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Record marking, RFC 5531 section 11: a record is a sequence of fragments,
// each preceded by a word whose high bit marks the last fragment and whose
// low 31 bits give the fragment length.
const (
	lastFragment   = 1 << 31
	fragmentLenMax = 1<<31 - 1
	// growStep bounds how far a record buffer grows ahead of the bytes that
	// actually arrived, so a peer that claims a large fragment and sends
	// nothing cannot make us allocate the claimed size.
	growStep = 64 << 10
)

// RecordTooLargeError reports a record whose fragments claim more than the
// configured limit. The connection must be closed: the rest of the stream
// cannot be resynchronised.
type RecordTooLargeError struct {
	Claimed int64
	Limit   int
}

func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("oncrpc: record of at least %d bytes exceeds the limit of %d", e.Claimed, e.Limit)
}

// ReadRecord reads one record from r, reassembling its fragments into
// buf[:0] (grown as data arrives) and returns it. Records larger than limit
// fail with *RecordTooLargeError before their data is read.
func ReadRecord(r io.Reader, buf []byte, limit int) ([]byte, error) {
	var hdr [4]byte
	buf = buf[:0]
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
		word := binary.BigEndian.Uint32(hdr[:])
		n := int(word & fragmentLenMax)
		if total := int64(len(buf)) + int64(n); total > int64(limit) {
			return buf, &RecordTooLargeError{Claimed: total, Limit: limit}
		}
		for n > 0 {
			step := min(n, growStep)
			if cap(buf)-len(buf) < step {
				grown := make([]byte, len(buf), max(2*cap(buf), len(buf)+step))
				copy(grown, buf)
				buf = grown
			}
			// Read as much as fits in the capacity we have, up to n.
			chunk := min(n, cap(buf)-len(buf))
			m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
			buf = buf[:len(buf)+m]
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return buf, err
			}
			n -= m
		}
		if word&lastFragment != 0 {
			return buf, nil
		}
	}
}

// AppendRecordMark appends the marking word for a single-fragment record
// of n bytes.
func AppendRecordMark(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(n)|lastFragment)
}

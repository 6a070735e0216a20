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
	var st recordState
	buf = buf[:0]
	for !st.complete() {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
		if err := st.begin(binary.BigEndian.Uint32(hdr[:]), limit); err != nil {
			return buf, err
		}
		var err error
		if buf, err = readFragmentData(r, buf, &st); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// recordState is how far a reader got in a record: enough to go on with
// it, or to skip the rest of it after an interrupted read.
type recordState struct {
	started bool  // a fragment header was consumed
	left    int   // bytes of the current fragment not yet read
	last    bool  // the current fragment is the last
	total   int64 // bytes the fragments so far claim
}

func (st *recordState) complete() bool { return st.started && st.left == 0 && st.last }

// begin takes the marking word of the next fragment; it fails with
// *RecordTooLargeError when the fragments so far claim more than limit.
func (st *recordState) begin(word uint32, limit int) error {
	st.started = true
	st.left = int(word & fragmentLenMax)
	st.last = word&lastFragment != 0
	st.total += int64(st.left)
	if st.total > int64(limit) {
		return &RecordTooLargeError{Claimed: st.total, Limit: limit}
	}
	return nil
}

// readFragmentData appends the rest of the current fragment (st.left
// bytes) from r to buf. Beyond buf's capacity the buffer grows at most
// growStep ahead of the data that arrived (and, in the last fragment, to
// no more than the record needs), so a peer claiming a huge fragment
// cannot make us allocate it.
func readFragmentData(r io.Reader, buf []byte, st *recordState) ([]byte, error) {
	for st.left > 0 {
		step := min(st.left, growStep)
		if cap(buf)-len(buf) < step {
			newCap := max(2*cap(buf), len(buf)+step)
			if st.last {
				newCap = min(newCap, len(buf)+st.left)
			}
			grown := make([]byte, len(buf), newCap)
			copy(grown, buf)
			buf = grown
		}
		// Read as much as fits in the capacity we have, up to st.left.
		chunk := min(st.left, cap(buf)-len(buf))
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		st.left -= m
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// AppendRecordMark appends the marking word for a single-fragment record
// of n bytes.
func AppendRecordMark(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(n)|lastFragment)
}

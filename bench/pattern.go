package bench

import (
	"encoding/binary"
	"fmt"
)

// The pattern: the 8-byte little-endian word at file offset 8k is
// splitmix64(seed ^ k). Any byte of the file is a function of the seed and
// its offset only, so each block is checked independently of the others
// and of the order of the calls.

func patternWord(seed, k uint64) uint64 {
	z := (seed ^ k) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func patternByte(seed, off uint64) byte {
	return byte(patternWord(seed, off/8) >> (8 * (off % 8)))
}

// Fill writes the pattern of the file bytes [off, off+len(b)) into b.
func Fill(seed, off uint64, b []byte) {
	i := 0
	for ; i < len(b) && (off+uint64(i))%8 != 0; i++ {
		b[i] = patternByte(seed, off+uint64(i))
	}
	k := (off + uint64(i)) / 8
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], patternWord(seed, k))
		k++
	}
	for ; i < len(b); i++ {
		b[i] = patternByte(seed, off+uint64(i))
	}
}

// VerifyError is data read back that does not match what was written.
type VerifyError struct {
	Offset    uint64 // file offset of the first wrong byte
	Got, Want byte
	Len       int // length of the read that contained it
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("data mismatch at file offset %d (in a %d-byte read): got %#02x, want %#02x",
		e.Offset, e.Len, e.Got, e.Want)
}

// Verify checks that b holds the pattern of the file bytes [off,
// off+len(b)) and returns a *VerifyError for the first byte that does not.
func Verify(seed, off uint64, b []byte) error {
	i := 0
	for ; i < len(b) && (off+uint64(i))%8 != 0; i++ {
		if want := patternByte(seed, off+uint64(i)); b[i] != want {
			return &VerifyError{Offset: off + uint64(i), Got: b[i], Want: want, Len: len(b)}
		}
	}
	k := (off + uint64(i)) / 8
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != patternWord(seed, k) {
			break // locate the byte below
		}
		k++
	}
	for ; i < len(b); i++ {
		if want := patternByte(seed, off+uint64(i)); b[i] != want {
			return &VerifyError{Offset: off + uint64(i), Got: b[i], Want: want, Len: len(b)}
		}
	}
	return nil
}

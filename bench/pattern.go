package bench

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// The pattern: the file is a sequence of 8-byte little-endian words; word k
// (file offset 8k) is
//
//	T[k % 512] ^ splitmix64(seed ^ k/512)
//
// where T is a table of 512 words (4 KiB) derived from the seed once:
// T[i] = splitmix64(^seed ^ i). Any byte of the file is a function of the
// seed and its offset only, so each block is checked independently of the
// others and of the order of the calls. Data from another offset or seed
// mismatches in each word but with probability 2^-64 (another 4 KiB period
// changes the splitmix64 term, a shift within the period the table entry),
// and no word is zero (splitmix64 is a bijection and its two inputs differ).
// Filling and checking cost a table load and an XOR per word.

const patternWords = 512 // words in the table: one 4 KiB period

func splitmix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Pattern is the pattern of one seed, its table computed once; it is
// read-only and safe for concurrent use.
type Pattern struct {
	seed uint64
	t    [patternWords]uint64
}

// NewPattern computes the pattern of seed.
func NewPattern(seed uint64) *Pattern {
	p := &Pattern{seed: seed}
	for i := range p.t {
		p.t[i] = splitmix64(^seed ^ uint64(i))
	}
	return p
}

// lastPattern caches the pattern of the most recent seed for Fill and
// Verify.
var lastPattern atomic.Pointer[Pattern]

func patternOf(seed uint64) *Pattern {
	if p := lastPattern.Load(); p != nil && p.seed == seed {
		return p
	}
	p := NewPattern(seed)
	lastPattern.Store(p)
	return p
}

// word returns word k of the file.
func (p *Pattern) word(k uint64) uint64 {
	return p.t[k%patternWords] ^ splitmix64(p.seed^k/patternWords)
}

func (p *Pattern) byteAt(off uint64) byte {
	return byte(p.word(off/8) >> (8 * (off % 8)))
}

// Fill writes the pattern of the file bytes [off, off+len(b)) into b.
func Fill(seed, off uint64, b []byte) { patternOf(seed).Fill(off, b) }

// Verify checks that b holds the pattern of the file bytes [off,
// off+len(b)) and returns a *VerifyError for the first byte that does not.
func Verify(seed, off uint64, b []byte) error { return patternOf(seed).Verify(off, b) }

// Fill writes the pattern of the file bytes [off, off+len(b)) into b.
func (p *Pattern) Fill(off uint64, b []byte) {
	i := 0
	for ; i < len(b) && (off+uint64(i))%8 != 0; i++ {
		b[i] = p.byteAt(off + uint64(i))
	}
	k := (off + uint64(i)) / 8
	for len(b)-i >= 8 {
		// The words up to the end of this 4 KiB period share one
		// splitmix64 term.
		w := int(k % patternWords)
		n := min(patternWords-w, (len(b)-i)/8)
		h := splitmix64(p.seed ^ k/patternWords)
		t := p.t[w : w+n]
		d := b[i : i+8*n]
		for len(t) >= 8 && len(d) >= 64 {
			binary.LittleEndian.PutUint64(d[0:8], t[0]^h)
			binary.LittleEndian.PutUint64(d[8:16], t[1]^h)
			binary.LittleEndian.PutUint64(d[16:24], t[2]^h)
			binary.LittleEndian.PutUint64(d[24:32], t[3]^h)
			binary.LittleEndian.PutUint64(d[32:40], t[4]^h)
			binary.LittleEndian.PutUint64(d[40:48], t[5]^h)
			binary.LittleEndian.PutUint64(d[48:56], t[6]^h)
			binary.LittleEndian.PutUint64(d[56:64], t[7]^h)
			t, d = t[8:], d[64:]
		}
		for len(t) >= 1 && len(d) >= 8 {
			binary.LittleEndian.PutUint64(d[0:8], t[0]^h)
			t, d = t[1:], d[8:]
		}
		i += 8 * n
		k += uint64(n)
	}
	for ; i < len(b); i++ {
		b[i] = p.byteAt(off + uint64(i))
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
func (p *Pattern) Verify(off uint64, b []byte) error {
	i := 0
	for ; i < len(b) && (off+uint64(i))%8 != 0; i++ {
		if want := p.byteAt(off + uint64(i)); b[i] != want {
			return &VerifyError{Offset: off + uint64(i), Got: b[i], Want: want, Len: len(b)}
		}
	}
	k := (off + uint64(i)) / 8
words:
	for len(b)-i >= 8 {
		w := int(k % patternWords)
		n := min(patternWords-w, (len(b)-i)/8)
		h := splitmix64(p.seed ^ k/patternWords)
		t := p.t[w : w+n]
		d := b[i : i+8*n]
		for len(t) >= 8 && len(d) >= 64 {
			x := binary.LittleEndian.Uint64(d[0:8]) ^ t[0] ^ h
			y := binary.LittleEndian.Uint64(d[8:16]) ^ t[1] ^ h
			x |= binary.LittleEndian.Uint64(d[16:24]) ^ t[2] ^ h
			y |= binary.LittleEndian.Uint64(d[24:32]) ^ t[3] ^ h
			x |= binary.LittleEndian.Uint64(d[32:40]) ^ t[4] ^ h
			y |= binary.LittleEndian.Uint64(d[40:48]) ^ t[5] ^ h
			x |= binary.LittleEndian.Uint64(d[48:56]) ^ t[6] ^ h
			y |= binary.LittleEndian.Uint64(d[56:64]) ^ t[7] ^ h
			if x|y != 0 {
				break words // locate the byte below
			}
			t, d = t[8:], d[64:]
			i += 64
			k += 8
		}
		for len(t) >= 1 && len(d) >= 8 {
			if binary.LittleEndian.Uint64(d[0:8]) != t[0]^h {
				break words
			}
			t, d = t[1:], d[8:]
			i += 8
			k++
		}
	}
	for ; i < len(b); i++ {
		if want := p.byteAt(off + uint64(i)); b[i] != want {
			return &VerifyError{Offset: off + uint64(i), Got: b[i], Want: want, Len: len(b)}
		}
	}
	return nil
}

package bench

import (
	"bytes"
	"errors"
	"testing"
)

// TestPatternUnaligned fills and verifies at unaligned offsets and
// lengths, across 4 KiB boundaries, and checks that each piece agrees with
// one fill of the whole range.
func TestPatternUnaligned(t *testing.T) {
	const seed = 0xfeedface
	const base = 3<<20 - 5000
	whole := make([]byte, 20000)
	Fill(seed, base, whole)
	for _, r := range [][2]int{
		{0, 20000}, {1, 2}, {1, 9}, {3, 4099}, {7, 8201}, {4091, 4101}, {5000, 9096},
		{5001, 13193}, {8, 4104}, {4096, 8192}, {12345, 19999}, {19992, 20000}, {2, 2},
	} {
		off := uint64(base + r[0])
		b := make([]byte, r[1]-r[0])
		Fill(seed, off, b)
		if !bytes.Equal(b, whole[r[0]:r[1]]) {
			t.Fatalf("Fill at +%d..+%d disagrees with the whole fill", r[0], r[1])
		}
		if err := Verify(seed, off, b); err != nil {
			t.Fatalf("Verify of good data at +%d..+%d: %v", r[0], r[1], err)
		}
	}
}

// TestPatternDetects checks the faults a server could introduce: a block
// from another offset of the same file, a block of zeros, one flipped byte.
func TestPatternDetects(t *testing.T) {
	const seed = 42
	file := make([]byte, 1<<20)
	Fill(seed, 0, file)
	for _, c := range []struct{ off, from, n int }{
		{65536, 0, 4096},            // another aligned block
		{65536, 65536 + 4096, 4096}, // the next block
		{8192, 8192 + 512, 4096},    // shifted within a 4 KiB table period
		{4096, 4096 + 8, 4096},      // shifted by one word
		{1 << 19, 0, 1 << 18},       // a large misplaced range
		{100, 104, 3000},            // unaligned
		{12288, 12288 + 1, 4096},    // shifted by one byte
	} {
		got := file[c.from : c.from+c.n]
		var ve *VerifyError
		if err := Verify(seed, uint64(c.off), got); !errors.As(err, &ve) {
			t.Errorf("data of offset %d accepted at offset %d: %v", c.from, c.off, err)
		} else if ve.Offset != uint64(c.off) && c.from%8 == c.off%8 {
			// Misplaced words differ from the first one on.
			t.Errorf("data of offset %d at %d: first mismatch reported at %d", c.from, c.off, ve.Offset)
		}
	}
	for _, n := range []int{1, 7, 8, 4096, 1 << 20} {
		for _, off := range []uint64{0, 3, 4096, 1 << 30} {
			if err := Verify(seed, off, make([]byte, n)); err == nil {
				t.Errorf("%d zero bytes at offset %d accepted", n, off)
			}
		}
	}
	// One flipped byte at unaligned positions of an unaligned read.
	const off = 4096*7 + 3
	for _, pos := range []int{0, 1, 4, 5, 4092, 4093, 4096*3 + 1, 1<<17 - 1} {
		b := bytes.Clone(file[off : off+1<<17])
		b[pos] ^= 0x10
		var ve *VerifyError
		if err := Verify(seed, off, b); !errors.As(err, &ve) || ve.Offset != uint64(off+pos) ||
			ve.Want != file[off+pos] || ve.Got != file[off+pos]^0x10 || ve.Len != len(b) {
			t.Errorf("flip at +%d: got %v", pos, err)
		}
	}
	// Another seed's data.
	other := make([]byte, 8192)
	Fill(seed+1, 4096, other)
	if err := Verify(seed, 4096, other); err == nil {
		t.Error("data of another seed accepted")
	}
}

func benchmarkPattern(b *testing.B, off uint64, n int, verify bool) {
	buf := make([]byte, n)
	Fill(7, off, buf)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for range b.N {
		if verify {
			if err := Verify(7, off, buf); err != nil {
				b.Fatal(err)
			}
		} else {
			Fill(7, off, buf)
		}
	}
}

func BenchmarkFill1MiB(b *testing.B)            { benchmarkPattern(b, 1<<30, 1<<20, false) }
func BenchmarkVerify1MiB(b *testing.B)          { benchmarkPattern(b, 1<<30, 1<<20, true) }
func BenchmarkVerify4KiB(b *testing.B)          { benchmarkPattern(b, 1<<30, 4096, true) }
func BenchmarkVerify1MiBUnaligned(b *testing.B) { benchmarkPattern(b, 1<<30+3, 1<<20-5, true) }

package localfs

import "testing"

// The first vectors of the SipHash paper's appendix: key 00 01 .. 0f,
// messages 00 01 .. (n-1) for n = 0, 1, 2, 7, 8, 15.
func TestSipHash24Vectors(t *testing.T) {
	const k0, k1 = 0x0706050403020100, 0x0f0e0d0c0b0a0908
	want := map[int]uint64{
		0:  0x726fdb47dd0e0e31,
		1:  0x74f839c593dc67fd,
		2:  0x0d6c8009d9a94f5a,
		7:  0xab0200f58b01d137,
		8:  0x93f5f5799a932462,
		15: 0xa129ca6149be45e5,
	}
	for n, w := range want {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(i)
		}
		if got := sipHash24(k0, k1, string(msg)); got != w {
			t.Errorf("SipHash-2-4 of %d bytes = %#016x, want %#016x", n, got, w)
		}
	}
}

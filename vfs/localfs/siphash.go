package localfs

import "math/bits"

// sipHash24 is SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
// short-input PRF", 2012) of msg under the 128-bit key (k0, k1), the
// keyed hash that makes the OS backend's name cookies: a client that does
// not know the export's key cannot pick names whose cookies collide.
func sipHash24(k0, k1 uint64, msg string) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := uint64(msg[0]) | uint64(msg[1])<<8 | uint64(msg[2])<<16 | uint64(msg[3])<<24 |
			uint64(msg[4])<<32 | uint64(msg[5])<<40 | uint64(msg[6])<<48 | uint64(msg[7])<<56
		v3 ^= m
		round()
		round()
		v0 ^= m
		msg = msg[8:]
	}
	last := uint64(n) << 56
	for i := len(msg) - 1; i >= 0; i-- {
		last |= uint64(msg[i]) << (8 * uint(i))
	}
	v3 ^= last
	round()
	round()
	v0 ^= last
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}

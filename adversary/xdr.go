package adversary

import "encoding/binary"

// encoder appends XDR (RFC 4506) items to b. It never checks a limit:
// an attacker must be able to send what the protocol forbids (17 gids, a
// 300-byte machine name, a 65-byte handle), so limits are the caller's
// business.
type encoder struct{ b []byte }

// u32 appends an unsigned int, RFC 4506 section 4.2.
func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }

// u64 appends an unsigned hyper, RFC 4506 section 4.5.
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }

// bool appends a boolean, RFC 4506 section 4.4.
func (e *encoder) bool(v bool) {
	if v {
		e.u32(1)
	} else {
		e.u32(0)
	}
}

// opaque appends variable-length opaque data, RFC 4506 section 4.10:
// the length, the bytes, zero padding to a multiple of four.
func (e *encoder) opaque(p []byte) {
	e.u32(uint32(len(p)))
	e.fixed(p)
}

// fixed appends fixed-length opaque data with its padding, RFC 4506
// section 4.9.
func (e *encoder) fixed(p []byte) {
	e.b = append(e.b, p...)
	for i := len(p); i%4 != 0; i++ {
		e.b = append(e.b, 0)
	}
}

// str appends a string, RFC 4506 section 4.11.
func (e *encoder) str(s string) { e.opaque([]byte(s)) }

// decoder reads XDR items from b with a sticky error: after the first
// short read every item is zero and err stays set. Opaque results are
// sub-slices of b.
type decoder struct {
	b   []byte
	off int
	err error
}

// decodeError is the decoder's sticky error for input that ends early or
// declares a length beyond its bound.
type decodeError string

func (e decodeError) Error() string { return "adversary: malformed reply: " + string(e) }

func (d *decoder) fail(why string) {
	if d.err == nil {
		d.err = decodeError(why)
	}
}

func (d *decoder) u32() uint32 {
	if d.err != nil || len(d.b)-d.off < 4 {
		d.fail("short")
		return 0
	}
	v := binary.BigEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64() uint64 { return uint64(d.u32())<<32 | uint64(d.u32()) }

func (d *decoder) bool() bool {
	switch d.u32() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("boolean not 0 or 1")
	return false
}

// opaque reads variable-length opaque data of at most max bytes and
// returns a sub-slice of the input.
func (d *decoder) opaque(max int) []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		d.fail("opaque longer than its bound")
		return nil
	}
	return d.fixed(int(n))
}

// fixed reads n bytes and their padding.
func (d *decoder) fixed(n int) []byte {
	padded := n + (4-n%4)%4
	if d.err != nil || n < 0 || len(d.b)-d.off < padded {
		d.fail("short opaque")
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += padded
	return p
}

// skip discards n bytes.
func (d *decoder) skip(n int) {
	if d.err != nil || len(d.b)-d.off < n {
		d.fail("short")
		return
	}
	d.off += n
}

package rpcbind_test

import (
	"bytes"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// FuzzDecodeRPCBArgs: the rpcb decoder never panics, and what it accepts
// re-encodes to the bytes it consumed.
func FuzzDecodeRPCBArgs(f *testing.F) {
	f.Add(unhex(f, rpcbNFSHex))
	f.Add(unhex(f, "00000001 00000002 00000000 00000000 00000000"))
	f.Add(unhex(f, "00000001 00000002 ffffffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := xdr.NewReader(b)
		var m rpcbind.Mapping
		if m.Decode(r) != nil {
			return
		}
		if enc := m.Append(nil); !bytes.Equal(enc, canonicalPad(b[:r.Offset()])) {
			t.Fatalf("re-encoding %+v = %x, consumed %x", m, enc, b[:r.Offset()])
		}
	})
}

// canonicalPad zeroes the XDR padding bytes of an rpcb encoding, which the
// decoder does not check.
func canonicalPad(b []byte) []byte {
	out := append([]byte(nil), b...)
	off := 8
	for i := 0; i < 3 && off+4 <= len(out); i++ {
		n := int(uint32(out[off])<<24 | uint32(out[off+1])<<16 | uint32(out[off+2])<<8 | uint32(out[off+3]))
		off += 4
		for j := off + n; j < off+xdr.PaddedLen(n) && j < len(out); j++ {
			out[j] = 0
		}
		off += xdr.PaddedLen(n)
	}
	return out
}

// FuzzDecodePmapArgs: the pmap decoder never panics and round-trips.
func FuzzDecodePmapArgs(f *testing.F) {
	f.Add(unhex(f, pmapMountHex))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := rpcbind.DecodePmapArgs(b)
		if err != nil {
			if len(b) >= 16 {
				t.Fatalf("16 bytes refused: %v", err)
			}
			return
		}
		if !bytes.Equal(m.Append(nil), b[:16]) {
			t.Fatalf("round trip of %x", b[:16])
		}
	})
}

// FuzzProgram feeds arbitrary arguments to every procedure of every
// version, from loopback (so SET and UNSET reach the registry): each call
// gets an RPC reply and nothing panics.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(4), uint8(1), unhex(f, rpcbNFSHex))
	f.Add(uint8(2), uint8(1), unhex(f, pmapMountHex))
	f.Add(uint8(4), uint8(11), unhex(f, rpcbNFSHex))
	f.Add(uint8(3), uint8(3), unhex(f, "000186a3 00000003 00000000 00000000 00000000"))
	reg := rpcbind.NewRegistry()
	reg.Set(rpcbind.NewMapping(100003, 3, "tcp", 2049))
	prog := reg.Program()
	f.Fuzz(func(t *testing.T, vers, proc uint8, args []byte) {
		msg := dispatch(t, prog, loopback, 1, uint32(vers%6), uint32(proc%14), args)
		if _, _, err := oncrpc.DecodeReplyHeader(msg); err != nil {
			t.Fatalf("bad reply %x: %v", msg, err)
		}
	})
}

// FuzzParseUaddr: whatever parses formats back to something that parses
// to the same address and port.
func FuzzParseUaddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1.0.111", "::1.8.1", "::ffff:1.2.3.4.0.1", "1.2.3.4.256.1", "fe80::1%x.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := rpcbind.ParseUaddr(s)
		if err != nil {
			return
		}
		back, err := rpcbind.ParseUaddr(rpcbind.FormatUaddr(ap))
		if err != nil || back != ap {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, ap, rpcbind.FormatUaddr(ap), back, err)
		}
	})
}

package adversary

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// TestEncodeCall checks a call record word by word against RFC 5531
// section 9 and appendix A.
func TestEncodeCall(t *testing.T) {
	cred := Cred{Flavor: AuthSys, Stamp: 7, Machine: "abcde", UID: 1000, GID: 100, GIDs: []uint32{4, 5}}
	got := EncodeCall(0x11223344, &cred, 100003, 3, 1, []byte{9, 9, 9, 9})
	w := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.BigEndian.AppendUint32(b, x)
		}
		return b
	}
	var want []byte
	want = append(want, w(0x11223344, 0, 2, 100003, 3, 1)...)
	want = append(want, w(AuthSys, 36, 7, 5)...)
	want = append(want, 'a', 'b', 'c', 'd', 'e', 0, 0, 0)
	want = append(want, w(1000, 100, 2, 4, 5)...)
	want = append(want, w(AuthNone, 0)...)
	want = append(want, 9, 9, 9, 9)
	want = append(w(1<<31|uint32(len(want))), want...)
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeCall:\n got %x\nwant %x", got, want)
	}
}

// TestParseReply covers each reply shape of RFC 5531 section 9 and
// every truncated prefix of a valid reply.
func TestParseReply(t *testing.T) {
	w := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.BigEndian.AppendUint32(b, x)
		}
		return b
	}
	ok := append(w(5, 1, msgAccepted, AuthNone, 0, acceptOK), 0xaa, 0xbb, 0xcc, 0xdd)
	xid, res, err := ParseReply(ok)
	if err != nil || xid != 5 || !bytes.Equal(res, []byte{0xaa, 0xbb, 0xcc, 0xdd}) {
		t.Fatalf("success: %d %x %v", xid, res, err)
	}
	var re *RPCError
	if _, _, err := ParseReply(w(5, 1, msgAccepted, AuthNone, 0, GarbageArgs)); !errors.As(err, &re) || re.Denied || re.AcceptStat != GarbageArgs {
		t.Errorf("GARBAGE_ARGS: %v", err)
	}
	if _, _, err := ParseReply(w(5, 1, msgDenied, authError, AuthBadCred)); !errors.As(err, &re) || !re.Denied || re.AuthStat != AuthBadCred {
		t.Errorf("AUTH_BADCRED: %v", err)
	}
	if _, _, err := ParseReply(w(5, 0, 0)); err == nil {
		t.Error("a CALL parsed as a reply")
	}
	for n := range len(ok) - 4 {
		if _, _, err := ParseReply(ok[:n]); err == nil || errors.As(err, &re) {
			t.Errorf("prefix of %d bytes: %v; want a decoding error", n, err)
		}
	}
}

// TestConnFragments checks that Call reassembles a reply sent in
// several fragments and skips a reply to another xid.
func TestConnFragments(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &Conn{nc: a, Cred: Sys(0, 0), Timeout: 5 * time.Second}
	go func() {
		hdr := make([]byte, 4)
		if _, err := b.Read(hdr); err != nil {
			return
		}
		rest := make([]byte, binary.BigEndian.Uint32(hdr)&0x7fffffff)
		if _, err := b.Read(rest); err != nil {
			return
		}
		xid := binary.BigEndian.Uint32(rest)
		var msg []byte
		for _, v := range []uint32{xid, 1, msgAccepted, AuthNone, 0, acceptOK, 42} {
			msg = binary.BigEndian.AppendUint32(msg, v)
		}
		other := append([]byte(nil), msg...)
		binary.BigEndian.PutUint32(other, xid-1)
		b.Write(append(binary.BigEndian.AppendUint32(nil, 1<<31|uint32(len(other))), other...))
		b.Write(append(binary.BigEndian.AppendUint32(nil, 10), msg[:10]...))
		b.Write(append(binary.BigEndian.AppendUint32(nil, 1<<31|uint32(len(msg)-10)), msg[10:]...))
	}()
	res, err := c.Call(1, 1, 0, nil)
	if err != nil || !bytes.Equal(res, []byte{0, 0, 0, 42}) {
		t.Fatalf("Call: %x, %v", res, err)
	}
}

// FuzzParseReply: no input panics the reply decoder, and results are a
// sub-slice of the input.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4})
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, res, err := ParseReply(msg)
		if err == nil && len(res) > len(msg) {
			t.Fatalf("results of %d bytes from a %d-byte message", len(res), len(msg))
		}
	})
}

// FuzzDecodeResults: the NFS result decoders stop cleanly on any input.
func FuzzDecodeResults(f *testing.F) {
	f.Add(make([]byte, 84))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decoder{b: b}
		d.fattr()
		d = decoder{b: b}
		d.wcc()
		d = decoder{b: b}
		d.opaque(maxFH)
		d.postOpAttr()
		if d.off > len(b) {
			t.Fatalf("decoder ran past its input: %d > %d", d.off, len(b))
		}
		newObject(OK, &decoder{b: b}, nil)
	})
}

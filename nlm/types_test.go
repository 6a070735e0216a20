package nlm

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var sampleLock = LockArgs{
	Cookie: []byte{1, 2}, Block: true, Exclusive: false,
	Lock:  Lock{CallerName: "ab", FH: []byte{0xde, 0xad, 0xbe, 0xef}, OH: []byte("o"), SVID: 7, Offset: 1 << 32, Length: 0},
	State: 3,
}

// The encodings below are written out from the XDR of XNFS 14.1
// (nlm4_lockargs) and 10.14 (nlm_lockargs: 32-bit offset and length).
const (
	lockArgs4Hex = "00000002 01020000 00000001 00000000 00000002 61620000 00000004 deadbeef 00000001 6f000000 00000007 00000001 00000000 00000000 00000000 00000000 00000003"
	lockArgs1Hex = "00000002 01020000 00000001 00000000 00000002 61620000 00000004 deadbeef 00000001 6f000000 00000007 00000010 00000000 00000000 00000003"
	testRes4Hex  = "00000000 00000001 00000001 fffffffe 00000000 00000000 00000005 00000000 00000000"
)

func TestLockArgsBytes(t *testing.T) {
	if got := sampleLock.Append(nil, Vers4); !bytes.Equal(got, unhex(t, lockArgs4Hex)) {
		t.Fatalf("v4 encoding %x", got)
	}
	v1 := sampleLock
	v1.Lock.Offset = 16
	if got := v1.Append(nil, Vers1); !bytes.Equal(got, unhex(t, lockArgs1Hex)) {
		t.Fatalf("v1 encoding %x", got)
	}
	var a LockArgs
	if err := a.Decode(xdr.NewReader(unhex(t, lockArgs4Hex)), Vers4); err != nil {
		t.Fatal(err)
	}
	if a.Lock.Offset != 1<<32 || a.Lock.SVID != 7 || a.State != 3 || !a.Block || a.Exclusive || a.Lock.CallerName != "ab" || string(a.Lock.OH) != "o" {
		t.Fatalf("decoded %+v", a)
	}
}

func TestTestResBytes(t *testing.T) {
	r := TestRes{Stat: Denied, Holder: Holder{Exclusive: true, SVID: -2, Offset: 5, Length: 0}}
	if got := r.Append(nil, Vers4); !bytes.Equal(got, unhex(t, testRes4Hex)) {
		t.Fatalf("encoding %x", got)
	}
	var d TestRes
	if err := d.Decode(xdr.NewReader(unhex(t, testRes4Hex)), Vers4); err != nil || d.Holder.SVID != -2 || d.Holder.Offset != 5 || !d.Holder.Exclusive {
		t.Fatalf("decoded %+v %v", d, err)
	}
	ok := TestRes{Cookie: []byte("c"), Stat: Granted}
	if got := ok.Append(nil, Vers4); len(got) != 12 {
		t.Fatalf("GRANTED carries a holder: %x", got)
	}
}

// TestTruncated: every proper prefix of a valid argument fails to decode.
func TestTruncated(t *testing.T) {
	share := ShareArgs{Cookie: []byte{1}, Share: Share{CallerName: "h", FH: []byte{1, 2, 3}, OH: []byte{4}, Mode: ShareDenyWrite, Access: AccessRead}}
	cases := map[string]struct {
		b   []byte
		dec func(*xdr.Reader) error
	}{
		"lock":   {sampleLock.Append(nil, Vers4), func(r *xdr.Reader) error { var a LockArgs; return a.Decode(r, Vers4) }},
		"test":   {(&TestArgs{Lock: sampleLock.Lock}).Append(nil, Vers4), func(r *xdr.Reader) error { var a TestArgs; return a.Decode(r, Vers4) }},
		"cancel": {(&CancelArgs{Lock: sampleLock.Lock}).Append(nil, Vers1), func(r *xdr.Reader) error { var a CancelArgs; return a.Decode(r, Vers1) }},
		"unlock": {(&UnlockArgs{Lock: sampleLock.Lock}).Append(nil, Vers4), func(r *xdr.Reader) error { var a UnlockArgs; return a.Decode(r, Vers4) }},
		"share":  {share.Append(nil), func(r *xdr.Reader) error { var a ShareArgs; return a.Decode(r) }},
		"notify": {(&Notify{Name: "host", State: 3}).Append(nil), func(r *xdr.Reader) error { var a Notify; return a.Decode(r) }},
		"res":    {(&Res{Cookie: []byte{1}, Stat: Blocked}).Append(nil), func(r *xdr.Reader) error { var a Res; return a.Decode(r) }},
		"reboot": {(&Reboot{MonName: "x", State: 5}).Append(nil), func(r *xdr.Reader) error { var a Reboot; return a.Decode(r) }},
	}
	for name, c := range cases {
		if err := c.dec(xdr.NewReader(c.b)); err != nil {
			t.Fatalf("%s: whole encoding fails: %v", name, err)
		}
		for n := 0; n < len(c.b); n++ {
			if err := c.dec(xdr.NewReader(c.b[:n])); err == nil {
				t.Fatalf("%s: a %d-byte prefix of %d decodes", name, n, len(c.b))
			}
		}
	}
	bad := share
	bad.Share.Mode = 4
	var a ShareArgs
	if err := a.Decode(xdr.NewReader(bad.Append(nil))); err == nil {
		t.Fatal("share mode 4 decodes")
	}
}

func TestStatForVersion(t *testing.T) {
	for st, want := range map[Stat]Stat{Granted: Granted, DeniedGracePeriod: DeniedGracePeriod, Deadlock: Denied, StaleFH: DeniedNoLocks, Failed: DeniedNoLocks, ROFS: DeniedNoLocks, FBig: DeniedNoLocks} {
		if got := st.ForVersion(Vers3); got != want {
			t.Errorf("%v in v3 = %v, want %v", st, got, want)
		}
		if st.ForVersion(Vers4) != st {
			t.Errorf("%v changes in v4", st)
		}
	}
}

func TestLockRange(t *testing.T) {
	for _, c := range []struct {
		off, len   uint64
		start, end int64
		st         Stat
	}{
		{0, 0, 0, 1<<63 - 1, Granted},
		{10, 5, 10, 14, Granted},
		{1<<63 - 1, 1, 1<<63 - 1, 1<<63 - 1, Granted},
		{1<<63 - 10, 10, 1<<63 - 10, 1<<63 - 1, Granted},
		{1 << 62, 1 << 63, 0, 0, FBig},     // last byte past 2^63-1
		{1<<63 - 10, 11, 0, 0, FBig},       // one byte too far
		{1<<63 - 1, 1<<64 - 1, 0, 0, FBig}, // wraps
		{1 << 63, 1, 0, 0, FBig},
	} {
		s, e, st := lockRange(c.off, c.len)
		if st != c.st || (st == Granted && (s != c.start || e != c.end)) {
			t.Errorf("lockRange(%d, %d) = %d, %d, %v", c.off, c.len, s, e, st)
		}
	}
}

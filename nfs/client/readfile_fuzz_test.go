package client

import (
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// FuzzLocateReadData: LocateReadData never panics, says an offset inside
// its input and a length within MaxData, and agrees with ReadRes.Decode
// wherever that decodes a READ3resok whose data ends the input.
func FuzzLocateReadData(f *testing.F) {
	ok := wire.ReadRes{Status: wire.OK, Count: 5, EOF: true, Data: []byte("hello")}
	f.Add(ok.Append(nil))
	f.Add(ok.AppendHead(nil))
	withAttr := ok
	withAttr.Attr.Set = true
	f.Add(withAttr.Append(nil))
	f.Add((&wire.ReadRes{Status: wire.ErrIO}).Append(nil))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		off, n, located := LocateReadData(b)
		if located && (off < 0 || off > len(b) || n < 0 || n > wire.MaxData) {
			t.Fatalf("offset %d, length %d for %d bytes", off, n, len(b))
		}
		var res wire.ReadRes
		r := xdr.NewReader(b)
		if res.Decode(r) == nil && res.Status == wire.OK && r.Len() == 0 {
			if !located || n != len(res.Data) || off+xdr.PaddedLen(n) != len(b) {
				t.Fatalf("Decode: %d bytes of data ending the input; Locate: %v, %d at %d", len(res.Data), located, n, off)
			}
		}
	})
}

package mount_test

import (
	"context"

	"testing"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// FuzzDecodeDirpath: never panics; what decodes is within MNTPATHLEN and
// re-encodes to the bytes consumed, padding aside.
func FuzzDecodeDirpath(f *testing.F) {
	f.Add(mount.AppendDirpath(nil, "/export"))
	f.Add(unhex(f, "00000401"))
	f.Add(unhex(f, "ffffffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := mount.DecodeDirpath(b)
		if err != nil {
			return
		}
		if len(p) > mount.MNTPATHLEN {
			t.Fatalf("decoded %d bytes", len(p))
		}
		enc := mount.AppendDirpath(nil, p)
		if string(enc[:4+len(p)]) != string(b[:4+len(p)]) {
			t.Fatalf("round trip %x vs %x", enc, b)
		}
	})
}

// FuzzProgram: every procedure of every version, fed arbitrary arguments,
// gets a well-formed RPC reply.
func FuzzProgram(f *testing.F) {
	f.Add(uint8(3), uint8(1), mount.AppendDirpath(nil, "/export"))
	f.Add(uint8(3), uint8(3), mount.AppendDirpath(nil, "/anon"))
	f.Add(uint8(1), uint8(5), []byte{})
	srv := mount.NewServer(zap.NewNop(), fakeBackend{})
	prog := srv.Program()
	f.Fuzz(func(t *testing.T, vers, proc uint8, args []byte) {
		msg := dispatch(t, prog, loopback, 1, uint32(vers%5), uint32(proc%8), args)
		if _, _, err := oncrpc.DecodeReplyHeader(msg); err != nil {
			t.Fatalf("bad reply %x: %v", msg, err)
		}
	})
}

// FuzzClientDecoders: the reply decoders the client uses never panic on
// what a hostile server sends.
func FuzzClientDecoders(f *testing.F) {
	f.Add(mount.AppendMountRes(nil, mount.StatOK, exportFH, []uint32{1}))
	f.Add(mount.AppendExports(nil, fakeBackend{}.Exports(context.Background())))
	f.Add(mount.AppendMountList(nil, []mount.Entry{{"h", "/p"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if fh, _, err := mount.DecodeMountRes(xdr.NewReader(b)); err == nil && (len(fh) > mount.FHSIZE3) {
			t.Fatalf("handle of %d bytes", len(fh))
		}
		mount.DecodeExports(xdr.NewReader(b))
		mount.DecodeMountList(xdr.NewReader(b))
	})
}

package nfsclient_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// BenchmarkWriteToAtFile: a 16 MiB file copied out into a local file with
// WriteToAt (what `gonfsrdma cp` out does), over TCP and over RPC-over-RDMA
// on the software fabric, from an in-process server (which shares the
// CPUs: read the two transports against each other and against an earlier
// build, not as absolute rates). Over RDMA the fabric's RDMA Writes copy
// the data once into the client's registered region, from which it is
// pwritten into the file.
func BenchmarkWriteToAtFile(b *testing.B) {
	const size = 16 << 20
	for _, proto := range protos {
		b.Run(proto, func(b *testing.B) {
			s := startServer(b)
			f := s.dial(proto, "")
			if err := os.WriteFile(filepath.Join(s.dir, "src"), pattern(size, 7), 0o644); err != nil {
				b.Fatal(err)
			}
			dst, err := os.Create(filepath.Join(b.TempDir(), "dst"))
			if err != nil {
				b.Fatal(err)
			}
			defer dst.Close()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				r, err := f.OpenFile("src", nfsclient.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := r.WriteToAt(dst, 0); err != nil || n != size {
					b.Fatalf("WriteToAt: %d, %v", n, err)
				}
				r.Close()
			}
		})
	}
}

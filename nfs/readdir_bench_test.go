package nfs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/vfs"
	"github.com/gonfsrdma/gonfsrdma/vfs/localfs"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// BenchmarkReaddirplusLongNames lists a directory of 250 197-byte names
// (as the kernel rm -rf rows' directories) with READDIRPLUS of 1 MiB from
// cookie 0 to eof, on /dev/shm (tmpfs: name cookies, as in the guest) and
// the host's temporary directory (offset cookies on ext4/xfs/btrfs). One
// op is a whole listing (one call); ns/entry is the cost of one entry with
// its handle and attributes (`make bench` runs 2000 ops: keep it small).
func BenchmarkReaddirplusLongNames(b *testing.B) {
	for _, base := range []string{"/dev/shm", ""} {
		name := "tmpdir"
		if base != "" {
			name = "devshm"
		}
		b.Run(name, func(b *testing.B) {
			if base != "" {
				if _, err := os.Stat(base); err != nil {
					b.Fatalf("%s: %v", base, err)
				}
			}
			dir, err := os.MkdirTemp(base, "rdp")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			fs, err := localfs.New(dir, localfs.Options{HandleKey: testHandleKey})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { fs.Close() })
			const n = 250
			for i := range n {
				if _, _, err := fs.Create(vfs.Cred{}, fs.Root(), fmt.Sprintf("%06d-%0190d", i, 0), 0644, false, false, [8]byte{}); err != nil {
					b.Fatal(err)
				}
			}
			r := newRig(b, fs)
			list := func() int {
				var cookie uint64
				var verf [wire.CookieVerfSize]byte
				seen := 0
				for {
					r.setCall(wire.ProcReaddirplus, (&wire.ReaddirplusArgs{Dir: r.root, Cookie: cookie, Verf: verf, DirCount: 1 << 20, MaxCount: 1 << 20}).Append(nil))
					var res wire.ReaddirplusRes
					var xr xdr.Reader
					xr.Reset(r.do(b))
					if err := res.Decode(&xr); err != nil || res.Status != wire.OK {
						b.Fatalf("READDIRPLUS: %v %v", err, res.Status)
					}
					seen += len(res.Entries)
					if res.EOF {
						return seen
					}
					cookie, verf = res.Entries[len(res.Entries)-1].Cookie, res.Verf
				}
			}
			if got := list(); got != n+2 {
				b.Fatalf("listed %d entries, want %d", got, n+2)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				list()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+2)), "ns/entry")
		})
	}
}

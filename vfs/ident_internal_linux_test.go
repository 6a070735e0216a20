package vfs

import "testing"

// The price of running a call as another identity: one become/unbecome
// pair (setgroups, setfsgid, setfsuid in; setfsuid, setfsgid, setgroups
// and a check out), paid by every metadata call as a caller other than
// the server, and by WRITE to set-id files.
func BenchmarkBecomeUnbecome(b *testing.B) {
	c := Cred{UID: 1000, GID: 1000, GIDs: []uint32{5, 6}}
	b.ReportAllocs()
	for range b.N {
		sw, err := become(&c)
		if err != nil {
			b.Fatal(err)
		}
		if !sw.on {
			b.Fatal("no switch: the benchmark needs root")
		}
		unbecome(sw)
	}
}

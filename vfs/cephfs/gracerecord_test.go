package cephfs

import (
	"encoding/json"
	"testing"
	"time"
)

func TestGraceValue(t *testing.T) {
	until := time.Date(2026, 12, 1, 15, 0, 0, 123456789, time.UTC)
	if got, ok := parseGraceValue(graceValue(until)); !ok || !got.Equal(until) {
		t.Fatalf("round trip: %v %v, want %v", got, ok, until)
	}
	for _, bad := range []string{"", "0", "-5", "12a", " 1", "99999999999999999999"} {
		if _, ok := parseGraceValue([]byte(bad)); ok {
			t.Errorf("parseGraceValue(%q) accepted", bad)
		}
	}
}

// A Pacific `fs dump` (trimmed to the fields read, plus one more).
const pacificDump = `{"epoch":5,"default_fscid":1,"filesystems":[{"mdsmap":{"fs_name":"cephfs","metadata_pool":2,"data_pools":[3,7]},"id":1},{"mdsmap":{"fs_name":"other","data_pools":[]},"id":2}]}`

func TestDataPoolOf(t *testing.T) {
	for _, c := range []struct {
		name        string
		fscid, pool int64
		ok          bool
	}{{"", 1, 3, true}, {"cephfs", 1, 3, true}, {"other", 0, 0, false}, {"none", 0, 0, false}} {
		id, pool, err := dataPoolOf([]byte(pacificDump), c.name)
		if (err == nil) != c.ok || id != c.fscid || pool != c.pool {
			t.Errorf("dataPoolOf(%q) = %d, %d, %v; want %d, %d, ok %v", c.name, id, pool, err, c.fscid, c.pool, c.ok)
		}
	}
	if _, _, err := dataPoolOf([]byte(`{"default_fscid":9,"filesystems":[]}`), ""); err == nil {
		t.Error("a missing default file system was accepted")
	}
}

// FuzzGraceRecords: neither decoder panics on any input; a value that
// parses is written back to the same instant; a pool found is the default
// file system's first data pool.
func FuzzGraceRecords(f *testing.F) {
	f.Add([]byte("1764601200123456789"))
	f.Add([]byte(pacificDump))
	f.Add([]byte(`{"filesystems":[{"id":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := parseGraceValue(b); ok {
			if w, ok := parseGraceValue(graceValue(v)); !ok || !w.Equal(v) {
				t.Fatalf("%q: %v does not round-trip (%v %v)", b, v, w, ok)
			}
		}
		// A pool found is the first data pool of the default file system.
		id, pool, err := dataPoolOf(b, "")
		if err != nil {
			return
		}
		var d fsDump
		if json.Unmarshal(b, &d) != nil {
			t.Fatalf("%q: found pool %d in a dump that does not parse", b, pool)
		}
		for _, fs := range d.FileSystems {
			if fs.ID == d.DefaultFSCID && fs.ID == id && len(fs.MDSMap.DataPools) > 0 && fs.MDSMap.DataPools[0] == pool {
				return
			}
		}
		t.Fatalf("%q: pool %d of file system %d is not the default file system's first data pool", b, pool, id)
	})
}

package cephfs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The grace records' names and values (grace.go reads and writes them
// through RADOS; these parts need no cluster, so they are built and fuzzed
// without the ceph tag).

// GraceNamespace is the RADOS namespace of the grace records.
const GraceNamespace = "gonfsrdma"

// GraceObject is the name of file system fscid's grace record object.
func GraceObject(fscid int64) string { return "grace.fscid-" + strconv.FormatInt(fscid, 10) }

// graceValue is a record's value for until: Unix nanoseconds, decimal.
func graceValue(until time.Time) []byte {
	return []byte(strconv.FormatInt(until.UnixNano(), 10))
}

// parseGraceValue reads a record's value; ok false for anything else.
func parseGraceValue(b []byte) (time.Time, bool) {
	ns, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// fsDump is the part of the monitors' `fs dump` (JSON) that locates a
// file system's data pools.
type fsDump struct {
	DefaultFSCID int64 `json:"default_fscid"`
	FileSystems  []struct {
		ID     int64 `json:"id"`
		MDSMap struct {
			FSName    string  `json:"fs_name"`
			DataPools []int64 `json:"data_pools"`
		} `json:"mdsmap"`
	} `json:"filesystems"`
}

// dataPoolOf finds file system fsName (empty: the default one) in the
// monitors' `fs dump` output and returns its id and first data pool's id.
func dataPoolOf(dump []byte, fsName string) (fscid, pool int64, err error) {
	var d fsDump
	if err := json.Unmarshal(dump, &d); err != nil {
		return 0, 0, fmt.Errorf("cephfs: grace records: fs dump: %w", err)
	}
	for _, fs := range d.FileSystems {
		if fsName != "" && fs.MDSMap.FSName != fsName || fsName == "" && fs.ID != d.DefaultFSCID {
			continue
		}
		if len(fs.MDSMap.DataPools) == 0 {
			return 0, 0, fmt.Errorf("cephfs: grace records: file system %q has no data pool", fs.MDSMap.FSName)
		}
		return fs.ID, fs.MDSMap.DataPools[0], nil
	}
	if fsName == "" {
		return 0, 0, fmt.Errorf("cephfs: grace records: the default file system (id %d) is not in fs dump", d.DefaultFSCID)
	}
	return 0, 0, fmt.Errorf("cephfs: grace records: no file system %q in fs dump", fsName)
}

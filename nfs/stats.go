package nfs

import (
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// ExportStats counts one export's READ and WRITE data bytes by
// transport, for the metrics. A READ or WRITE adds to it with one atomic
// add; the metrics read it at scrape time.
type ExportStats struct {
	read, write [oncrpc.RDMA + 1]atomic.Uint64
}

// countRead adds a READ of n bytes over t (e may be nil).
func (e *ExportStats) countRead(t oncrpc.Transport, n uint32) {
	if e != nil && t <= oncrpc.RDMA {
		e.read[t].Add(uint64(n))
	}
}

// countWrite adds a WRITE of n bytes over t (e may be nil).
func (e *ExportStats) countWrite(t oncrpc.Transport, n uint32) {
	if e != nil && t <= oncrpc.RDMA {
		e.write[t].Add(uint64(n))
	}
}

// ReadBytes returns the bytes READ answered over transport t.
func (e *ExportStats) ReadBytes(t oncrpc.Transport) uint64 {
	if t > oncrpc.RDMA {
		return 0
	}
	return e.read[t].Load()
}

// WriteBytes returns the bytes WRITE wrote that came over transport t.
func (e *ExportStats) WriteBytes(t oncrpc.Transport) uint64 {
	if t > oncrpc.RDMA {
		return 0
	}
	return e.write[t].Load()
}

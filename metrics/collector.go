package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// Sources says where each family's numbers come from. Every field is
// optional: a nil function leaves its families out. The functions are
// called at scrape time, from the scraping goroutine, and must be safe
// for concurrent use with the data path (they read atomics or take the
// owner's lock briefly).
type Sources struct {
	Version string
	// Ready reports whether every listener is up.
	Ready func() bool

	// Calls returns the dispatcher's per-procedure, rejection and byte
	// counters.
	Calls func() oncrpc.DispatchCounts
	// Clients is the per-address traffic table; the TopClients (0: 10)
	// busiest addresses get series.
	Clients    *meter.Clients
	TopClients int
	// Exports returns the NFS READ and WRITE bytes per export and
	// transport.
	Exports func() []ExportBytes
	// FileCaches returns the open-file cache counters of the exports
	// whose backend has one.
	FileCaches func() []ExportCache
	// DRC returns the duplicate request cache's counters.
	DRC func() oncrpc.DRCCounts

	// Conns returns the connections open per transport name ("tcp",
	// "rdma").
	Conns func() map[string]int
	// TCPBufferBytes is the bytes of TCP call and reply buffers held.
	TCPBufferBytes func() int64
	// RDMA returns the RPC-over-RDMA transport's totals.
	RDMA func() RDMATotals
	// DRCEntries is the duplicate request cache's size.
	DRCEntries func() int
	// Locks returns the lock table's contents.
	Locks func() LockTotals
	// Grace returns whether the grace period is on and when it ends.
	Grace func() (active bool, end time.Time)
	// Reloads returns the exports reload results.
	Reloads func() ReloadTotals
}

// ExportBytes are one export's NFS data bytes over one transport.
type ExportBytes struct {
	Export, Transport string
	Read, Write       uint64
}

// ExportCache is one export's open-file cache counters.
type ExportCache struct {
	Export                  string
	Hits, Misses, Evictions uint64
	Open                    int64
}

// RDMATotals are the RPC-over-RDMA server's counters.
type RDMATotals struct {
	ReadChunks, WriteChunks, ReplyChunks uint64
	RDMAReadBytes, RDMAWriteBytes        uint64
	InlineRecvBytes, InlineSendBytes     uint64
	ReplyChunkReplies                    uint64
	QPErrors, Disconnects                uint64
	CreditsGranted, CreditsInUse         int64
	RegisteredBytes                      int64
	CopiedBytes, CompletionLoopCalls     int64
	Shortages                            int64
}

// LockTotals are the lock table's contents by kind.
type LockTotals struct {
	Held, Blocked, Shares int
}

// ReloadTotals count exports loads.
type ReloadTotals struct {
	OK, Failed  uint64
	LastSuccess time.Time // zero: never
}

// collector turns Sources into constant metrics at each scrape.
type collector struct {
	src   Sources
	descs map[string]*prometheus.Desc
	fams  []Family
}

func newCollector(src Sources) *collector {
	c := &collector{src: src, descs: make(map[string]*prometheus.Desc)}
	add := func(on bool, fs ...Family) {
		if !on {
			return
		}
		for _, f := range fs {
			c.fams = append(c.fams, f)
			c.descs[f.Name] = f.desc()
		}
	}
	add(true, famBuildInfo)
	add(src.Ready != nil, famReady)
	add(src.Calls != nil, famCalls, famCallDuration, famRejected, famRPCBytes)
	add(src.Exports != nil, famNFSBytes)
	add(src.FileCaches != nil, famFileCacheHits, famFileCacheMisses, famFileCacheEvictions, famOpenFiles)
	add(src.Clients != nil, famClientCalls, famClientBytes, famClientsKnown)
	add(src.DRC != nil, famDRCHits, famDRCMisses, famDRCEvictions, famDRCDrops)
	add(src.Conns != nil, famConns)
	add(src.TCPBufferBytes != nil, famTCPBuffers)
	add(src.RDMA != nil, famRDMAChunks, famRDMABytes, famRDMAReplyChunk, famRDMAQPErrors, famRDMADisconn,
		famRDMAGranted, famRDMAInUse, famRDMARegistered, famRDMAShortages, famRDMACopied, famRDMAQuick)
	add(src.DRCEntries != nil, famDRCEntries)
	add(src.Locks != nil, famLocksHeld, famLocksBlocked, famShares)
	add(src.Grace != nil, famGrace, famGraceEnd)
	add(src.Reloads != nil, famReloads, famReloadTime)
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// emit sends one sample of family f.
func (c *collector) emit(ch chan<- prometheus.Metric, f Family, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(c.descs[f.Name], f.valueType(), v, labels...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := &c.src
	c.emit(ch, famBuildInfo, 1, s.Version)
	if s.Ready != nil {
		c.emit(ch, famReady, boolValue(s.Ready()))
	}
	if s.Calls != nil {
		c.collectCalls(ch, s.Calls())
	}
	if s.Clients != nil {
		top := s.TopClients
		if top <= 0 {
			top = 10
		}
		sum := s.Clients.Top(top)
		c.emit(ch, famClientsKnown, float64(sum.Known))
		for _, cl := range sum.Top {
			addr := cl.Addr.String()
			c.emit(ch, famClientCalls, float64(cl.Calls), addr)
			c.emit(ch, famClientBytes, float64(cl.BytesIn), addr, "in")
			c.emit(ch, famClientBytes, float64(cl.BytesOut), addr, "out")
		}
	}
	if s.Exports != nil {
		for _, e := range s.Exports() {
			c.emit(ch, famNFSBytes, float64(e.Read), e.Export, e.Transport, "read")
			c.emit(ch, famNFSBytes, float64(e.Write), e.Export, e.Transport, "write")
		}
	}
	if s.FileCaches != nil {
		for _, e := range s.FileCaches() {
			c.emit(ch, famFileCacheHits, float64(e.Hits), e.Export)
			c.emit(ch, famFileCacheMisses, float64(e.Misses), e.Export)
			c.emit(ch, famFileCacheEvictions, float64(e.Evictions), e.Export)
			c.emit(ch, famOpenFiles, float64(e.Open), e.Export)
		}
	}
	if s.DRC != nil {
		d := s.DRC()
		c.emit(ch, famDRCHits, float64(d.Hits))
		c.emit(ch, famDRCMisses, float64(d.Misses))
		c.emit(ch, famDRCEvictions, float64(d.Evictions))
		c.emit(ch, famDRCDrops, float64(d.Drops))
	}
	if s.Conns != nil {
		for transport, n := range s.Conns() {
			c.emit(ch, famConns, float64(n), transport)
		}
	}
	if s.TCPBufferBytes != nil {
		c.emit(ch, famTCPBuffers, float64(s.TCPBufferBytes()))
	}
	if s.RDMA != nil {
		r := s.RDMA()
		c.emit(ch, famRDMAChunks, float64(r.ReadChunks), "read")
		c.emit(ch, famRDMAChunks, float64(r.WriteChunks), "write")
		c.emit(ch, famRDMAChunks, float64(r.ReplyChunks), "reply")
		c.emit(ch, famRDMABytes, float64(r.RDMAReadBytes), "rdma_read")
		c.emit(ch, famRDMABytes, float64(r.RDMAWriteBytes), "rdma_write")
		c.emit(ch, famRDMABytes, float64(r.InlineRecvBytes), "inline_recv")
		c.emit(ch, famRDMABytes, float64(r.InlineSendBytes), "inline_send")
		c.emit(ch, famRDMAReplyChunk, float64(r.ReplyChunkReplies))
		c.emit(ch, famRDMAQPErrors, float64(r.QPErrors))
		c.emit(ch, famRDMADisconn, float64(r.Disconnects))
		c.emit(ch, famRDMAGranted, float64(r.CreditsGranted))
		c.emit(ch, famRDMAInUse, float64(r.CreditsInUse))
		c.emit(ch, famRDMARegistered, float64(r.RegisteredBytes))
		c.emit(ch, famRDMAShortages, float64(r.Shortages))
		c.emit(ch, famRDMACopied, float64(r.CopiedBytes))
		c.emit(ch, famRDMAQuick, float64(r.CompletionLoopCalls))
	}
	if s.DRCEntries != nil {
		c.emit(ch, famDRCEntries, float64(s.DRCEntries()))
	}
	if s.Locks != nil {
		l := s.Locks()
		c.emit(ch, famLocksHeld, float64(l.Held))
		c.emit(ch, famLocksBlocked, float64(l.Blocked))
		c.emit(ch, famShares, float64(l.Shares))
	}
	if s.Grace != nil {
		on, end := s.Grace()
		c.emit(ch, famGrace, boolValue(on))
		if !end.IsZero() {
			c.emit(ch, famGraceEnd, unixSeconds(end))
		}
	}
	if s.Reloads != nil {
		r := s.Reloads()
		c.emit(ch, famReloads, float64(r.OK), "ok")
		c.emit(ch, famReloads, float64(r.Failed), "error")
		if !r.LastSuccess.IsZero() {
			c.emit(ch, famReloadTime, unixSeconds(r.LastSuccess))
		}
	}
}

func (c *collector) collectCalls(ch chan<- prometheus.Metric, counts oncrpc.DispatchCounts) {
	for _, p := range counts.Procs {
		vers := strconv.FormatUint(uint64(p.Version), 10)
		for status, n := range p.Statuses {
			c.emit(ch, famCalls, float64(n), p.Program, vers, p.Procedure, status)
		}
		buckets := make(map[float64]uint64, meter.Buckets)
		var cum uint64
		for i := range meter.Buckets {
			cum += p.Latency.Counts[i]
			buckets[meter.BucketBound(i).Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.descs[famCallDuration.Name], p.Latency.Count(), p.Latency.Sum.Seconds(), buckets, p.Program, vers, p.Procedure)
	}
	for reason, n := range counts.Rejected {
		c.emit(ch, famRejected, float64(n), reason)
	}
	for t, n := range counts.BytesIn {
		c.emit(ch, famRPCBytes, float64(n), t.String(), "in")
	}
	for t, n := range counts.BytesOut {
		c.emit(ch, famRPCBytes, float64(n), t.String(), "out")
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

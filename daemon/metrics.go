package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/metrics"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// health is what /healthz and gonfsrdma_ready say: up once Start has
// brought every listener up, down again when one fails or Shutdown
// begins.
type health struct {
	up     atomic.Bool
	failed atomic.Bool // a listener's Serve returned an error
}

func (h *health) ready(rdma rdmaServer) bool {
	if !h.up.Load() || h.failed.Load() {
		return false
	}
	if svc, ok := rdma.(*rdmaService); ok && !svc.serving() {
		return false
	}
	return true
}

// serving reports whether the RDMA listener still accepts connections.
func (r *rdmaService) serving() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// reloadCounts counts exports loads for the metrics.
type reloadCounts struct {
	mu          sync.Mutex
	ok, failed  uint64
	lastSuccess time.Time
}

// loaded records the table loaded at start.
func (r *reloadCounts) loaded(at time.Time) {
	r.mu.Lock()
	r.lastSuccess = at
	r.mu.Unlock()
}

// record counts one reload's result.
func (r *reloadCounts) record(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		return
	}
	r.ok++
	r.lastSuccess = time.Now()
}

func (r *reloadCounts) totals() metrics.ReloadTotals {
	r.mu.Lock()
	defer r.mu.Unlock()
	return metrics.ReloadTotals{OK: r.ok, Failed: r.failed, LastSuccess: r.lastSuccess}
}

// metricsSources reads the daemon's parts; Start calls it once they all
// exist, so the closures only read fields that no longer change.
func (d *Daemon) metricsSources() metrics.Sources {
	src := metrics.Sources{
		Version:        d.cfg.Version,
		Ready:          func() bool { return d.health.ready(d.rdma) },
		TCPBufferBytes: d.limits.BufferBytes,
		DRCEntries:     d.drc.Len,
		DRC:            d.drc.Counts,
		Calls:          d.disp.Counts,
		Clients:        d.clients,
		TopClients:     d.cfg.MetricsTopClients,
		Exports:        d.st.exportBytes,
		FileCaches:     d.st.fileCaches,
		Reloads:        d.reloads.totals,
	}
	svc, _ := d.rdma.(*rdmaService)
	src.Conns = func() map[string]int {
		// Limits counts TCP (every program) and RDMA connections together.
		all, rdma := d.limits.Conns(), 0
		if svc != nil {
			rdma = svc.srv.Stats().Conns
		}
		m := map[string]int{"tcp": max(all-rdma, 0)}
		if svc != nil {
			m["rdma"] = rdma
		}
		return m
	}
	if svc != nil {
		src.RDMA = func() metrics.RDMATotals {
			k := svc.srv.Counts()
			return metrics.RDMATotals{
				ReadChunks: k.ReadChunks, WriteChunks: k.WriteChunks, ReplyChunks: k.ReplyChunks,
				RDMAReadBytes: k.RDMAReadBytes, RDMAWriteBytes: k.RDMAWriteBytes,
				InlineRecvBytes: k.InlineRecvBytes, InlineSendBytes: k.InlineSendBytes,
				ReplyChunkReplies: k.ReplyChunkReplies, QPErrors: k.QPErrors, Disconnects: k.Disconnects,
				CreditsGranted: k.CreditsGranted, CreditsInUse: k.CreditsInUse, RegisteredBytes: k.RegisteredBytes,
				CopiedBytes: k.CopiedBytes, CompletionLoopCalls: k.CompletionLoopCalls, Shortages: k.Shortages,
			}
		}
	}
	if d.nlm != nil {
		src.Locks = func() metrics.LockTotals {
			c := d.nlm.Table().Counts()
			return metrics.LockTotals{Held: c.Held, Blocked: c.Blocked, Shares: c.Shares}
		}
		src.Grace = func() (bool, time.Time) { return d.nsm.InGrace(), d.nsm.GraceEnd() }
	}
	return src
}

// startMetrics serves /metrics and /healthz on cfg.MetricsAddr, if set.
func (d *Daemon) startMetrics() error {
	if d.cfg.MetricsAddr == "" {
		return nil
	}
	srv, err := metrics.Listen(d.log.Named("metrics"), d.cfg.MetricsAddr, metrics.NewRegistry(d.metricsSources()))
	if err != nil {
		return err
	}
	d.metrics = srv
	d.log.Info("listening", zap.String("metrics", "http://"+srv.Addr().String()+"/metrics"))
	return nil
}

// MetricsAddr is the bound metrics address, nil without --metrics-listen.
func (d *Daemon) MetricsAddr() string {
	if d.metrics == nil {
		return ""
	}
	return d.metrics.Addr().String()
}

func (d *Daemon) stopMetrics(ctx context.Context) {
	if d.metrics == nil {
		return
	}
	if err := d.metrics.Close(ctx); err != nil {
		d.log.Warn("metrics listener close", zap.Error(err))
	}
}

// entry returns the export at path in s (s may be nil).
func (s *exportSet) entry(path string) (*exportEntry, bool) {
	if s == nil {
		return nil, false
	}
	e, ok := s.byPath[path]
	return e, ok
}

// exportBytes reads the current exports' byte counters.
func (st *exportState) exportBytes() []metrics.ExportBytes {
	set := st.cur.Load()
	if set == nil {
		return nil
	}
	var out []metrics.ExportBytes
	for path, e := range set.byPath {
		for _, t := range []oncrpc.Transport{oncrpc.TCP, oncrpc.UDP, oncrpc.RDMA} {
			r, w := e.nfs.Stats.ReadBytes(t), e.nfs.Stats.WriteBytes(t)
			if r|w != 0 {
				out = append(out, metrics.ExportBytes{Export: path, Transport: t.String(), Read: r, Write: w})
			}
		}
	}
	return out
}

// fileCaches reads the open-file cache counters of the current exports.
func (st *exportState) fileCaches() []metrics.ExportCache {
	set := st.cur.Load()
	if set == nil {
		return nil
	}
	var out []metrics.ExportCache
	for path, e := range set.byPath {
		if oc, ok := e.nfs.FS.(vfs.OpenFileCacher); ok {
			c := oc.OpenFileCache()
			out = append(out, metrics.ExportCache{Export: path, Hits: c.Hits, Misses: c.Misses, Evictions: c.Evictions, Open: c.Open})
		}
	}
	return out
}

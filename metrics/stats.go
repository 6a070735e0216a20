package metrics

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one scrape of a server's /metrics, for `gonfsrdma stats`.
type Snapshot struct {
	At   time.Time
	fams map[string]*dto.MetricFamily
}

// maxScrapeBytes bounds what Scrape reads from an endpoint.
const maxScrapeBytes = 64 << 20

// Scrape fetches and parses url (a /metrics endpoint in the text format).
func Scrape(ctx context.Context, client *http.Client, url string) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return ParseSnapshot(io.LimitReader(resp.Body, maxScrapeBytes), time.Now())
}

// ParseSnapshot parses the Prometheus text format read from r, taken at at.
func ParseSnapshot(r io.Reader, at time.Time) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Snapshot{At: at, fams: fams}, nil
}

// Has reports whether the snapshot holds family name.
func (s *Snapshot) Has(name string) bool { return s != nil && s.fams[name] != nil }

// series is one sample with its labels.
type series struct {
	labels map[string]string
	value  float64
}

// Series returns every sample of a counter or gauge family.
func (s *Snapshot) series(name string) []series {
	if s == nil {
		return nil
	}
	f := s.fams[name]
	if f == nil {
		return nil
	}
	out := make([]series, 0, len(f.Metric))
	for _, m := range f.Metric {
		l := make(map[string]string, len(m.Label))
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Untyped != nil:
			v = m.Untyped.GetValue()
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		}
		out = append(out, series{labels: l, value: v})
	}
	return out
}

// Value sums the samples of family name whose labels include match
// (label, value pairs).
func (s *Snapshot) Value(name string, match ...string) float64 {
	var sum float64
	for _, e := range s.series(name) {
		if matches(e.labels, match) {
			sum += e.value
		}
	}
	return sum
}

func matches(l map[string]string, match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if l[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// By sums family name per value of label key, over samples matching match.
func (s *Snapshot) By(name, key string, match ...string) map[string]float64 {
	out := make(map[string]float64)
	for _, e := range s.series(name) {
		if matches(e.labels, match) {
			out[e.labels[key]] += e.value
		}
	}
	return out
}

// Series returns the number of samples (series) of family name.
func (s *Snapshot) Series(name string) int { return len(s.series(name)) }

// histogramSum returns the sample sum and count of histogram series
// matching match.
func (s *Snapshot) histogramSum(name string, match ...string) (sum float64, count uint64) {
	if s == nil || s.fams[name] == nil {
		return 0, 0
	}
	for _, m := range s.fams[name].Metric {
		l := make(map[string]string, len(m.Label))
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if m.Histogram != nil && matches(l, match) {
			sum += m.Histogram.GetSampleSum()
			count += m.Histogram.GetSampleCount()
		}
	}
	return sum, count
}

// successStatuses are the status label values that are not errors: the
// dispatcher's SUCCESS and each program's OK status (NFS, MOUNT, NLM,
// NSM). The dashboard's errors panel leaves out the same names.
var successStatuses = map[string]bool{"SUCCESS": true, "NFS3_OK": true, "MNT3_OK": true, "NLM4_GRANTED": true, "STAT_SUCC": true}

// ViewOptions shape WriteStats' output.
type ViewOptions struct {
	TopClients int // rows of the clients table (0: 10)
}

// WriteStats writes an nfsstat -s-like view of cur: calls per program
// and procedure, bytes per transport, RDMA chunk and placement counts,
// and the busiest clients. With prev (an earlier scrape of the same
// server) it adds rates per second over the time between them.
func WriteStats(w io.Writer, cur, prev *Snapshot, opts ViewOptions) error {
	if opts.TopClients <= 0 {
		opts.TopClients = 10
	}
	var rate rates
	if prev != nil {
		rate.dt = cur.At.Sub(prev.At).Seconds()
	}
	dt := rate.dt
	ew := &errWriter{w: w}
	version := "?"
	for _, e := range cur.series(famBuildInfo.Name) {
		version = e.labels["version"]
	}
	state := "ready"
	if cur.Has(famReady.Name) && cur.Value(famReady.Name) != 1 {
		state = "NOT READY (a listener is down or starting)"
	}
	ew.printf("gonfsrdma %s, %s, at %s", version, state, cur.At.UTC().Format(time.DateTime+" MST"))
	if dt > 0 {
		ew.printf(", rates over %.1fs", dt)
	}
	ew.printf("\n")

	if cur.Has(famCalls.Name) {
		writeCalls(ew, cur, prev, rate)
	}
	writeTransports(ew, cur, prev, rate)
	if cur.Has(famRDMAChunks.Name) {
		writeRDMA(ew, cur, prev, rate)
	}
	if cur.Has(famClientBytes.Name) || cur.Has(famClientsKnown.Name) {
		writeClients(ew, cur, prev, rate, opts.TopClients)
	}
	writeServerState(ew, cur)
	return ew.err
}

// rates turns two readings of a counter into a rate per second; dt is
// the seconds between the readings (0: one reading, no rates).
type rates struct{ dt float64 }

// count is the rate of a count ("-" without two readings).
func (r rates) count(now, before float64) string {
	if r.dt <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", max(now-before, 0)/r.dt)
}

// bytes is the rate of a byte counter, with a unit.
func (r rates) bytes(now, before float64) string {
	if r.dt <= 0 {
		return "-"
	}
	return formatBytes(max(now-before, 0) / r.dt)
}

func writeCalls(ew *errWriter, cur, prev *Snapshot, rate rates) {
	type key struct{ program, version string }
	progs := make(map[key]bool)
	for _, e := range cur.series(famCalls.Name) {
		progs[key{e.labels["program"], e.labels["version"]}] = true
	}
	keys := make([]key, 0, len(progs))
	for k := range progs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.program, b.program), cmp.Compare(a.version, b.version))
	})
	for _, k := range keys {
		calls := cur.By(famCalls.Name, "procedure", "program", k.program, "version", k.version)
		before := prev.By(famCalls.Name, "procedure", "program", k.program, "version", k.version)
		var total float64
		for _, n := range calls {
			total += n
		}
		ew.printf("\n%s v%s: %.0f calls\n", k.program, k.version, total)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "procedure\tcalls\t%%\t/s\terrors\tmean\t\n")
		procs := make([]string, 0, len(calls))
		for p := range calls {
			procs = append(procs, p)
		}
		slices.SortFunc(procs, func(a, b string) int { return cmp.Or(cmp.Compare(calls[b], calls[a]), cmp.Compare(a, b)) })
		for _, p := range procs {
			var errs float64
			for status, n := range cur.By(famCalls.Name, "status", "program", k.program, "version", k.version, "procedure", p) {
				if !successStatuses[status] {
					errs += n
				}
			}
			mean := "-"
			if sum, n := cur.histogramSum(famCallDuration.Name, "program", k.program, "version", k.version, "procedure", p); n > 0 {
				mean = formatDuration(time.Duration(sum / float64(n) * 1e9))
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.1f%%\t%s\t%.0f\t%s\t\n", p, calls[p], 100*calls[p]/max(total, 1), rate.count(calls[p], before[p]), errs, mean)
		}
		ew.setErr(tw.Flush())
	}
}

func writeTransports(ew *errWriter, cur, prev *Snapshot, rate rates) {
	// Each column comes from one family; a family the server does not
	// export leaves its columns out rather than showing zeros.
	type column struct {
		title string
		cell  func(transport string) string
	}
	var cols []column
	names := make(map[string]bool)
	collect := func(m map[string]float64) map[string]float64 {
		for t := range m {
			names[t] = true
		}
		return m
	}
	if cur.Has(famConns.Name) {
		conns := collect(cur.By(famConns.Name, "transport"))
		cols = append(cols, column{"conns", func(t string) string { return fmt.Sprintf("%.0f", conns[t]) }})
	}
	if cur.Has(famRPCBytes.Name) {
		in := collect(cur.By(famRPCBytes.Name, "transport", "direction", "in"))
		out := collect(cur.By(famRPCBytes.Name, "transport", "direction", "out"))
		inBefore := prev.By(famRPCBytes.Name, "transport", "direction", "in")
		outBefore := prev.By(famRPCBytes.Name, "transport", "direction", "out")
		cols = append(cols,
			column{"RPC in", func(t string) string { return formatBytes(in[t]) }},
			column{"RPC out", func(t string) string { return formatBytes(out[t]) }},
			column{"in/s", func(t string) string { return rate.bytes(in[t], inBefore[t]) }},
			column{"out/s", func(t string) string { return rate.bytes(out[t], outBefore[t]) }})
	}
	if cur.Has(famNFSBytes.Name) {
		reads := collect(cur.By(famNFSBytes.Name, "transport", "op", "read"))
		writes := collect(cur.By(famNFSBytes.Name, "transport", "op", "write"))
		cols = append(cols,
			column{"NFS read", func(t string) string { return formatBytes(reads[t]) }},
			column{"NFS write", func(t string) string { return formatBytes(writes[t]) }})
	}
	if len(names) == 0 {
		return
	}
	transports := make([]string, 0, len(names))
	for t := range names {
		transports = append(transports, t)
	}
	slices.Sort(transports)
	ew.printf("\ntransports:\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "transport\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.title+"\t")
	}
	fmt.Fprint(tw, "\n")
	for _, t := range transports {
		fmt.Fprint(tw, t+"\t")
		for _, c := range cols {
			fmt.Fprint(tw, c.cell(t)+"\t")
		}
		fmt.Fprint(tw, "\n")
	}
	ew.setErr(tw.Flush())
}

func writeRDMA(ew *errWriter, cur, prev *Snapshot, rate rates) {
	chunks := cur.By(famRDMAChunks.Name, "kind")
	bytes := cur.By(famRDMABytes.Name, "method")
	before := prev.By(famRDMABytes.Name, "method")
	ew.printf("\nrdma: chunks read %.0f, write %.0f, reply %.0f (%.0f replies through a Reply chunk)\n",
		chunks["read"], chunks["write"], chunks["reply"], cur.Value(famRDMAReplyChunk.Name))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tRDMA Read\tRDMA Write\tinline in\tinline out\t\n")
	fmt.Fprintf(tw, "bytes\t%s\t%s\t%s\t%s\t\n", formatBytes(bytes["rdma_read"]), formatBytes(bytes["rdma_write"]), formatBytes(bytes["inline_recv"]), formatBytes(bytes["inline_send"]))
	fmt.Fprintf(tw, "/s\t%s\t%s\t%s\t%s\t\n", rate.bytes(bytes["rdma_read"], before["rdma_read"]), rate.bytes(bytes["rdma_write"], before["rdma_write"]),
		rate.bytes(bytes["inline_recv"], before["inline_recv"]), rate.bytes(bytes["inline_send"], before["inline_send"]))
	ew.setErr(tw.Flush())
	ew.printf("credits in use %.0f of %.0f granted, registered %s, QP errors %.0f, disconnects %.0f\n",
		cur.Value(famRDMAInUse.Name), cur.Value(famRDMAGranted.Name), formatBytes(cur.Value(famRDMARegistered.Name)),
		cur.Value(famRDMAQPErrors.Name), cur.Value(famRDMADisconn.Name))
}

func writeClients(ew *errWriter, cur, prev *Snapshot, rate rates, top int) {
	in := cur.By(famClientBytes.Name, "client", "direction", "in")
	out := cur.By(famClientBytes.Name, "client", "direction", "out")
	calls := cur.By(famClientCalls.Name, "client")
	before := prev.By(famClientCalls.Name, "client")
	clients := make([]string, 0, len(calls))
	for c := range calls {
		clients = append(clients, c)
	}
	slices.SortFunc(clients, func(a, b string) int {
		return cmp.Or(cmp.Compare(in[b]+out[b], in[a]+out[a]), cmp.Compare(a, b))
	})
	ew.printf("\nclients: %.0f known; busiest by bytes:\n", cur.Value(famClientsKnown.Name))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "client\tcalls\t/s\tin\tout\t\n")
	for _, c := range clients[:min(top, len(clients))] {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t\n", c, calls[c], rate.count(calls[c], before[c]), formatBytes(in[c]), formatBytes(out[c]))
	}
	ew.setErr(tw.Flush())
}

func writeServerState(ew *errWriter, cur *Snapshot) {
	var parts []string
	if cur.Has(famDRCEntries.Name) {
		drc := fmt.Sprintf("DRC entries %.0f", cur.Value(famDRCEntries.Name))
		if cur.Has(famDRCHits.Name) {
			drc += fmt.Sprintf(" (hits %.0f, misses %.0f, evictions %.0f)", cur.Value(famDRCHits.Name), cur.Value(famDRCMisses.Name), cur.Value(famDRCEvictions.Name))
		}
		parts = append(parts, drc)
	}
	if cur.Has(famLocksHeld.Name) {
		parts = append(parts, fmt.Sprintf("locks held %.0f, blocked %.0f", cur.Value(famLocksHeld.Name), cur.Value(famLocksBlocked.Name)))
	}
	if cur.Has(famGrace.Name) {
		g := "off"
		if cur.Value(famGrace.Name) == 1 {
			g = "ON (reclaims only)"
		}
		parts = append(parts, "grace "+g)
	}
	if cur.Has(famReloads.Name) {
		parts = append(parts, fmt.Sprintf("exports reloads %.0f ok, %.0f failed",
			cur.Value(famReloads.Name, "result", "ok"), cur.Value(famReloads.Name, "result", "error")))
	}
	if len(parts) > 0 {
		ew.printf("\nserver: %s\n", strings.Join(parts, ", "))
	}
}

// formatBytes prints n bytes with a binary unit.
func formatBytes(n float64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for n /= unit; n >= unit && i < len(units)-1; i++ {
		n /= unit
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}

// formatDuration prints d with three significant digits.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

func (e *errWriter) setErr(err error) {
	if e.err == nil {
		e.err = err
	}
}

// Names returns the snapshot's family names with their types
// ("counter", "gauge", "histogram", "summary", "untyped").
func (s *Snapshot) Names() map[string]string {
	out := make(map[string]string, len(s.fams))
	for name, f := range s.fams {
		out[name] = strings.ToLower(f.GetType().String())
	}
	return out
}

package oncrpc

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
)

// Outcomes counted per procedure after the program's own statuses.
const (
	outcomeSuccess     = iota // SUCCESS, results without a status word
	outcomeGarbageArgs        // GARBAGE_ARGS
	outcomeSystemErr          // SYSTEM_ERR
	outcomeAuthError          // MSG_DENIED AUTH_ERROR from the handler
	outcomeOtherStatus        // a status word the program does not name
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"SUCCESS", "GARBAGE_ARGS", "SYSTEM_ERR", "AUTH_ERROR", "OTHER"}

// Calls rejected before a procedure runs, by reason.
const (
	rejectGarbageHeader = iota // GARBAGE_ARGS for a header that does not decode
	rejectRPCMismatch
	rejectAuth // credential or verifier refused
	rejectProgUnavail
	rejectProgMismatch
	rejectProcUnavail
	numRejects
)

var rejectNames = [numRejects]string{"GARBAGE_HEADER", "RPC_MISMATCH", "AUTH_ERROR", "PROG_UNAVAIL", "PROG_MISMATCH", "PROC_UNAVAIL"}

// LatencySampleEvery is how many calls go by per call timed for the
// latency histograms. Reading the clock twice costs 100-300 ns on
// virtual machines without a fast clock (this project's CI machine: 300
// ns for time.Now and time.Since together, next to a 1.5 µs GETATTR), so
// one call in 16 is timed: a histogram's shape and quantiles are the
// procedure's, its count about a sixteenth of the calls
// (rpc_calls_total has them all).
const LatencySampleEvery = 16

// timed reports whether the call with this XID is one to time: with no
// counter to bump, the XID picks it. (xid ^ xid>>4) & 15 is zero for
// exactly one XID of every aligned run of 16 consecutive ones, and for
// one in 16 of XIDs that step by 2, 4, 8 or 16 as well.
func timed(xid uint32) bool {
	return (xid^xid>>4)%LatencySampleEvery == 0
}

// programStatuses is a program's status table sorted by value, so that
// the status word of a reply is found without a map: by a table for the
// small values most statuses are (NFS3_OK ... NFS3ERR_DQUOT, every NLM
// and NSM status), by binary search above (NFS3ERR_BADHANDLE and up).
type programStatuses struct {
	values []uint32
	names  []string
	small  [smallStatuses]uint8 // index+1 of values below smallStatuses; 0: not named
}

// smallStatuses bounds the statuses programStatuses finds by table.
const smallStatuses = 128

func newProgramStatuses(m map[uint32]string) programStatuses {
	var s programStatuses
	for v := range m {
		s.values = append(s.values, v)
	}
	slices.Sort(s.values)
	for i, v := range s.values {
		s.names = append(s.names, m[v])
		if v < smallStatuses { // sorted: i < smallStatuses too
			s.small[v] = uint8(i + 1)
		}
	}
	return s
}

// index returns the counter index of status v.
func (s *programStatuses) index(v uint32) int {
	if v < smallStatuses {
		if i := s.small[v]; i != 0 {
			return int(i) - 1
		}
		return len(s.values) + outcomeOtherStatus
	}
	lo, hi := 0, len(s.values)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.values[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.values) && s.values[lo] == v {
		return lo
	}
	return len(s.values) + outcomeOtherStatus
}

// procLayout places one procedure's counters in its program's counter
// array: at off, len(statuses)+numOutcomes of them when its results
// carry a status word (named), else numOutcomes.
type procLayout struct {
	off   int
	named bool
}

// numTransports bounds Transport values.
const numTransports = int(RDMA) + 1

// dispatchStats are a Dispatcher's counters. The per-call ones live in
// connCounts, one per connection (OpenConn), so that calls on different
// connections (and CPUs) never add to the same cache line; Counts adds
// up the connections open, the totals of those closed (retired) and the
// shared counts of calls on peers that were never opened (UDP). Only
// the latency histograms, fed one call in 16, are shared.
type dispatchStats struct {
	statuses []programStatuses // per program
	layout   [][][]procLayout  // [program][version][procedure]
	width    []int             // per program: counters in its array
	latency  [][][]meter.Histogram
	shared   *connCounts // peers never opened; nil: not counting

	mu      sync.Mutex
	live    map[*connCounts]struct{}
	retired struct {
		progs    [][]uint64 // per program, as connCounts.progs
		rejected [numRejects]uint64
		bytes    [numTransports][2]uint64
	}
}

func newDispatchStats(programs []*Program) *dispatchStats {
	s := &dispatchStats{
		statuses: make([]programStatuses, len(programs)),
		layout:   make([][][]procLayout, len(programs)),
		width:    make([]int, len(programs)),
		latency:  make([][][]meter.Histogram, len(programs)),
		live:     make(map[*connCounts]struct{}),
	}
	s.retired.progs = make([][]uint64, len(programs))
	for i, p := range programs {
		s.statuses[i] = newProgramStatuses(p.Statuses)
		s.layout[i] = make([][]procLayout, len(p.Versions))
		s.latency[i] = make([][]meter.Histogram, len(p.Versions))
		for j, v := range p.Versions {
			s.layout[i][j] = make([]procLayout, len(v.Procs))
			s.latency[i][j] = make([]meter.Histogram, len(v.Procs))
			for k, proc := range v.Procs {
				named := proc.Status || proc.StatusAfterCookie
				s.layout[i][j][k] = procLayout{off: s.width[i], named: named}
				s.width[i] += numOutcomes
				if named {
					s.width[i] += len(s.statuses[i].values)
				}
			}
		}
		s.retired.progs[i] = make([]uint64, s.width[i])
	}
	s.shared = s.newConnCounts()
	return s
}

// connCounts are one connection's call counters: atomic adds on memory
// no other connection touches, read only at scrape time. The padding
// keeps them off the cache lines of whatever the allocator puts next to
// them.
type connCounts struct {
	_ [cacheLine]byte
	// progs holds, per program, its procedures' calls by status and
	// outcome (laid out by dispatchStats.layout); made at the
	// connection's first call of the program, so a connection carries
	// the counters of the programs it uses only.
	progs    []atomic.Pointer[[]atomic.Uint64]
	rejected [numRejects]atomic.Uint64
	// uncounted counts messages dispatched that are neither a
	// procedure's call nor a rejection: dropped, replayed from the DRC,
	// or a retransmission of a call in progress.
	uncounted atomic.Uint64
	bytes     [numTransports][2]atomic.Uint64 // [transport][in, out]
	clients   *meter.Clients
	_         [cacheLine]byte
}

// cacheLine is the padding that keeps one connection's counters and
// another's on different cache lines (64 bytes on amd64 and most arm64).
const cacheLine = 64

func (s *dispatchStats) newConnCounts() *connCounts {
	return &connCounts{progs: make([]atomic.Pointer[[]atomic.Uint64], len(s.width))}
}

// newProgram makes the counters of program pi at the connection's first
// call of it (or returns those another call made first).
func (c *connCounts) newProgram(s *dispatchStats, pi int) *[]atomic.Uint64 {
	// Padded on both sides, as connCounts.
	const pad = cacheLine / 8
	n := make([]atomic.Uint64, pad+s.width[pi]+pad)[pad : pad+s.width[pi]]
	if c.progs[pi].CompareAndSwap(nil, &n) {
		return &n
	}
	return c.progs[pi].Load()
}

// reject counts a call rejected for reason r (c may be nil).
func (c *connCounts) reject(r int) {
	if c != nil {
		c.rejected[r].Add(1)
	}
}

// uncount counts a message that is neither a call run nor a rejection
// (c may be nil).
func (c *connCounts) uncount() {
	if c != nil {
		c.uncounted.Add(1)
	}
}

// Traffic implements meter.TrafficSource: every message the connection
// dispatched, and the bytes in and out.
func (c *connCounts) Traffic() meter.Traffic {
	var t meter.Traffic
	for i := range c.progs {
		if p := c.progs[i].Load(); p != nil {
			for j := range *p {
				t.Calls += (*p)[j].Load()
			}
		}
	}
	for i := range c.rejected {
		t.Calls += c.rejected[i].Load()
	}
	t.Calls += c.uncounted.Load()
	for i := range c.bytes {
		t.BytesIn += c.bytes[i][0].Load()
		t.BytesOut += c.bytes[i][1].Load()
	}
	return t
}

// OpenConn gives the connection p its own call counters (and, when
// clients is not nil, an entry in that table for its remote address, in
// p.Client), so its calls count without sharing a cache line with any
// other connection's. The transport calls it when the connection opens,
// before its first call, and CloseConn after its last call has been
// answered. A peer never opened (UDP) counts in counters the dispatcher
// shares. Without counting (SetCounting(false)) it does nothing.
func (d *Dispatcher) OpenConn(p *Peer, clients *meter.Clients) {
	s := d.stats
	if s.shared == nil {
		return
	}
	c := s.newConnCounts()
	c.clients = clients
	s.mu.Lock()
	s.live[c] = struct{}{}
	s.mu.Unlock()
	p.counts = c
	p.Client = clients.Acquire(p.Remote.Addr(), c)
}

// CloseConn folds the counters of connection p into the dispatcher's
// totals (and its client's) and forgets them.
func (d *Dispatcher) CloseConn(p *Peer) {
	c := p.counts
	if c == nil {
		return
	}
	c.clients.Release(p.Client, c)
	s := d.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, c)
	for pi := range c.progs {
		if n := c.progs[pi].Load(); n != nil {
			for j := range *n {
				s.retired.progs[pi][j] += (*n)[j].Load()
			}
		}
	}
	for r := range c.rejected {
		s.retired.rejected[r] += c.rejected[r].Load()
	}
	for t := range c.bytes {
		s.retired.bytes[t][0] += c.bytes[t][0].Load()
		s.retired.bytes[t][1] += c.bytes[t][1].Load()
	}
}

// SetCounting turns the call counters on (the default) or off. Off,
// Dispatch counts nothing (no atomic add per call) and Counts reports
// no calls; the daemon turns them off without --metrics-listen. Call it
// before the dispatcher serves.
func (d *Dispatcher) SetCounting(on bool) {
	switch {
	case !on:
		d.stats.shared = nil
	case d.stats.shared == nil:
		d.stats.shared = d.stats.newConnCounts()
	}
}

// counts returns the counters a call on conn adds to, nil when not
// counting.
func (d *Dispatcher) counts(conn *Peer) *connCounts {
	if c := conn.counts; c != nil {
		return c
	}
	return d.stats.shared
}

// statusIndex returns the counter index, within procedure proc's
// counters of program pi, of a call that ended with outcome: its status
// word's when it succeeded and its results (head[resultsAt:]) carry one.
func (s *dispatchStats) statusIndex(pi int, proc *Procedure, head []byte, resultsAt, outcome int) int {
	statuses := &s.statuses[pi]
	if outcome == outcomeSuccess {
		if v, ok := statusWord(proc, head[min(resultsAt, len(head)):]); ok {
			if v < smallStatuses && statuses.small[v] != 0 {
				return int(statuses.small[v]) - 1 // index's table, without the call
			}
			return statuses.index(v)
		}
	}
	return len(statuses.values) + outcome
}

// statusWord returns the status word of results: the first word, or
// (StatusAfterCookie) the word after the leading netobj cookie.
func statusWord(proc *Procedure, results []byte) (uint32, bool) {
	at := 0
	if proc.StatusAfterCookie {
		if len(results) < 4 {
			return 0, false
		}
		n := uint64(binary.BigEndian.Uint32(results))
		at64 := 4 + n + (4-n%4)%4 // RFC 4506 section 4.10: opaque<> padded to 4
		if at64 > uint64(len(results)) {
			return 0, false
		}
		at = int(at64)
	}
	if len(results) < at+4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(results[at:]), true
}

// ProcCounts are one procedure's counters, read at one time.
type ProcCounts struct {
	Program   string
	Version   uint32
	Procedure string
	// Statuses maps each status or outcome name (the program's status
	// names, SUCCESS, GARBAGE_ARGS, SYSTEM_ERR, AUTH_ERROR, OTHER) to the
	// calls that ended with it; names never seen are left out.
	Statuses map[string]uint64
	Latency  meter.HistogramSnapshot
}

// DispatchCounts are the dispatcher's counters, read at one time.
type DispatchCounts struct {
	// Procs lists the procedures called at least once.
	Procs []ProcCounts
	// Rejected counts calls answered before any procedure ran, by
	// reason (GARBAGE_HEADER, RPC_MISMATCH, AUTH_ERROR, PROG_UNAVAIL,
	// PROG_MISMATCH, PROC_UNAVAIL); every reason is present.
	Rejected map[string]uint64
	// BytesIn and BytesOut are the RPC message bytes dispatched and
	// answered, by transport.
	BytesIn, BytesOut map[Transport]uint64
}

// Counts reads the dispatcher's counters (for the metrics, at scrape
// time): the connections open, those closed and the shared counters,
// added up.
func (d *Dispatcher) Counts() DispatchCounts {
	s := d.stats
	c := DispatchCounts{Rejected: make(map[string]uint64), BytesIn: make(map[Transport]uint64), BytesOut: make(map[Transport]uint64)}
	progs := make([][]uint64, len(s.width))
	var rejected [numRejects]uint64
	var bytes [numTransports][2]uint64
	add := func(cc *connCounts) {
		if cc == nil {
			return
		}
		for pi := range cc.progs {
			if n := cc.progs[pi].Load(); n != nil {
				for j := range *n {
					progs[pi][j] += (*n)[j].Load()
				}
			}
		}
		for r := range cc.rejected {
			rejected[r] += cc.rejected[r].Load()
		}
		for t := range cc.bytes {
			bytes[t][0] += cc.bytes[t][0].Load()
			bytes[t][1] += cc.bytes[t][1].Load()
		}
	}
	s.mu.Lock()
	for pi := range progs {
		progs[pi] = slices.Clone(s.retired.progs[pi])
	}
	rejected, bytes = s.retired.rejected, s.retired.bytes
	for cc := range s.live {
		add(cc)
	}
	s.mu.Unlock()
	add(s.shared)

	for i, p := range d.programs {
		names := s.statuses[i].names
		for j, v := range p.Versions {
			for k := range v.Procs {
				lay := s.layout[i][j][k]
				pc := ProcCounts{Program: p.Name, Version: v.Vers, Procedure: v.Procs[k].Name, Statuses: make(map[string]uint64)}
				width := numOutcomes
				if lay.named {
					width += len(names)
				}
				for x, n := range progs[i][lay.off : lay.off+width] {
					if n == 0 {
						continue
					}
					switch {
					case !lay.named:
						pc.Statuses[outcomeNames[x]] += n
					case x < len(names):
						pc.Statuses[names[x]] += n
					default:
						pc.Statuses[outcomeNames[x-len(names)]] += n
					}
				}
				if len(pc.Statuses) == 0 {
					continue
				}
				pc.Latency = s.latency[i][j][k].Snapshot()
				c.Procs = append(c.Procs, pc)
			}
		}
	}
	for r := range rejected {
		c.Rejected[rejectNames[r]] = rejected[r]
	}
	for t := range bytes {
		if in, out := bytes[t][0], bytes[t][1]; in|out != 0 {
			c.BytesIn[Transport(t)], c.BytesOut[Transport(t)] = in, out
		}
	}
	return c
}

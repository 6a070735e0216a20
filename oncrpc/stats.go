package oncrpc

import (
	"encoding/binary"
	"slices"
	"sync/atomic"
	"time"

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

// procStats are one procedure's counters: calls by status, then by
// outcome, and the time each took.
type procStats struct {
	byStatus []atomic.Uint64 // len(program statuses) + numOutcomes
	latency  meter.Histogram
}

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
// the status word of a reply is found by binary search, without a map.
type programStatuses struct {
	values []uint32
	names  []string
}

func newProgramStatuses(m map[uint32]string) programStatuses {
	var s programStatuses
	for v := range m {
		s.values = append(s.values, v)
	}
	slices.Sort(s.values)
	for _, v := range s.values {
		s.names = append(s.names, m[v])
	}
	return s
}

// index returns the counter index of status v.
func (s *programStatuses) index(v uint32) int {
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

// dispatchStats are a Dispatcher's counters, laid out parallel to its
// program tables so a call reaches its counters by the indexes the
// table lookup already found.
type dispatchStats struct {
	statuses []programStatuses // per program
	procs    [][][]procStats   // [program][version][procedure]
	rejected [numRejects]atomic.Uint64
	bytes    [numTransports][2]atomic.Uint64 // [transport][in, out]
}

// numTransports bounds Transport values.
const numTransports = int(RDMA) + 1

func newDispatchStats(programs []*Program) *dispatchStats {
	s := &dispatchStats{statuses: make([]programStatuses, len(programs)), procs: make([][][]procStats, len(programs))}
	for i, p := range programs {
		s.statuses[i] = newProgramStatuses(p.Statuses)
		n := len(s.statuses[i].values) + numOutcomes
		s.procs[i] = make([][]procStats, len(p.Versions))
		for j, v := range p.Versions {
			s.procs[i][j] = make([]procStats, len(v.Procs))
			for k := range v.Procs {
				s.procs[i][j][k].byStatus = make([]atomic.Uint64, n)
			}
		}
	}
	return s
}

// countCall records a call that ran procedure proc of program pi,
// version vi: its status (read from the reply's first result word when
// the procedure has one; resultsAt is where the results begin in Head)
// and how long it took.
func (s *dispatchStats) countCall(pi, vi int, proc *Procedure, procNum uint32, reply *Reply, resultsAt int, outcome int, timed bool, took time.Duration) {
	st := &s.procs[pi][vi][procNum]
	statuses := &s.statuses[pi]
	idx := len(statuses.values) + outcome
	if outcome == outcomeSuccess && proc.Status && len(reply.Head) >= resultsAt+4 {
		idx = statuses.index(binary.BigEndian.Uint32(reply.Head[resultsAt:]))
	}
	st.byStatus[idx].Add(1)
	if timed {
		st.latency.Observe(took)
	}
}

// countBytes records a message of in bytes answered with out bytes (0:
// no reply) on transport t.
func (s *dispatchStats) countBytes(t Transport, in, out int) {
	if int(t) >= numTransports {
		t = 0
	}
	s.bytes[t][0].Add(uint64(in))
	s.bytes[t][1].Add(uint64(out))
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
// time).
func (d *Dispatcher) Counts() DispatchCounts {
	s := d.stats
	c := DispatchCounts{Rejected: make(map[string]uint64), BytesIn: make(map[Transport]uint64), BytesOut: make(map[Transport]uint64)}
	for i, p := range d.programs {
		names := s.statuses[i].names
		for j, v := range p.Versions {
			for k := range v.Procs {
				st := &s.procs[i][j][k]
				pc := ProcCounts{Program: p.Name, Version: v.Vers, Procedure: v.Procs[k].Name, Statuses: make(map[string]uint64)}
				for x := range st.byStatus {
					n := st.byStatus[x].Load()
					if n == 0 {
						continue
					}
					if x < len(names) {
						pc.Statuses[names[x]] += n
					} else {
						pc.Statuses[outcomeNames[x-len(names)]] += n
					}
				}
				if len(pc.Statuses) == 0 {
					continue
				}
				pc.Latency = st.latency.Snapshot()
				c.Procs = append(c.Procs, pc)
			}
		}
	}
	for r := range s.rejected {
		c.Rejected[rejectNames[r]] = s.rejected[r].Load()
	}
	for t := range s.bytes {
		if in, out := s.bytes[t][0].Load(), s.bytes[t][1].Load(); in|out != 0 {
			c.BytesIn[Transport(t)], c.BytesOut[Transport(t)] = in, out
		}
	}
	return c
}

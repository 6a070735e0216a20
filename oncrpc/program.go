package oncrpc

import (
	"context"
	"errors"
	"fmt"
)

// Handler runs one procedure. It decodes call.Args, does the work and
// appends the results to reply.Head (and attaches a payload when it has bulk
// data). Returning nil sends SUCCESS with those results; returning
// ErrGarbageArgs, ErrSystem or an *AuthError replaces them with that
// RPC-level error; any other error is logged and answered with SYSTEM_ERR.
// NFS status codes are results, not errors.
type Handler func(ctx context.Context, call *Call, reply *Reply) error

// Procedure is one entry of a version's static procedure table, indexed by
// procedure number.
type Procedure struct {
	Name    string
	Handler Handler
	// Idempotent procedures bypass the duplicate request cache.
	Idempotent bool
	// Quick says the handler neither forces data to stable storage nor
	// moves bulk data (no AllocPayload): a transport may run it on its
	// receive path instead of handing it to a worker (RPC-over-RDMA runs
	// such calls on the connection's completion goroutine). A Quick call
	// that does wait holds up the calls behind it on that connection.
	Quick bool
	// Status says the procedure's results begin with the program's
	// status word (Program.Statuses): the metrics count its calls by
	// that status.
	Status bool
	// StatusAfterCookie says the results begin with a netobj cookie
	// followed by the status word (NLM's nlm4_res, nlm4_testres,
	// nlm4_shareres): counted by that status as for Status.
	StatusAfterCookie bool
}

// Version is one version of a program.
type Version struct {
	Vers  uint32
	Procs []Procedure
}

// Program is a program's static table.
type Program struct {
	Prog     uint32
	Name     string
	Versions []Version
	// Statuses names the values of the status word that begins the
	// results of procedures marked Status or StatusAfterCookie (nfsstat3
	// for NFS, nlm4_stats for NLM), for the
	// metrics; nil when the program has none.
	Statuses map[uint32]string
}

// version returns version vers of the program, or nil.
func (p *Program) version(vers uint32) *Version {
	if i := p.versionIndex(vers); i >= 0 {
		return &p.Versions[i]
	}
	return nil
}

// versionIndex returns the index of version vers in p.Versions, or -1.
func (p *Program) versionIndex(vers uint32) int {
	for i := range p.Versions {
		if p.Versions[i].Vers == vers {
			return i
		}
	}
	return -1
}

// versionRange returns the lowest and highest version numbers.
func (p *Program) versionRange() (low, high uint32) {
	for i, v := range p.Versions {
		if i == 0 || v.Vers < low {
			low = v.Vers
		}
		if v.Vers > high {
			high = v.Vers
		}
	}
	return low, high
}

// RPC-level errors a handler may return.
var (
	ErrGarbageArgs = errors.New("oncrpc: garbage arguments")
	ErrSystem      = errors.New("oncrpc: system error")
)

// AuthError makes the dispatcher answer MSG_DENIED AUTH_ERROR.
type AuthError struct{ Stat AuthStat }

func (e *AuthError) Error() string { return fmt.Sprintf("oncrpc: auth error %v", e.Stat) }

// Errors an RPC client reports for non-SUCCESS replies.
type (
	// AcceptError is an accepted reply with a status other than SUCCESS.
	AcceptError struct {
		Stat      AcceptStat
		Low, High uint32
	}
	// RejectError is a MSG_DENIED reply.
	RejectError struct {
		RejectStat uint32
		AuthStat   AuthStat
		Low, High  uint32
	}
)

func (e *AcceptError) Error() string {
	if e.Stat == ProgMismatch {
		return fmt.Sprintf("oncrpc: %v (versions %d-%d)", e.Stat, e.Low, e.High)
	}
	return "oncrpc: " + e.Stat.String()
}

func (e *RejectError) Error() string {
	if e.RejectStat == RPCMismatch {
		return fmt.Sprintf("oncrpc: RPC_MISMATCH (versions %d-%d)", e.Low, e.High)
	}
	return "oncrpc: AUTH_ERROR " + e.AuthStat.String()
}

package nsm

import (
	"context"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Program number and version (XNFS, Version 3W, chapter 11 "Network
// Status Monitor Protocol").
const (
	Prog  = 100024
	Vers1 = 1
)

// Procedures (XNFS 11.3).
const (
	ProcNull      = 0
	ProcStat      = 1
	ProcMon       = 2
	ProcUnmon     = 3
	ProcUnmonAll  = 4
	ProcSimuCrash = 5
	ProcNotify    = 6
)

// Limits (XNFS 11.3: SM_MAXSTRLEN; priv is opaque[16]).
const (
	SMMaxStrLen = 1024
	PrivSize    = 16
)

// Res is enum res (XNFS 11.3).
type Res uint32

// res values.
const (
	StatSucc Res = 0 // stat_succ
	StatFail Res = 1 // stat_fail
)

// Name is struct sm_name, the argument of STAT.
type Name struct{ MonName string }

// Append encodes n.
func (n *Name) Append(b []byte) []byte { return xdr.AppendString(b, n.MonName) }

// Decode decodes n.
func (n *Name) Decode(r *xdr.Reader) error {
	n.MonName = r.String(SMMaxStrLen)
	return r.Err()
}

// StatRes is struct sm_stat_res, the result of STAT and MON.
type StatRes struct {
	Res   Res
	State int32
}

// Append encodes s.
func (s *StatRes) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(s.Res))
	return xdr.AppendInt32(b, s.State)
}

// Decode decodes s.
func (s *StatRes) Decode(r *xdr.Reader) error {
	s.Res = Res(r.Uint32())
	s.State = r.Int32()
	return r.Err()
}

// MyID is struct my_id: the RPC procedure the monitor calls when the
// monitored host reboots.
type MyID struct {
	MyName                 string
	MyProg, MyVers, MyProc uint32
}

// Append encodes m.
func (m *MyID) Append(b []byte) []byte {
	b = xdr.AppendString(b, m.MyName)
	b = xdr.AppendUint32(b, m.MyProg)
	b = xdr.AppendUint32(b, m.MyVers)
	return xdr.AppendUint32(b, m.MyProc)
}

// Decode decodes m.
func (m *MyID) Decode(r *xdr.Reader) error {
	m.MyName = r.String(SMMaxStrLen)
	m.MyProg = r.Uint32()
	m.MyVers = r.Uint32()
	m.MyProc = r.Uint32()
	return r.Err()
}

// MonID is struct mon_id, the argument of UNMON.
type MonID struct {
	MonName string
	MyID    MyID
}

// Append encodes m.
func (m *MonID) Append(b []byte) []byte {
	b = xdr.AppendString(b, m.MonName)
	return m.MyID.Append(b)
}

// Decode decodes m.
func (m *MonID) Decode(r *xdr.Reader) error {
	m.MonName = r.String(SMMaxStrLen)
	return m.MyID.Decode(r)
}

// Mon is struct mon, the argument of MON.
type Mon struct {
	MonID MonID
	Priv  [PrivSize]byte
}

// Append encodes m.
func (m *Mon) Append(b []byte) []byte {
	b = m.MonID.Append(b)
	return append(b, m.Priv[:]...)
}

// Decode decodes m.
func (m *Mon) Decode(r *xdr.Reader) error {
	m.MonID.Decode(r)
	copy(m.Priv[:], r.FixedOpaque(PrivSize))
	return r.Err()
}

// StatChange is struct stat_chge, the argument of NOTIFY.
type StatChange struct {
	MonName string
	State   int32
}

// Append encodes s.
func (s *StatChange) Append(b []byte) []byte {
	b = xdr.AppendString(b, s.MonName)
	return xdr.AppendInt32(b, s.State)
}

// Decode decodes s.
func (s *StatChange) Decode(r *xdr.Reader) error {
	s.MonName = r.String(SMMaxStrLen)
	s.State = r.Int32()
	return r.Err()
}

// Status is struct status, what the monitor sends to my_id's procedure
// when a monitored host rebooted.
type Status struct {
	MonName string
	State   int32
	Priv    [PrivSize]byte
}

// Append encodes s.
func (s *Status) Append(b []byte) []byte {
	b = xdr.AppendString(b, s.MonName)
	b = xdr.AppendInt32(b, s.State)
	return append(b, s.Priv[:]...)
}

// Decode decodes s.
func (s *Status) Decode(r *xdr.Reader) error {
	s.MonName = r.String(SMMaxStrLen)
	s.State = r.Int32()
	copy(s.Priv[:], r.FixedOpaque(PrivSize))
	return r.Err()
}

// Call sends one NSM call and returns a reader over its results (tests,
// the conformance suite).
func Call(ctx context.Context, c oncrpc.Caller, proc uint32, args []byte) (*xdr.Reader, error) {
	res, err := c.Call(ctx, &oncrpc.ClientCall{Prog: Prog, Vers: Vers1, Proc: proc, Args: args})
	if err != nil {
		return nil, err
	}
	return xdr.NewReader(res), nil
}

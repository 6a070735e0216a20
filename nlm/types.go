package nlm

import (
	"fmt"

	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Program number and versions (XNFS version 3W, chapter 10 "NLM
// protocol" for versions 1 and 3, chapter 14 "NLM version 4").
const (
	Prog  = 100021
	Vers1 = 1
	Vers3 = 3
	Vers4 = 4
)

// Procedures, the same numbers in every version (XNFS 10.14, 14.2);
// SHARE to FREE_ALL exist in versions 3 and 4 only. ProcNSMNotify is the
// Linux private callback from the local status monitor (nlm_reboot).
const (
	ProcNull       = 0
	ProcTest       = 1
	ProcLock       = 2
	ProcCancel     = 3
	ProcUnlock     = 4
	ProcGranted    = 5
	ProcTestMsg    = 6
	ProcLockMsg    = 7
	ProcCancelMsg  = 8
	ProcUnlockMsg  = 9
	ProcGrantedMsg = 10
	ProcTestRes    = 11
	ProcLockRes    = 12
	ProcCancelRes  = 13
	ProcUnlockRes  = 14
	ProcGrantedRes = 15
	ProcNSMNotify  = 16
	ProcShare      = 20
	ProcUnshare    = 21
	ProcNMLock     = 22
	ProcFreeAll    = 23
)

// Limits (XNFS 10.14: LM_MAXSTRLEN, MAXNETOBJ_SZ; 14.1: LM_MAXNAMELEN).
const (
	LMMaxStrLen  = 1024
	MaxNetObj    = 1024
	LMMaxNameLen = 1025
	SMPrivSize   = 16
	// NFS2FHSize is the file handle length of versions 1 and 3, whose
	// handles are NFSv2 ones (fhandle, RFC 1094 2.3.3).
	NFS2FHSize = 32
)

// Stat is nlm4_stats (XNFS 14.1); versions 1 and 3 use the first five
// values (nlm_stats, XNFS 10.14).
type Stat uint32

// nlm4_stats values.
const (
	Granted           Stat = 0 // NLM4_GRANTED
	Denied            Stat = 1 // NLM4_DENIED
	DeniedNoLocks     Stat = 2 // NLM4_DENIED_NOLOCKS
	Blocked           Stat = 3 // NLM4_BLOCKED
	DeniedGracePeriod Stat = 4 // NLM4_DENIED_GRACE_PERIOD
	Deadlock          Stat = 5 // NLM4_DEADLCK
	ROFS              Stat = 6 // NLM4_ROFS
	StaleFH           Stat = 7 // NLM4_STALE_FH
	FBig              Stat = 8 // NLM4_FBIG
	Failed            Stat = 9 // NLM4_FAILED
)

var statNames = [...]string{"GRANTED", "DENIED", "DENIED_NOLOCKS", "BLOCKED", "DENIED_GRACE_PERIOD", "DEADLCK", "ROFS", "STALE_FH", "FBIG", "FAILED"}

func (s Stat) String() string {
	if int(s) < len(statNames) {
		return "NLM4_" + statNames[s]
	}
	return fmt.Sprintf("nlm4_stats(%d)", uint32(s))
}

// StatusNames names every nlm4_stats value as String does, for the
// metrics (oncrpc.Program.Statuses): versions 1 and 3 count under the
// same names, their five values being version 4's first five.
func StatusNames() map[uint32]string {
	m := make(map[uint32]string, len(statNames))
	for v := range statNames {
		m[uint32(v)] = Stat(v).String()
	}
	return m
}

// Error makes a Stat usable as an error by the client helpers.
func (s Stat) Error() string { return "nlm: " + s.String() }

// ForVersion maps a version 4 status to what a version 1 or 3 client
// understands, as the Linux server does (cast_to_nlm): DEADLCK becomes
// DENIED, the other version 4 additions DENIED_NOLOCKS.
func (s Stat) ForVersion(vers uint32) Stat {
	if vers == Vers4 || s <= DeniedGracePeriod {
		return s
	}
	if s == Deadlock {
		return Denied
	}
	return DeniedNoLocks
}

// Lock is nlm4_lock (XNFS 14.1), or nlm_lock (10.14) with 32-bit
// offset and length in versions 1 and 3. Length 0 means to end of file.
type Lock struct {
	CallerName string
	FH         []byte
	OH         []byte
	SVID       int32
	Offset     uint64
	Length     uint64
}

func appendOff(b []byte, v uint64, vers uint32) []byte {
	if vers == Vers4 {
		return xdr.AppendUint64(b, v)
	}
	return xdr.AppendUint32(b, uint32(v))
}

func readOff(r *xdr.Reader, vers uint32) uint64 {
	if vers == Vers4 {
		return r.Uint64()
	}
	return uint64(r.Uint32())
}

// Append encodes l for version vers.
func (l *Lock) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendString(b, l.CallerName)
	b = xdr.AppendOpaque(b, l.FH)
	b = xdr.AppendOpaque(b, l.OH)
	b = xdr.AppendInt32(b, l.SVID)
	b = appendOff(b, l.Offset, vers)
	return appendOff(b, l.Length, vers)
}

// Decode decodes l for version vers; FH and OH alias the input.
func (l *Lock) Decode(r *xdr.Reader, vers uint32) error {
	l.CallerName = r.String(LMMaxStrLen)
	l.FH = r.Opaque(MaxNetObj)
	l.OH = r.Opaque(MaxNetObj)
	l.SVID = r.Int32()
	l.Offset = readOff(r, vers)
	l.Length = readOff(r, vers)
	return r.Err()
}

// LockArgs is nlm4_lockargs (XNFS 14.1).
type LockArgs struct {
	Cookie    []byte
	Block     bool
	Exclusive bool
	Lock      Lock
	Reclaim   bool
	State     int32
}

// Append encodes a for version vers.
func (a *LockArgs) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendOpaque(b, a.Cookie)
	b = xdr.AppendBool(b, a.Block)
	b = xdr.AppendBool(b, a.Exclusive)
	b = a.Lock.Append(b, vers)
	b = xdr.AppendBool(b, a.Reclaim)
	return xdr.AppendInt32(b, a.State)
}

// Decode decodes a for version vers; byte slices alias the input.
func (a *LockArgs) Decode(r *xdr.Reader, vers uint32) error {
	a.Cookie = r.Opaque(MaxNetObj)
	a.Block = r.Bool()
	a.Exclusive = r.Bool()
	a.Lock.Decode(r, vers)
	a.Reclaim = r.Bool()
	a.State = r.Int32()
	return r.Err()
}

// CancelArgs is nlm4_cancargs (XNFS 14.1).
type CancelArgs struct {
	Cookie    []byte
	Block     bool
	Exclusive bool
	Lock      Lock
}

// Append encodes a for version vers.
func (a *CancelArgs) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendOpaque(b, a.Cookie)
	b = xdr.AppendBool(b, a.Block)
	b = xdr.AppendBool(b, a.Exclusive)
	return a.Lock.Append(b, vers)
}

// Decode decodes a for version vers; byte slices alias the input.
func (a *CancelArgs) Decode(r *xdr.Reader, vers uint32) error {
	a.Cookie = r.Opaque(MaxNetObj)
	a.Block = r.Bool()
	a.Exclusive = r.Bool()
	return a.Lock.Decode(r, vers)
}

// TestArgs is nlm4_testargs (XNFS 14.1), also the argument of GRANTED.
type TestArgs struct {
	Cookie    []byte
	Exclusive bool
	Lock      Lock
}

// Append encodes a for version vers.
func (a *TestArgs) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendOpaque(b, a.Cookie)
	b = xdr.AppendBool(b, a.Exclusive)
	return a.Lock.Append(b, vers)
}

// Decode decodes a for version vers; byte slices alias the input.
func (a *TestArgs) Decode(r *xdr.Reader, vers uint32) error {
	a.Cookie = r.Opaque(MaxNetObj)
	a.Exclusive = r.Bool()
	return a.Lock.Decode(r, vers)
}

// UnlockArgs is nlm4_unlockargs (XNFS 14.1).
type UnlockArgs struct {
	Cookie []byte
	Lock   Lock
}

// Append encodes a for version vers.
func (a *UnlockArgs) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendOpaque(b, a.Cookie)
	return a.Lock.Append(b, vers)
}

// Decode decodes a for version vers; byte slices alias the input.
func (a *UnlockArgs) Decode(r *xdr.Reader, vers uint32) error {
	a.Cookie = r.Opaque(MaxNetObj)
	return a.Lock.Decode(r, vers)
}

// Holder is nlm4_holder (XNFS 14.1): the lock that made a TEST fail.
type Holder struct {
	Exclusive bool
	SVID      int32
	OH        []byte
	Offset    uint64
	Length    uint64
}

// Res is nlm4_res (XNFS 14.1): the result of LOCK, CANCEL, UNLOCK and
// GRANTED, and the argument of their _RES procedures.
type Res struct {
	Cookie []byte
	Stat   Stat
}

// Append encodes r.
func (r *Res) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, r.Cookie)
	return xdr.AppendUint32(b, uint32(r.Stat))
}

// Decode decodes r; Cookie aliases the input.
func (r *Res) Decode(x *xdr.Reader) error {
	r.Cookie = x.Opaque(MaxNetObj)
	r.Stat = Stat(x.Uint32())
	return x.Err()
}

// TestRes is nlm4_testres (XNFS 14.1): the holder is present when Stat
// is Denied.
type TestRes struct {
	Cookie []byte
	Stat   Stat
	Holder Holder
}

// Append encodes r for version vers.
func (r *TestRes) Append(b []byte, vers uint32) []byte {
	b = xdr.AppendOpaque(b, r.Cookie)
	b = xdr.AppendUint32(b, uint32(r.Stat))
	if r.Stat != Denied {
		return b
	}
	h := &r.Holder
	b = xdr.AppendBool(b, h.Exclusive)
	b = xdr.AppendInt32(b, h.SVID)
	b = xdr.AppendOpaque(b, h.OH)
	b = appendOff(b, h.Offset, vers)
	return appendOff(b, h.Length, vers)
}

// Decode decodes r for version vers; byte slices alias the input.
func (r *TestRes) Decode(x *xdr.Reader, vers uint32) error {
	r.Cookie = x.Opaque(MaxNetObj)
	r.Stat = Stat(x.Uint32())
	if x.Err() != nil || r.Stat != Denied {
		return x.Err()
	}
	h := &r.Holder
	h.Exclusive = x.Bool()
	h.SVID = x.Int32()
	h.OH = x.Opaque(MaxNetObj)
	h.Offset = readOff(x, vers)
	h.Length = readOff(x, vers)
	return x.Err()
}

// Share modes and access (fsh4_mode, fsh4_access, XNFS 14.1).
const (
	ShareDenyNone      = 0 // fsm_DN
	ShareDenyRead      = 1 // fsm_DR
	ShareDenyWrite     = 2 // fsm_DW
	ShareDenyReadWrite = 3 // fsm_DRW
	AccessNone         = 0 // fsa_NONE
	AccessRead         = 1 // fsa_R
	AccessWrite        = 2 // fsa_W
	AccessReadWrite    = 3 // fsa_RW
)

// Share is nlm4_share (XNFS 14.1).
type Share struct {
	CallerName string
	FH         []byte
	OH         []byte
	Mode       uint32
	Access     uint32
}

// ShareArgs is nlm4_shareargs (XNFS 14.1).
type ShareArgs struct {
	Cookie  []byte
	Share   Share
	Reclaim bool
}

// Append encodes a.
func (a *ShareArgs) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, a.Cookie)
	b = xdr.AppendString(b, a.Share.CallerName)
	b = xdr.AppendOpaque(b, a.Share.FH)
	b = xdr.AppendOpaque(b, a.Share.OH)
	b = xdr.AppendUint32(b, a.Share.Mode)
	b = xdr.AppendUint32(b, a.Share.Access)
	return xdr.AppendBool(b, a.Reclaim)
}

// Decode decodes a; byte slices alias the input. A mode or access out
// of its enum is an error.
func (a *ShareArgs) Decode(r *xdr.Reader) error {
	a.Cookie = r.Opaque(MaxNetObj)
	a.Share.CallerName = r.String(LMMaxStrLen)
	a.Share.FH = r.Opaque(MaxNetObj)
	a.Share.OH = r.Opaque(MaxNetObj)
	a.Share.Mode = r.Uint32()
	a.Share.Access = r.Uint32()
	a.Reclaim = r.Bool()
	if r.Err() == nil && (a.Share.Mode > ShareDenyReadWrite || a.Share.Access > AccessReadWrite) {
		r.SetErr(fmt.Errorf("nlm: share mode %d access %d out of range", a.Share.Mode, a.Share.Access))
	}
	return r.Err()
}

// ShareRes is nlm4_shareres (XNFS 14.1).
type ShareRes struct {
	Cookie   []byte
	Stat     Stat
	Sequence int32
}

// Append encodes r.
func (r *ShareRes) Append(b []byte) []byte {
	b = xdr.AppendOpaque(b, r.Cookie)
	b = xdr.AppendUint32(b, uint32(r.Stat))
	return xdr.AppendInt32(b, r.Sequence)
}

// Decode decodes r; Cookie aliases the input.
func (r *ShareRes) Decode(x *xdr.Reader) error {
	r.Cookie = x.Opaque(MaxNetObj)
	r.Stat = Stat(x.Uint32())
	r.Sequence = x.Int32()
	return x.Err()
}

// Notify is nlm4_notify (XNFS 14.1), the argument of FREE_ALL.
type Notify struct {
	Name  string
	State int32
}

// Append encodes n.
func (n *Notify) Append(b []byte) []byte {
	b = xdr.AppendString(b, n.Name)
	return xdr.AppendInt32(b, n.State)
}

// Decode decodes n.
func (n *Notify) Decode(r *xdr.Reader) error {
	n.Name = r.String(LMMaxNameLen)
	n.State = r.Int32()
	return r.Err()
}

// Reboot is struct nlm_reboot, what the local status monitor sends to
// procedure 16 when a monitored host rebooted (Linux lockd's
// NLMPROC_NSM_NOTIFY; the layout of NSM's status, XNFS 11.3).
type Reboot struct {
	MonName string
	State   int32
	Priv    [SMPrivSize]byte
}

// Append encodes n.
func (n *Reboot) Append(b []byte) []byte {
	b = xdr.AppendString(b, n.MonName)
	b = xdr.AppendInt32(b, n.State)
	return append(b, n.Priv[:]...)
}

// Decode decodes n.
func (n *Reboot) Decode(r *xdr.Reader) error {
	n.MonName = r.String(LMMaxStrLen)
	n.State = r.Int32()
	copy(n.Priv[:], r.FixedOpaque(SMPrivSize))
	return r.Err()
}

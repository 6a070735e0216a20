package conformance

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Lock manager tests, XNFS Version 3W chapter 14 (NLM version 4) and 10
// (versions 1 and 3), with the Linux server's behaviour where the
// specification leaves room.

// lockOwner is one lock owner: a client (caller_name) and a process
// (svid) with its owner handle.
type lockOwner struct {
	name string
	svid int32
	oh   []byte
}

// lockSession is a test's NLM connection, scratch file and owners.
type lockSession struct {
	e       *Env
	rpc     *oncrpc.Client
	fh      []byte
	a, b, c lockOwner
	names   map[string]bool
	seq     uint32
}

func (e *Env) owner(tag string, svid int32) lockOwner {
	return lockOwner{name: "cf-" + e.DirName + "-" + tag, svid: svid, oh: []byte(tag + "/" + strconv.Itoa(int(svid)))}
}

// lockTest runs body with a session: an NLM v4 TCP connection, a fresh
// file and owners a, b and c of three different client names and svids
// (1, 11, 21): the suite runs from one host, and knfsd tells the lock
// owners of one client address apart by svid only (fs/lockd keys hosts by
// address, not caller_name). At the end every client name used is sent
// FREE_ALL, so no test leaves locks.
func lockTest(body func(s *lockSession) error) func(*Env) error {
	return func(e *Env) error {
		c, err := e.nlmClient("tcp")
		if err != nil {
			return err
		}
		defer c.Close()
		fh, err := e.file(e.Dir, "locked", pattern(4096, 1))
		if err != nil {
			return err
		}
		s := &lockSession{e: e, rpc: c, fh: fh, a: e.owner("a", 1), b: e.owner("b", 11), c: e.owner("c", 21), names: map[string]bool{}}
		defer func() {
			for n := range s.names {
				nlm.CallFreeAll(e.Ctx, c, nlm.Vers4, &nlm.Notify{Name: n})
			}
		}()
		return body(s)
	}
}

// lockCallbackTest is lockTest for a body that takes the server's
// callbacks (GRANTED_MSG, the _RES of the _MSG procedures, SM_NOTIFY)
// through the suite's callback peer p.
func lockCallbackTest(body func(s *lockSession, p *callbackPeer) error) func(*Env) error {
	return lockTest(func(s *lockSession) error {
		p, err := s.e.callbacks()
		if err != nil {
			return err
		}
		return body(s, p)
	})
}

func (s *lockSession) cookie() []byte {
	s.seq++
	return binary.BigEndian.AppendUint32([]byte("cf"), s.seq)
}

func (s *lockSession) nlmLock(o lockOwner, fh []byte, off, n uint64) nlm.Lock {
	s.names[o.name] = true
	return nlm.Lock{CallerName: o.name, FH: fh, OH: o.oh, SVID: o.svid, Offset: off, Length: n}
}

// lockArgs builds LOCK arguments on the session file.
func (s *lockSession) lockArgs(o lockOwner, excl bool, off, n uint64) nlm.LockArgs {
	return nlm.LockArgs{Cookie: s.cookie(), Exclusive: excl, Lock: s.nlmLock(o, s.fh, off, n), State: 1}
}

func (s *lockSession) lockWith(c oncrpc.Caller, a nlm.LockArgs) (nlm.Stat, error) {
	res, err := nlm.CallLock(s.e.Ctx, c, nlm.Vers4, nlm.ProcLock, &a)
	if err != nil {
		return 0, fmt.Errorf("LOCK: %w", err)
	}
	if !bytes.Equal(res.Cookie, a.Cookie) {
		return 0, fmt.Errorf("LOCK reply cookie %x, sent %x (XNFS 14.1: the cookie is returned)", res.Cookie, a.Cookie)
	}
	return res.Stat, nil
}

// queueBBehindA has a lock the whole file, b's blocking LOCK of it wait
// and a unlock, so that the server owes b a GRANTED.
func (s *lockSession) queueBBehindA() error {
	return steps(
		s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK"),
		s.expectBlockLock(s.b, true, 0, 0, nlm.Blocked, "b's blocking LOCK"),
		s.expectUnlock(s.a, 0, 0, "a's UNLOCK"),
	)
}

func (s *lockSession) lock(o lockOwner, excl bool, off, n uint64) (nlm.Stat, error) {
	return s.lockWith(s.rpc, s.lockArgs(o, excl, off, n))
}

func (s *lockSession) blockLock(o lockOwner, excl bool, off, n uint64) (nlm.Stat, error) {
	a := s.lockArgs(o, excl, off, n)
	a.Block = true
	return s.lockWith(s.rpc, a)
}

func (s *lockSession) test(o lockOwner, excl bool, off, n uint64) (nlm.TestRes, error) {
	a := nlm.TestArgs{Cookie: s.cookie(), Exclusive: excl, Lock: s.nlmLock(o, s.fh, off, n)}
	res, err := nlm.CallTest(s.e.Ctx, s.rpc, nlm.Vers4, &a)
	if err != nil {
		return res, fmt.Errorf("TEST: %w", err)
	}
	if !bytes.Equal(res.Cookie, a.Cookie) {
		return res, fmt.Errorf("TEST reply cookie %x, sent %x", res.Cookie, a.Cookie)
	}
	return res, nil
}

func (s *lockSession) unlock(o lockOwner, off, n uint64) (nlm.Stat, error) {
	a := nlm.UnlockArgs{Cookie: s.cookie(), Lock: s.nlmLock(o, s.fh, off, n)}
	res, err := nlm.CallUnlock(s.e.Ctx, s.rpc, nlm.Vers4, &a)
	if err != nil {
		return 0, fmt.Errorf("UNLOCK: %w", err)
	}
	return res.Stat, nil
}

func (s *lockSession) cancel(o lockOwner, excl bool, off, n uint64) (nlm.Stat, error) {
	a := nlm.CancelArgs{Cookie: s.cookie(), Block: true, Exclusive: excl, Lock: s.nlmLock(o, s.fh, off, n)}
	res, err := nlm.CallCancel(s.e.Ctx, s.rpc, nlm.Vers4, &a)
	if err != nil {
		return 0, fmt.Errorf("CANCEL: %w", err)
	}
	return res.Stat, nil
}

func wantNLM(st nlm.Stat, err error, want nlm.Stat, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if st != want {
		return fmt.Errorf("%s: %v, want %v", what, st, want)
	}
	return nil
}

// steps runs checks in order and returns the first failure.
func steps(errs ...func() error) error {
	for _, f := range errs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (s *lockSession) expectLock(o lockOwner, excl bool, off, n uint64, want nlm.Stat, what string) func() error {
	return func() error {
		st, err := s.lock(o, excl, off, n)
		return wantNLM(st, err, want, what)
	}
}

// expectBlockLock is expectLock for a blocking LOCK (block=true).
func (s *lockSession) expectBlockLock(o lockOwner, excl bool, off, n uint64, want nlm.Stat, what string) func() error {
	return func() error {
		st, err := s.blockLock(o, excl, off, n)
		return wantNLM(st, err, want, what)
	}
}

func (s *lockSession) expectUnlock(o lockOwner, off, n uint64, what string) func() error {
	return func() error {
		st, err := s.unlock(o, off, n)
		return wantNLM(st, err, nlm.Granted, what)
	}
}

// expectTest checks TEST: want Granted, or Denied with the holder's
// exclusive flag, svid, offset and length.
func (s *lockSession) expectTest(o lockOwner, excl bool, off, n uint64, want nlm.Stat, holder *nlm.Holder, what string) func() error {
	return func() error {
		res, err := s.test(o, excl, off, n)
		if err := wantNLM(res.Stat, err, want, what); err != nil {
			return err
		}
		if holder == nil {
			return nil
		}
		h := res.Holder
		if h.Exclusive != holder.Exclusive || h.SVID != holder.SVID || h.Offset != holder.Offset || h.Length != holder.Length {
			return fmt.Errorf("%s: holder exclusive=%v svid=%d offset=%d len=%d, want exclusive=%v svid=%d offset=%d len=%d",
				what, h.Exclusive, h.SVID, h.Offset, h.Length, holder.Exclusive, holder.SVID, holder.Offset, holder.Length)
		}
		return nil
	}
}

func testNLMNull(e *Env) error {
	c, err := e.nlmClient("tcp")
	if err != nil {
		return err
	}
	defer c.Close()
	for _, v := range []uint32{nlm.Vers1, nlm.Vers3, nlm.Vers4} {
		if err := nlm.Null(e.Ctx, c, v); err != nil {
			return fmt.Errorf("NLM version %d NULL: %w", v, err)
		}
	}
	return nil
}

func testNLMTestUnlocked(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return s.expectTest(s.a, true, 0, 0, nlm.Granted, nil, "TEST of an unlocked file")()
	})(e)
}

func testNLMLockUnlock(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 100, nlm.Granted, "LOCK"),
			s.expectTest(s.b, false, 50, 1, nlm.Denied, nil, "TEST by another client while locked"),
			s.expectUnlock(s.a, 0, 100, "UNLOCK"),
			s.expectTest(s.b, true, 0, 0, nlm.Granted, nil, "TEST after UNLOCK"),
		)
	})(e)
}

// conflictCase is one cell of the conflict matrix.
func conflictCase(firstExcl, secondExcl bool, want nlm.Stat) func(*Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, firstExcl, 10, 10, nlm.Granted, "first LOCK"),
			s.expectLock(s.b, secondExcl, 15, 10, want, "overlapping LOCK of another client"),
			s.expectLock(s.b, secondExcl, 20, 10, nlm.Granted, "adjacent LOCK of another client"),
		)
	})
}

func testNLMTestHolder(e *Env) error {
	return lockTest(func(s *lockSession) error {
		a := s.a
		a.svid = 4242
		return steps(
			s.expectLock(a, true, 100, 50, nlm.Granted, "LOCK [100, 150)"),
			s.expectTest(s.b, false, 0, 0, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 4242, Offset: 100, Length: 50}, "TEST of the whole file"),
		)
	})(e)
}

func testNLMTestHolderEOF(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, false, 1000, 0, nlm.Granted, "shared LOCK from 1000 to EOF"),
			s.expectTest(s.b, true, 1<<40, 1, nlm.Denied, &nlm.Holder{Exclusive: false, SVID: s.a.svid, Offset: 1000, Length: 0}, "TEST at 1 TiB"),
			s.expectTest(s.b, true, 0, 1000, nlm.Granted, nil, "TEST below the lock"),
		)
	})(e)
}

func testNLMSameOwner(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "LOCK"),
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "the same LOCK again by its owner"),
			s.expectLock(s.a, true, 5, 10, nlm.Granted, "an overlapping LOCK by the same owner"),
			s.expectTest(s.a, true, 0, 0, nlm.Granted, nil, "TEST by the owner itself"),
		)
	})(e)
}

func testNLMOwnerSVID(e *Env) error {
	return lockTest(func(s *lockSession) error {
		other := s.e.owner("a", 2) // same client, another process
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "LOCK by svid 1"),
			s.expectLock(other, true, 5, 1, nlm.Denied, "LOCK by svid 2 of the same client"),
			s.expectTest(other, false, 0, 0, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 0, Length: 10}, "TEST by svid 2"),
		)
	})(e)
}

func testNLMSplit(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 100, nlm.Granted, "LOCK [0, 100)"),
			s.expectUnlock(s.a, 40, 20, "UNLOCK [40, 60)"),
			s.expectTest(s.b, true, 40, 20, nlm.Granted, nil, "TEST of the hole"),
			s.expectTest(s.b, true, 0, 1, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 0, Length: 40}, "TEST of the left part"),
			s.expectTest(s.b, true, 99, 1, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 60, Length: 40}, "TEST of the right part"),
		)
	})(e)
}

func testNLMMerge(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "LOCK [0, 10)"),
			s.expectLock(s.a, true, 10, 10, nlm.Granted, "LOCK [10, 20)"),
			s.expectTest(s.b, true, 5, 10, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 0, Length: 20}, "TEST across both: one merged lock"),
			s.expectUnlock(s.a, 0, 20, "UNLOCK [0, 20)"),
			s.expectTest(s.b, true, 0, 0, nlm.Granted, nil, "TEST after unlocking the merged range"),
		)
	})(e)
}

func testNLMUpgrade(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, false, 0, 10, nlm.Granted, "shared LOCK"),
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "upgrade to exclusive"),
			s.expectTest(s.b, false, 0, 10, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 0, Length: 10}, "TEST shared after the upgrade"),
		)
	})(e)
}

func testNLMUpgradeDenied(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, false, 0, 10, nlm.Granted, "a's shared LOCK"),
			s.expectLock(s.b, false, 5, 10, nlm.Granted, "b's overlapping shared LOCK"),
			s.expectLock(s.a, true, 0, 10, nlm.Denied, "a's conflicting upgrade"),
			// a's shared lock is intact: c may share it but not take it.
			s.expectTest(s.c, false, 0, 5, nlm.Granted, nil, "TEST shared of a's range after the refused upgrade"),
			s.expectTest(s.c, true, 0, 5, nlm.Denied, &nlm.Holder{Exclusive: false, SVID: 1, Offset: 0, Length: 10}, "TEST exclusive of a's range"),
		)
	})(e)
}

func testNLMDowngrade(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "exclusive LOCK"),
			s.expectLock(s.a, false, 0, 10, nlm.Granted, "downgrade to shared"),
			s.expectLock(s.b, false, 0, 10, nlm.Granted, "another client's shared LOCK after the downgrade"),
		)
	})(e)
}

func testNLMPartialUpgrade(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, false, 0, 100, nlm.Granted, "shared LOCK [0, 100)"),
			s.expectLock(s.a, true, 50, 10, nlm.Granted, "exclusive LOCK [50, 60) inside it"),
			s.expectTest(s.b, false, 0, 10, nlm.Granted, nil, "TEST shared of the shared part"),
			s.expectTest(s.b, false, 55, 1, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 50, Length: 10}, "TEST shared of the exclusive part"),
			s.expectTest(s.b, true, 70, 1, nlm.Denied, &nlm.Holder{Exclusive: false, SVID: 1, Offset: 60, Length: 40}, "TEST exclusive of the shared tail"),
		)
	})(e)
}

func testNLMUnlockNotHeld(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectUnlock(s.a, 0, 0, "UNLOCK of a file with no locks"),
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK"),
			s.expectUnlock(s.b, 0, 0, "b's UNLOCK of a's range"),
			s.expectTest(s.c, true, 0, 10, nlm.Denied, nil, "a's lock after b's UNLOCK"),
		)
	})(e)
}

func testNLMLargeOffsets(e *Env) error {
	return lockTest(func(s *lockSession) error {
		const g4 = 1<<32 + 5
		return steps(
			s.expectLock(s.a, true, g4, 10, nlm.Granted, "LOCK above 4 GiB"),
			s.expectLock(s.a, true, 1<<62, 1, nlm.Granted, "LOCK at 2^62"),
			s.expectTest(s.b, true, g4+9, 1, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: g4, Length: 10}, "TEST above 4 GiB"),
			s.expectTest(s.b, true, 1<<62, 0, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: 1, Offset: 1 << 62, Length: 1}, "TEST at 2^62"),
			s.expectTest(s.b, true, 5, 1<<32, nlm.Granted, nil, "TEST of [5, 4 GiB + 5): a 32-bit offset would alias"),
		)
	})(e)
}

func testNLMFBig(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 1<<63, 1, nlm.FBig, "LOCK at offset 2^63"),
			s.expectLock(s.a, true, 1<<62, 1<<63, nlm.FBig, "LOCK whose last byte passes 2^63-1"),
			s.expectLock(s.a, true, 1<<63-1, 1, nlm.Granted, "LOCK of byte 2^63-1"),
		)
	})(e)
}

func testNLMCancelQueued(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK"),
			s.expectBlockLock(s.b, true, 0, 10, nlm.Blocked, "b's blocking LOCK"),
			func() error {
				st, err := s.cancel(s.b, true, 0, 10)
				return wantNLM(st, err, nlm.Granted, "b's CANCEL")
			},
			s.expectUnlock(s.a, 0, 0, "a's UNLOCK"),
			s.expectTest(s.c, true, 0, 0, nlm.Granted, nil, "TEST after the cancelled waiter's holder unlocked: b got nothing"),
		)
	})(e)
}

func testNLMCancelNothing(e *Env) error {
	return lockTest(func(s *lockSession) error {
		st, err := s.cancel(s.a, true, 0, 10)
		return wantNLM(st, err, nlm.Granted, "CANCEL with no queued request (as knfsd)")
	})(e)
}

func testNLMBlockFree(e *Env) error {
	return lockTest(func(s *lockSession) error {
		st, err := s.blockLock(s.a, true, 0, 10)
		return wantNLM(st, err, nlm.Granted, "blocking LOCK of a free range")
	})(e)
}

// grantedFor matches a GRANTED_MSG (or GRANTED) for owner o on fh.
func grantedFor(o lockOwner, fh []byte, off, n uint64) func(*event) bool {
	return func(ev *event) bool {
		if ev.Prog != nlm.Prog || (ev.Proc != nlm.ProcGrantedMsg && ev.Proc != nlm.ProcGranted) {
			return false
		}
		var a nlm.TestArgs
		if a.Decode(xdr.NewReader(ev.Args), ev.Vers) != nil {
			return false
		}
		return bytes.Equal(a.Lock.FH, fh) && a.Lock.SVID == o.svid && bytes.Equal(a.Lock.OH, o.oh) && a.Lock.Offset == off && a.Lock.Length == n
	}
}

func grantedCookie(ev event) []byte {
	var a nlm.TestArgs
	a.Decode(xdr.NewReader(ev.Args), ev.Vers)
	return a.Cookie
}

// answerGranted answers the grant callback ev with GRANTED_RES. The
// tolerant profile takes a grant by GRANTED_MSG or GRANTED; the strict one
// wants GRANTED_MSG, which gonfsrdma sends, as knfsd's lockd does.
func (s *lockSession) answerGranted(ev event, st nlm.Stat) error {
	proc := map[uint32]string{nlm.ProcGrantedMsg: "GRANTED_MSG", nlm.ProcGranted: "GRANTED"}[ev.Proc]
	if err := oneOf(s.e, "the callback granting a blocked lock", proc, "GRANTED_MSG", "GRANTED"); err != nil {
		return err
	}
	return nlm.CallGrantedRes(s.e.Ctx, s.rpc, nlm.Vers4, &nlm.Res{Cookie: grantedCookie(ev), Stat: st})
}

func testNLMBlockedGranted(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := steps(
			s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK"),
			s.expectBlockLock(s.b, true, 10, 5, nlm.Blocked, "b's blocking LOCK"),
		); err != nil {
			return err
		}
		if err := p.none(e.Ctx, 300*time.Millisecond, grantedFor(s.b, s.fh, 10, 5), "GRANTED while a holds the lock"); err != nil {
			return err
		}
		unlocked := time.Now()
		if err := s.expectUnlock(s.a, 0, 0, "a's UNLOCK")(); err != nil {
			return err
		}
		ev, err := p.await(e.Ctx, 10*time.Second, grantedFor(s.b, s.fh, 10, 5))
		if err != nil {
			return fmt.Errorf("GRANTED_MSG for b after a's UNLOCK: %w", err)
		}
		took := time.Since(unlocked)
		if err := s.answerGranted(ev, nlm.Granted); err != nil {
			return fmt.Errorf("GRANTED_RES: %w", err)
		}
		if err := s.expectTest(s.c, true, 0, 0, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: s.b.svid, Offset: 10, Length: 5}, "TEST after the grant: b holds it")(); err != nil {
			return err
		}
		if took > 5*time.Second {
			return Warnf("GRANTED_MSG came %v after the UNLOCK", took)
		}
		return nil
	})(e)
}

func testNLMBlockedOrder(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := steps(
			s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK"),
			s.expectBlockLock(s.b, true, 0, 0, nlm.Blocked, "b's blocking LOCK"),
			s.expectBlockLock(s.c, true, 0, 0, nlm.Blocked, "c's blocking LOCK"),
			s.expectUnlock(s.a, 0, 0, "a's UNLOCK"),
		); err != nil {
			return err
		}
		ev, err := p.await(e.Ctx, 10*time.Second, grantedFor(s.b, s.fh, 0, 0))
		if err != nil {
			return fmt.Errorf("GRANTED_MSG for b, the first waiter: %w", err)
		}
		s.answerGranted(ev, nlm.Granted)
		if err := p.none(e.Ctx, 300*time.Millisecond, grantedFor(s.c, s.fh, 0, 0), "GRANTED for c while b holds the lock"); err != nil {
			return err
		}
		if err := s.expectUnlock(s.b, 0, 0, "b's UNLOCK")(); err != nil {
			return err
		}
		ev, err = p.await(e.Ctx, 10*time.Second, grantedFor(s.c, s.fh, 0, 0))
		if err != nil {
			return fmt.Errorf("GRANTED_MSG for c after b's UNLOCK: %w", err)
		}
		return s.answerGranted(ev, nlm.Granted)
	})(e)
}

func testNLMGrantedRefused(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := s.queueBBehindA(); err != nil {
			return err
		}
		ev, err := p.await(e.Ctx, 10*time.Second, grantedFor(s.b, s.fh, 0, 0))
		if err != nil {
			return fmt.Errorf("GRANTED_MSG for b: %w", err)
		}
		if err := s.answerGranted(ev, nlm.Denied); err != nil {
			return err
		}
		// The client did not want it: the server gives the lock back.
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, err := s.test(s.c, true, 0, 0)
			if err != nil {
				return err
			}
			if res.Stat == nlm.Granted {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("b still holds the lock 5 s after GRANTED_RES said DENIED")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})(e)
}

func testNLMGrantedRetry(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := s.queueBBehindA(); err != nil {
			return err
		}
		if _, err := p.await(e.Ctx, 10*time.Second, grantedFor(s.b, s.fh, 0, 0)); err != nil {
			return fmt.Errorf("first GRANTED_MSG: %w", err)
		}
		// Not answered: the server sends it again.
		ev, err := p.await(e.Ctx, 25*time.Second, grantedFor(s.b, s.fh, 0, 0))
		if err != nil {
			return fmt.Errorf("GRANTED_MSG not resent when GRANTED_RES did not come: %w", err)
		}
		return s.answerGranted(ev, nlm.Granted)
	})(e)
}

func testNLMRepoll(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK"),
			s.expectBlockLock(s.b, true, 0, 0, nlm.Blocked, "b's blocking LOCK"),
			s.expectBlockLock(s.b, true, 0, 0, nlm.Blocked, "b's re-poll while a holds it"),
			s.expectUnlock(s.a, 0, 0, "a's UNLOCK"),
			s.expectBlockLock(s.b, true, 0, 0, nlm.Granted, "b's re-poll after a's UNLOCK (as the Linux client every 30 s)"),
		)
	})(e)
}

// resFor matches a _RES callback proc carrying cookie.
func resFor(proc uint32, cookie []byte) func(*event) bool {
	return func(ev *event) bool {
		if ev.Prog != nlm.Prog || ev.Proc != proc {
			return false
		}
		var c []byte
		r := xdr.NewReader(ev.Args)
		c = r.Opaque(nlm.MaxNetObj)
		return r.Err() == nil && bytes.Equal(c, cookie)
	}
}

func testNLMLockMsg(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		a := s.lockArgs(s.a, true, 0, 10)
		if err := nlm.CallMsg(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcLockMsg, a.Append(nil, nlm.Vers4)); err != nil {
			return fmt.Errorf("LOCK_MSG: %w", err)
		}
		ev, err := p.await(e.Ctx, 10*time.Second, resFor(nlm.ProcLockRes, a.Cookie))
		if err != nil {
			return fmt.Errorf("LOCK_RES: %w", err)
		}
		var res nlm.Res
		if err := res.Decode(xdr.NewReader(ev.Args)); err != nil || res.Stat != nlm.Granted {
			return fmt.Errorf("LOCK_RES %v %v, want NLM4_GRANTED", res.Stat, err)
		}
		u := nlm.UnlockArgs{Cookie: s.cookie(), Lock: a.Lock}
		if err := nlm.CallMsg(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcUnlockMsg, u.Append(nil, nlm.Vers4)); err != nil {
			return fmt.Errorf("UNLOCK_MSG: %w", err)
		}
		ev, err = p.await(e.Ctx, 10*time.Second, resFor(nlm.ProcUnlockRes, u.Cookie))
		if err != nil {
			return fmt.Errorf("UNLOCK_RES: %w", err)
		}
		if err := res.Decode(xdr.NewReader(ev.Args)); err != nil || res.Stat != nlm.Granted {
			return fmt.Errorf("UNLOCK_RES %v %v, want NLM4_GRANTED", res.Stat, err)
		}
		return s.expectTest(s.b, true, 0, 0, nlm.Granted, nil, "TEST after UNLOCK_MSG")()
	})(e)
}

func testNLMTestMsg(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := s.expectLock(s.a, true, 7, 3, nlm.Granted, "a's LOCK")(); err != nil {
			return err
		}
		a := nlm.TestArgs{Cookie: s.cookie(), Exclusive: false, Lock: s.nlmLock(s.b, s.fh, 0, 0)}
		if err := nlm.CallMsg(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcTestMsg, a.Append(nil, nlm.Vers4)); err != nil {
			return fmt.Errorf("TEST_MSG: %w", err)
		}
		ev, err := p.await(e.Ctx, 10*time.Second, resFor(nlm.ProcTestRes, a.Cookie))
		if err != nil {
			return fmt.Errorf("TEST_RES: %w", err)
		}
		// The whole argument is shown when it is not an nlm4_testres: a
		// holder cut short (a sender that reserves too little for its
		// two uint64s) is then visible in the report.
		var res nlm.TestRes
		if err := res.Decode(xdr.NewReader(ev.Args), nlm.Vers4); err != nil {
			return fmt.Errorf("TEST_RES argument (%d bytes: %x) is not an nlm4_testres: %w", len(ev.Args), ev.Args, err)
		}
		if res.Stat != nlm.Denied || res.Holder.Offset != 7 || res.Holder.Length != 3 || !res.Holder.Exclusive {
			return fmt.Errorf("TEST_RES %v holder %+v, want DENIED by [7, 10) exclusive", res.Stat, res.Holder)
		}
		c := nlm.CancelArgs{Cookie: s.cookie(), Exclusive: true, Lock: s.nlmLock(s.b, s.fh, 0, 0)}
		if err := nlm.CallMsg(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcCancelMsg, c.Append(nil, nlm.Vers4)); err != nil {
			return fmt.Errorf("CANCEL_MSG: %w", err)
		}
		if _, err := p.await(e.Ctx, 10*time.Second, resFor(nlm.ProcCancelRes, c.Cookie)); err != nil {
			return fmt.Errorf("CANCEL_RES: %w", err)
		}
		return nil
	})(e)
}

func (s *lockSession) share(o lockOwner, mode, access uint32, proc uint32) (nlm.Stat, error) {
	s.names[o.name] = true
	a := nlm.ShareArgs{Cookie: s.cookie(), Share: nlm.Share{CallerName: o.name, FH: s.fh, OH: o.oh, Mode: mode, Access: access}}
	res, err := nlm.CallShare(s.e.Ctx, s.rpc, nlm.Vers4, proc, &a)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(res.Cookie, a.Cookie) {
		return 0, fmt.Errorf("share reply cookie %x, sent %x", res.Cookie, a.Cookie)
	}
	return res.Stat, nil
}

func testNLMShare(e *Env) error {
	return lockTest(func(s *lockSession) error {
		sh := func(o lockOwner, mode, access uint32, want nlm.Stat, what string) func() error {
			return func() error { st, err := s.share(o, mode, access, nlm.ProcShare); return wantNLM(st, err, want, what) }
		}
		return steps(
			sh(s.a, nlm.ShareDenyWrite, nlm.AccessRead, nlm.Granted, "SHARE read, deny write"),
			sh(s.b, nlm.ShareDenyNone, nlm.AccessWrite, nlm.Denied, "another client's SHARE for writing"),
			sh(s.b, nlm.ShareDenyRead, nlm.AccessRead, nlm.Denied, "another client's SHARE denying the reader"),
			sh(s.b, nlm.ShareDenyNone, nlm.AccessRead, nlm.Granted, "another client's SHARE for reading"),
			sh(s.a, nlm.ShareDenyNone, nlm.AccessRead, nlm.Granted, "the first owner's SHARE again, now denying nothing"),
			func() error {
				st, err := s.share(s.a, 0, 0, nlm.ProcUnshare)
				return wantNLM(st, err, nlm.Granted, "UNSHARE")
			},
			func() error {
				st, err := s.share(s.b, 0, 0, nlm.ProcUnshare)
				return wantNLM(st, err, nlm.Granted, "UNSHARE")
			},
			sh(s.c, nlm.ShareDenyReadWrite, nlm.AccessReadWrite, nlm.Granted, "exclusive SHARE after both UNSHAREs"),
		)
	})(e)
}

func testNLMFreeAll(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK"),
			s.expectLock(s.e.owner("a", 7), false, 20, 10, nlm.Granted, "a's second process' LOCK"),
			s.expectLock(s.b, true, 40, 10, nlm.Granted, "b's LOCK"),
			func() error { return nlm.CallFreeAll(s.e.Ctx, s.rpc, nlm.Vers4, &nlm.Notify{Name: s.a.name, State: 3}) },
			s.expectLock(s.c, true, 0, 30, nlm.Granted, "LOCK of a's ranges after FREE_ALL(a)"),
			s.expectLock(s.c, true, 45, 1, nlm.Denied, "LOCK of b's range: FREE_ALL(a) left it"),
		)
	})(e)
}

func testNLMNMLock(e *Env) error {
	return lockTest(func(s *lockSession) error {
		a := s.lockArgs(s.a, true, 0, 10)
		res, err := nlm.CallLock(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcNMLock, &a)
		if err := wantNLM(res.Stat, err, nlm.Granted, "NM_LOCK"); err != nil {
			return err
		}
		b := s.lockArgs(s.b, true, 5, 1)
		res, err = nlm.CallLock(e.Ctx, s.rpc, nlm.Vers4, nlm.ProcNMLock, &b)
		return wantNLM(res.Stat, err, nlm.Denied, "conflicting NM_LOCK")
	})(e)
}

func testNLMStale(e *Env) error {
	return lockTest(func(s *lockSession) error {
		fh, err := e.stale()
		if err != nil {
			return err
		}
		a := s.lockArgs(s.a, true, 0, 0)
		a.Lock.FH = fh
		st, err := s.lockWith(s.rpc, a)
		if err := wantNLM(st, err, nlm.StaleFH, "LOCK of a removed file"); err != nil {
			return err
		}
		ta := nlm.TestArgs{Cookie: s.cookie(), Lock: a.Lock}
		res, err := nlm.CallTest(e.Ctx, s.rpc, nlm.Vers4, &ta)
		return wantNLM(res.Stat, err, nlm.StaleFH, "TEST of a removed file")
	})(e)
}

func testNLMBadHandle(e *Env) error {
	return lockTest(func(s *lockSession) error {
		a := s.lockArgs(s.a, true, 0, 0)
		a.Lock.FH = badHandle()
		st, err := s.lockWith(s.rpc, a)
		return wantNLM(st, err, nlm.Failed, "LOCK with a malformed handle (knfsd: NLM4_FAILED)")
	})(e)
}

func testNLMReadOnly(e *Env) error {
	return lockTest(func(s *lockSession) error {
		res, err := e.C.Lookup(e.Ctx, e.RORoot, "file")
		if err != nil {
			return fmt.Errorf("LOOKUP file in the read-only export: %w", err)
		}
		s.fh = res.FH
		return steps(
			s.expectLock(s.a, false, 0, 10, nlm.Granted, "shared LOCK on a read-only export"),
			s.expectLock(s.b, true, 20, 10, nlm.ROFS, "exclusive LOCK on a read-only export"),
			s.expectUnlock(s.a, 0, 0, "UNLOCK"),
		)
	})(e)
}

func testNLMGarbage(e *Env) error {
	c, err := e.nlmClient("tcp")
	if err != nil {
		return err
	}
	defer c.Close()
	full := (&nlm.LockArgs{Cookie: []byte{1}, Lock: nlm.Lock{CallerName: "x", FH: []byte{1}, OH: []byte{1}}}).Append(nil, nlm.Vers4)
	for _, args := range [][]byte{full[:len(full)-4], full[:9], {0xff, 0xff, 0xff, 0xff}} {
		_, err := c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nlm.Prog, Vers: nlm.Vers4, Proc: nlm.ProcLock, Args: args})
		if err := acceptStat(err, oncrpc.GarbageArgs, "LOCK with truncated arguments"); err != nil {
			return err
		}
	}
	share := (&nlm.ShareArgs{Share: nlm.Share{CallerName: "x", FH: []byte{1}, Mode: 1}}).Append(nil)
	binary.BigEndian.PutUint32(share[len(share)-12:], 7) // fsh4_mode 7
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nlm.Prog, Vers: nlm.Vers4, Proc: nlm.ProcShare, Args: share})
	if err := acceptStat(err, oncrpc.GarbageArgs, "SHARE with fsh4_mode 7"); err != nil {
		return err
	}
	return nlm.Null(e.Ctx, c, nlm.Vers4)
}

func testNLMV3Handle(e *Env) error {
	c, err := e.nlmClient("tcp")
	if err != nil {
		return err
	}
	defer c.Close()
	a := nlm.TestArgs{Cookie: []byte{1}, Lock: nlm.Lock{CallerName: "cf-v3", FH: make([]byte, 40), OH: []byte{1}}}
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nlm.Prog, Vers: nlm.Vers3, Proc: nlm.ProcTest, Args: a.Append(nil, nlm.Vers3)})
	if err := acceptStat(err, oncrpc.GarbageArgs, "version 3 TEST with a 40-byte handle (knfsd: NFSv2 handles, 32 bytes)"); err != nil {
		return err
	}
	a.Lock.FH = bytes.Repeat([]byte{0xee}, nlm.NFS2FHSize)
	res, err := nlm.CallTest(e.Ctx, c, nlm.Vers3, &a)
	if err != nil {
		return fmt.Errorf("version 3 TEST with a 32-byte handle: %w", err)
	}
	if res.Stat != nlm.DeniedNoLocks {
		return fmt.Errorf("version 3 TEST of a handle naming no file: %v, want LCK_DENIED_NOLOCKS (knfsd's cast of a v4-only status)", res.Stat)
	}
	return nil
}

func testNLMProcUnavail(e *Env) error {
	c, err := e.nlmClient("tcp")
	if err != nil {
		return err
	}
	defer c.Close()
	for _, pv := range [][2]uint32{{nlm.Vers4, 17}, {nlm.Vers4, 24}, {nlm.Vers1, nlm.ProcShare}} {
		_, err := c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nlm.Prog, Vers: pv[0], Proc: pv[1]})
		if err := acceptStat(err, oncrpc.ProcUnavail, fmt.Sprintf("NLM version %d procedure %d", pv[0], pv[1])); err != nil {
			return err
		}
	}
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nlm.Prog, Vers: 2, Proc: 0})
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProgMismatch || ae.Low > 1 || ae.High < 4 {
		return fmt.Errorf("NLM version 2: %v, want PROG_MISMATCH with a range holding 1 and 4", err)
	}
	return nil
}

func testNLMUDP(e *Env) error {
	return lockTest(func(s *lockSession) error {
		u, err := e.nlmClient("udp")
		if err != nil {
			return err
		}
		defer u.Close()
		a := s.lockArgs(s.a, true, 0, 10)
		st, err := s.lockWith(u, a)
		if err := wantNLM(st, err, nlm.Granted, "LOCK over UDP"); err != nil {
			return err
		}
		return steps(
			s.expectLock(s.b, true, 5, 1, nlm.Denied, "LOCK over TCP against a lock taken over UDP"),
			func() error {
				res, err := nlm.CallUnlock(e.Ctx, u, nlm.Vers4, &nlm.UnlockArgs{Cookie: s.cookie(), Lock: a.Lock})
				return wantNLM(res.Stat, err, nlm.Granted, "UNLOCK over UDP")
			},
			s.expectLock(s.b, true, 5, 1, nlm.Granted, "LOCK over TCP after the UDP UNLOCK"),
		)
	})(e)
}

// testNLMDRC retransmits a LOCK (same XID, same arguments) after the
// lock changed hands: the duplicate request cache answers it, the LOCK
// does not run again.
// testNLMDRC: LOCK, UNLOCK and CANCEL change lock state, so a
// retransmission (same XID) after the state moved on must get the first
// answer from the duplicate request cache instead of running again: a
// re-run LOCK would take a lock another owner now holds, a re-run UNLOCK
// would drop the owner's new lock, a re-run CANCEL would cancel the
// owner's new blocked request.
func testNLMDRC(e *Env) error {
	return lockTest(func(s *lockSession) error {
		// raw calls one procedure with a fixed XID; send (re)transmits it.
		raw := func(proc uint32, args []byte) func() (nlm.Stat, error) {
			xid := s.rpc.NextXID() + 1000
			h := oncrpc.CallHeader{XID: xid, Prog: nlm.Prog, Vers: nlm.Vers4, Proc: proc, Cred: e.Cred}
			msg := append(oncrpc.AppendCallHeader(nil, &h), args...)
			return func() (nlm.Stat, error) {
				reply, err := s.rpc.RoundTrip(e.Ctx, xid, msg)
				if err != nil {
					return 0, err
				}
				body, err := oncrpc.ParseReply(reply)
				if err != nil {
					return 0, err
				}
				var res nlm.Res
				return res.Stat, res.Decode(xdr.NewReader(body))
			}
		}
		sent := func(send func() (nlm.Stat, error), want nlm.Stat, what string) func() error {
			return func() error { st, err := send(); return wantNLM(st, err, want, what) }
		}

		// LOCK: a's lock, released, taken by b; a's LOCK again.
		a := s.lockArgs(s.a, true, 0, 10)
		lock := raw(nlm.ProcLock, a.Append(nil, nlm.Vers4))
		// UNLOCK: a unlocks [20, 30), locks it again; the UNLOCK again.
		u := nlm.UnlockArgs{Cookie: s.cookie(), Lock: s.nlmLock(s.a, s.fh, 20, 10)}
		unlock := raw(nlm.ProcUnlock, u.Append(nil, nlm.Vers4))
		// CANCEL: c's blocked request behind a's [40, 50) cancelled, made
		// again; the CANCEL again; a unlocks: c's request must be granted.
		c := nlm.CancelArgs{Cookie: s.cookie(), Block: true, Exclusive: true, Lock: s.nlmLock(s.c, s.fh, 40, 10)}
		cancel := raw(nlm.ProcCancel, c.Append(nil, nlm.Vers4))
		blockC := func(what string) func() error {
			return s.expectBlockLock(s.c, true, 40, 10, nlm.Blocked, what)
		}
		return steps(
			sent(lock, nlm.Granted, "LOCK"),
			s.expectUnlock(s.a, 0, 10, "UNLOCK"),
			s.expectLock(s.b, true, 0, 10, nlm.Granted, "b's LOCK"),
			sent(lock, nlm.Granted, "the retransmitted LOCK (a cached GRANTED)"),
			s.expectTest(s.c, true, 0, 10, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: s.b.svid, Offset: 0, Length: 10}, "TEST: b holds the lock, the retransmitted LOCK did not run"),

			s.expectLock(s.a, true, 20, 10, nlm.Granted, "a's LOCK [20, 30)"),
			sent(unlock, nlm.Granted, "a's UNLOCK [20, 30)"),
			s.expectLock(s.a, true, 20, 10, nlm.Granted, "a's LOCK [20, 30) again"),
			sent(unlock, nlm.Granted, "the retransmitted UNLOCK (a cached GRANTED)"),
			s.expectTest(s.c, true, 20, 10, nlm.Denied, &nlm.Holder{Exclusive: true, SVID: s.a.svid, Offset: 20, Length: 10}, "TEST: a's new lock is there, the retransmitted UNLOCK did not run"),

			s.expectLock(s.a, true, 40, 10, nlm.Granted, "a's LOCK [40, 50)"),
			blockC("c's blocking LOCK [40, 50)"),
			sent(cancel, nlm.Granted, "CANCEL of c's request"),
			blockC("c's blocking LOCK [40, 50) again"),
			sent(cancel, nlm.Granted, "the retransmitted CANCEL (a cached GRANTED)"),
			s.expectUnlock(s.a, 40, 10, "a's UNLOCK [40, 50)"),
			func() error {
				// c's second request is still queued: a's unlock grants it
				// (the server holds it for c while its GRANTED goes out).
				deadline := time.Now().Add(5 * time.Second)
				for {
					res, err := s.test(s.b, true, 40, 10)
					if err != nil {
						return err
					}
					if res.Stat == nlm.Denied && res.Holder.Offset == 40 && res.Holder.Length == 10 && res.Holder.Exclusive {
						return nil
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("c's request not granted 5 s after a's UNLOCK (TEST: %v): the retransmitted CANCEL ran again", res.Stat)
					}
					time.Sleep(50 * time.Millisecond)
				}
			},
		)
	})(e)
}

func testNLMDeadlock(e *Env) error {
	return lockTest(func(s *lockSession) error {
		second, err := e.file(e.Dir, "second", nil)
		if err != nil {
			return err
		}
		onSecond := func(o lockOwner, block bool) (nlm.Stat, error) {
			a := nlm.LockArgs{Cookie: s.cookie(), Block: block, Exclusive: true, Lock: s.nlmLock(o, second, 0, 0), State: 1}
			return s.lockWith(s.rpc, a)
		}
		return steps(
			s.expectLock(s.a, true, 0, 0, nlm.Granted, "a's LOCK of the first file"),
			func() error {
				st, err := onSecond(s.b, false)
				return wantNLM(st, err, nlm.Granted, "b's LOCK of the second file")
			},
			func() error { st, err := onSecond(s.a, true); return wantNLM(st, err, nlm.Blocked, "a waits for b") },
			s.expectBlockLock(s.b, true, 0, 0, nlm.Deadlock, "b waiting for a would deadlock (knfsd: posix_locks_deadlock)"),
			func() error { st, err := s.cancel(s.a, true, 0, 0); return wantNLM(st, err, nlm.Granted, "CANCEL") },
		)
	})(e)
}

func testNLMPermission(e *Env) error {
	return lockTest(func(s *lockSession) error {
		if _, err := e.C.Setattr(e.Ctx, s.fh, mode(0o644), nil); err != nil {
			return fmt.Errorf("SETATTR mode 0644: %w", err)
		}
		other := e.Cfg.UID + 1
		c, err := e.nlmClient("tcp")
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetCred(oncrpc.NewAuthSys("conformance", other, other))
		as := func(excl bool) (nlm.Stat, error) {
			return s.lockWith(c, s.lockArgs(s.b, excl, 0, 10))
		}
		return steps(
			func() error {
				st, err := as(true)
				return wantNLM(st, err, nlm.Failed, "exclusive LOCK by a uid without write permission (knfsd opens the file for writing: NLM4_FAILED)")
			},
			func() error {
				st, err := as(false)
				return wantNLM(st, err, nlm.Granted, "shared LOCK by a uid with read permission")
			},
		)
	})(e)
}

// nlmTests is the NLM part of the table.
func nlmTests() []Test {
	const x = "XNFS 3W 14.2"
	return []Test{
		t("NLM1", "NLMNull", "nlm lock", "", "NLM NULL of versions 1, 3 and 4 ("+x+")", testNLMNull),
		t("NLM2", "NLMTestUnlocked", "nlm lock", "NLM1", "TEST of an unlocked file is NLM4_GRANTED ("+x+")", testNLMTestUnlocked),
		t("NLM3", "NLMLockUnlock", "nlm lock", "NLM1", "LOCK, TEST by another client DENIED, UNLOCK, TEST GRANTED ("+x+")", testNLMLockUnlock),
		t("NLM4", "NLMExclExcl", "nlm lock conflict", "NLM3", "exclusive vs exclusive overlapping is DENIED, adjacent GRANTED ("+x+")", conflictCase(true, true, nlm.Denied)),
		t("NLM5", "NLMSharedShared", "nlm lock conflict", "NLM3", "shared vs shared overlapping is GRANTED ("+x+")", conflictCase(false, false, nlm.Granted)),
		t("NLM6", "NLMSharedExcl", "nlm lock conflict", "NLM3", "exclusive over another client's shared lock is DENIED ("+x+")", conflictCase(false, true, nlm.Denied)),
		t("NLM7", "NLMExclShared", "nlm lock conflict", "NLM3", "shared over another client's exclusive lock is DENIED ("+x+")", conflictCase(true, false, nlm.Denied)),
		t("NLM8", "NLMTestHolder", "nlm lock", "NLM3", "TEST reports the holder's type, svid, offset and length ("+x+", nlm4_holder)", testNLMTestHolder),
		t("NLM9", "NLMTestHolderEOF", "nlm lock range", "NLM3", "a lock of length 0 runs to end of file and is reported with length 0 ("+x+")", testNLMTestHolderEOF),
		t("NLM10", "NLMSameOwner", "nlm lock", "NLM3", "an owner's locks never conflict with each other ("+x+")", testNLMSameOwner),
		t("NLM11", "NLMOwnerSVID", "nlm lock conflict", "NLM3", "two svids of one client are two owners ("+x+", nlm4_lock.svid)", testNLMOwnerSVID),
		t("NLM12", "NLMSplit", "nlm lock range", "NLM3", "UNLOCK in the middle splits a lock in two ("+x+")", testNLMSplit),
		t("NLM13", "NLMMerge", "nlm lock range", "NLM3", "adjacent locks of one owner merge into one, as POSIX ("+x+")", testNLMMerge),
		t("NLM14", "NLMUpgrade", "nlm lock convert", "NLM3", "shared to exclusive conversion by LOCK ("+x+")", testNLMUpgrade),
		t("NLM15", "NLMUpgradeDenied", "nlm lock convert", "NLM3", "a conflicting upgrade is DENIED and leaves the shared lock as it was ("+x+")", testNLMUpgradeDenied),
		t("NLM16", "NLMDowngrade", "nlm lock convert", "NLM3", "exclusive to shared conversion lets others share ("+x+")", testNLMDowngrade),
		t("NLM17", "NLMPartialUpgrade", "nlm lock convert range", "NLM3", "an exclusive lock inside a shared one splits it in three ("+x+")", testNLMPartialUpgrade),
		t("NLM18", "NLMUnlockNotHeld", "nlm lock", "NLM3", "UNLOCK of nothing held is GRANTED and releases no one else's lock ("+x+")", testNLMUnlockNotHeld),
		t("NLM19", "NLMLargeOffsets", "nlm lock range", "NLM3", "64-bit offsets above 4 GiB and at 2^62 are kept exactly ("+x+", uint64 l_offset)", testNLMLargeOffsets),
		t("NLM20", "NLMFBig", "nlm lock range", "NLM3", "an offset or last byte past 2^63-1 is NLM4_FBIG, as knfsd ("+x+")", testNLMFBig),
		t("NLM21", "NLMCancelQueued", "nlm lock block", "NLM3", "CANCEL removes a blocked request: it is never granted ("+x+")", testNLMCancelQueued),
		t("NLM22", "NLMCancelNothing", "nlm lock block", "NLM3", "CANCEL with nothing queued is NLM4_GRANTED, as knfsd ("+x+")", testNLMCancelNothing),
		t("NLM23", "NLMBlockFree", "nlm lock block", "NLM3", "a blocking LOCK of a free range is GRANTED at once ("+x+")", testNLMBlockFree),
		t("NLM24", "NLMBlockedGranted", "nlm lock block callback", "NLM3", "a blocked LOCK is BLOCKED, then granted by GRANTED_MSG when the holder unlocks ("+x+")", testNLMBlockedGranted),
		t("NLM25", "NLMBlockedOrder", "nlm lock block callback", "NLM21", "blocked requests are granted in arrival order ("+x+")", testNLMBlockedOrder),
		t("NLM26", "NLMGrantedRefused", "nlm lock block callback", "NLM21", "GRANTED_RES other than GRANTED gives the lock back ("+x+")", testNLMGrantedRefused),
		t("NLM27", "NLMGrantedRetry", "nlm lock block callback", "NLM21", "an unanswered GRANTED_MSG is sent again ("+x+")", testNLMGrantedRetry),
		t("NLM28", "NLMRepoll", "nlm lock block", "NLM3", "a re-sent blocking LOCK is BLOCKED while held and GRANTED once free ("+x+")", testNLMRepoll),
		t("NLM29", "NLMLockMsg", "nlm lock msg callback", "NLM3", "LOCK_MSG and UNLOCK_MSG answer through LOCK_RES and UNLOCK_RES with the cookie ("+x+")", testNLMLockMsg),
		t("NLM30", "NLMTestMsg", "nlm lock msg callback", "NLM3", "TEST_MSG answers through TEST_RES with the holder; CANCEL_MSG through CANCEL_RES ("+x+")", testNLMTestMsg),
		t("NLM31", "NLMShare", "nlm share", "NLM1", "SHARE honours deny modes of other owners; UNSHARE releases ("+x+", nlm4_share)", testNLMShare),
		t("NLM32", "NLMFreeAll", "nlm lock", "NLM3", "FREE_ALL releases every lock of the named client and only those ("+x+")", testNLMFreeAll),
		t("NLM33", "NLMNMLock", "nlm lock", "NLM3", "NM_LOCK locks as LOCK without monitoring ("+x+")", testNLMNMLock),
		t("NLM34", "NLMStale", "nlm lock", "NLM1", "LOCK and TEST of a removed file are NLM4_STALE_FH ("+x+")", testNLMStale),
		t("NLM35", "NLMBadHandle", "nlm lock", "NLM1", "a malformed handle is NLM4_FAILED, as knfsd ("+x+")", testNLMBadHandle),
		t("NLM36", "NLMReadOnly", "nlm lock rofs", "NLM3", "on a read-only export shared locks work, exclusive ones are NLM4_ROFS ("+x+")", testNLMReadOnly),
		t("NLM37", "NLMGarbage", "nlm", "NLM1", "truncated arguments and an fsh4_mode out of range are GARBAGE_ARGS (RFC 5531 9, "+x+")", testNLMGarbage),
		t("NLM38", "NLMV3Handle", "nlm", "NLM1", "version 3 takes 32-byte handles only and casts version 4 statuses, as knfsd (XNFS 3W 10.14)", testNLMV3Handle),
		t("NLM39", "NLMProcUnavail", "nlm", "NLM1", "unknown procedures are PROC_UNAVAIL, version 2 PROG_MISMATCH 1-4 (RFC 5531 9, "+x+")", testNLMProcUnavail),
		t("NLM40", "NLMUDP", "nlm lock", "NLM3", "locks over UDP and TCP are one table ("+x+")", testNLMUDP),
		t("NLM41", "NLMDRC", "nlm lock block", "NLM21", "a retransmitted LOCK, UNLOCK or CANCEL is answered from the duplicate request cache, not run again (RFC 5531 9, "+x+")", testNLMDRC),
		t("NLM42", "NLMDeadlock", "nlm lock block", "NLM21", "a blocking LOCK that would close a cycle of waiting owners is NLM4_DEADLCK ("+x+")", testNLMDeadlock),
		t("NLM43", "NLMPermission", "nlm lock perm", "NLM3", "an exclusive lock needs write permission, a shared one read permission, as knfsd ("+x+")", testNLMPermission),
	}
}

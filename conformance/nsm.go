package conformance

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/xdr"
)

// Status monitor tests, XNFS Version 3W chapter 11, and the lock
// manager's reboot handling (grace, reclaim, SM_NOTIFY) of chapter 14.

func (e *Env) nsmStat(c oncrpc.Caller, name string) (nsm.StatRes, error) {
	var res nsm.StatRes
	r, err := nsm.Call(e.Ctx, c, nsm.ProcStat, (&nsm.Name{MonName: name}).Append(nil))
	if err != nil {
		return res, fmt.Errorf("SM_STAT: %w", err)
	}
	return res, res.Decode(r)
}

func testNSMNull(e *Env) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := nsm.Call(e.Ctx, c, nsm.ProcNull, nil); err != nil {
		return fmt.Errorf("SM_NULL over UDP: %w", err)
	}
	t, err := oncrpc.Dial(e.Ctx, "tcp", e.lock.nsmTCP)
	if err != nil {
		return err
	}
	defer t.Close()
	if _, err := nsm.Call(e.Ctx, t, nsm.ProcNull, nil); err != nil {
		return fmt.Errorf("SM_NULL over TCP: %w", err)
	}
	return nil
}

func testNSMStat(e *Env) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := e.nsmStat(c, e.Cfg.Server)
	if err != nil {
		return err
	}
	if res.Res != nsm.StatSucc || res.State%2 != 1 {
		return fmt.Errorf("SM_STAT: res %d state %d, want stat_succ and an odd state (up)", res.Res, res.State)
	}
	return nil
}

// fromLoopback reports whether this client reaches the server over
// loopback (rpc.statd takes MON from local callers only).
func fromLoopback(c *oncrpc.Client) bool {
	a, ok := c.LocalAddr().(*net.UDPAddr)
	return ok && a.IP.IsLoopback()
}

func testNSMMonUnmon(e *Env) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := e.nsmStat(c, e.Cfg.Server)
	if err != nil {
		return err
	}
	id := nsm.MyID{MyName: "localhost", MyProg: 200000 + 99, MyVers: 1, MyProc: 1}
	mon := nsm.Mon{MonID: nsm.MonID{MonName: "cf-monitored.invalid", MyID: id}}
	r, err := nsm.Call(e.Ctx, c, nsm.ProcMon, mon.Append(nil))
	if err != nil {
		return fmt.Errorf("SM_MON: %w", err)
	}
	var res nsm.StatRes
	if err := res.Decode(r); err != nil {
		return err
	}
	want := nsm.StatFail
	if fromLoopback(c) {
		want = nsm.StatSucc
	}
	if res.Res != want || res.State != st.State {
		return fmt.Errorf("SM_MON from loopback=%v: res %d state %d, want res %d state %d", fromLoopback(c), res.Res, res.State, want, st.State)
	}
	for _, call := range []struct {
		proc uint32
		args []byte
		name string
	}{{nsm.ProcUnmon, mon.MonID.Append(nil), "SM_UNMON"}, {nsm.ProcUnmonAll, id.Append(nil), "SM_UNMON_ALL"}} {
		r, err := nsm.Call(e.Ctx, c, call.proc, call.args)
		if err != nil {
			return fmt.Errorf("%s: %w", call.name, err)
		}
		if state := r.Int32(); r.Err() != nil || state != st.State {
			return fmt.Errorf("%s: state %d (%v), want %d", call.name, state, r.Err(), st.State)
		}
	}
	return nil
}

func notify(e *Env, name string, state int32) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = nsm.Call(e.Ctx, c, nsm.ProcNotify, (&nsm.StatChange{MonName: name, State: state}).Append(nil))
	if err != nil {
		return fmt.Errorf("SM_NOTIFY: %w", err)
	}
	return nil
}

func testNSMNotifyFrees(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK"),
			s.expectLock(s.b, true, 20, 10, nlm.Granted, "b's LOCK"),
			func() error { return notify(e, s.a.name, 5) },
			s.expectLock(s.c, true, 0, 10, nlm.Granted, "LOCK of a's range after SM_NOTIFY from a"),
			s.expectLock(s.c, true, 25, 1, nlm.Denied, "LOCK of b's range: a's reboot left it"),
		)
	})(e)
}

func testNSMNotifyOther(e *Env) error {
	return lockTest(func(s *lockSession) error {
		return steps(
			s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK"),
			func() error { return notify(e, "cf-someone-else.invalid", 7) },
			s.expectLock(s.b, true, 5, 1, nlm.Denied, "LOCK of a's range after another host's SM_NOTIFY"),
		)
	})(e)
}

func testNSMGarbage(e *Env) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nsm.Prog, Vers: nsm.Vers1, Proc: nsm.ProcNotify, Args: []byte{0, 0, 0, 9, 'x'}})
	if err := acceptStat(err, oncrpc.GarbageArgs, "truncated SM_NOTIFY"); err != nil {
		return err
	}
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nsm.Prog, Vers: nsm.Vers1, Proc: nsm.ProcMon, Args: []byte{0, 0, 0, 1}})
	return acceptStat(err, oncrpc.GarbageArgs, "truncated SM_MON")
}

func testNSMProcUnavail(e *Env) error {
	c, err := e.nsmClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nsm.Prog, Vers: nsm.Vers1, Proc: 7})
	if err := acceptStat(err, oncrpc.ProcUnavail, "NSM procedure 7"); err != nil {
		return err
	}
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: nsm.Prog, Vers: 2, Proc: 0})
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProgMismatch || ae.Low != 1 || ae.High != 1 {
		return fmt.Errorf("NSM version 2: %v, want PROG_MISMATCH 1-1", err)
	}
	return nil
}

// crash sends SM_SIMU_CRASH and returns the state before and after.
func crash(e *Env) (before, after int32, err error) {
	c, err := e.nsmClient()
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	st, err := e.nsmStat(c, e.Cfg.Server)
	if err != nil {
		return 0, 0, err
	}
	if _, err := nsm.Call(e.Ctx, c, nsm.ProcSimuCrash, nil); err != nil {
		return 0, 0, fmt.Errorf("SM_SIMU_CRASH: %w", err)
	}
	st2, err := e.nsmStat(c, e.Cfg.Server)
	return st.State, st2.State, err
}

// waitGrace waits until the grace period that began at start is over:
// Cfg.Grace, then until a TEST is no longer DENIED_GRACE_PERIOD (the
// server's clock started when it handled SM_SIMU_CRASH, a little later),
// for at most ten seconds more.
func waitGrace(e *Env, start time.Time) error {
	select {
	case <-time.After(time.Until(start.Add(e.Cfg.Grace))):
	case <-e.Ctx.Done():
		return e.Ctx.Err()
	}
	c, err := e.nlmClient("tcp")
	if err != nil {
		return err
	}
	defer c.Close()
	probe := nlm.TestArgs{Cookie: []byte("grace"), Lock: nlm.Lock{CallerName: "cf-grace-probe", FH: e.Dir, OH: []byte("p"), SVID: 1}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := nlm.CallTest(e.Ctx, c, nlm.Vers4, &probe)
		if err != nil {
			return fmt.Errorf("TEST probing for the end of grace: %w", err)
		}
		if res.Stat != nlm.DeniedGracePeriod {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still in grace %v after a grace period of %v", time.Since(start), e.Cfg.Grace)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-e.Ctx.Done():
			return e.Ctx.Err()
		}
	}
}

func testNSMCrashNotify(e *Env) error {
	return lockCallbackTest(func(s *lockSession, p *callbackPeer) error {
		if err := s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK (monitors a)")(); err != nil {
			return err
		}
		start := time.Now()
		before, after, err := crash(e)
		if err != nil {
			return err
		}
		defer waitGrace(e, start)
		if after != before+2 || after%2 != 1 {
			return fmt.Errorf("state %d after SM_SIMU_CRASH, was %d: want +2, odd", after, before)
		}
		ev, err := p.await(e.Ctx, 10*time.Second, func(ev *event) bool { return ev.Prog == nsm.Prog && ev.Proc == nsm.ProcNotify })
		if err != nil {
			return fmt.Errorf("SM_NOTIFY to the lock holder's status monitor: %w", err)
		}
		var ch nsm.StatChange
		if err := ch.Decode(xdr.NewReader(ev.Args)); err != nil {
			return err
		}
		if ch.State != after {
			return fmt.Errorf("SM_NOTIFY state %d, want the new state %d", ch.State, after)
		}
		if ch.MonName != e.Cfg.Server && ch.MonName != ev.From.String() {
			return Warnf("SM_NOTIFY mon_name %q is neither the server name %q nor its address %s", ch.MonName, e.Cfg.Server, ev.From)
		}
		return nil
	})(e)
}

func testNSMGrace(e *Env) error {
	return lockTest(func(s *lockSession) error {
		if err := s.expectLock(s.a, true, 0, 10, nlm.Granted, "a's LOCK")(); err != nil {
			return err
		}
		start := time.Now()
		if _, _, err := crash(e); err != nil {
			return err
		}
		reclaim := func(o lockOwner, off, n uint64, want nlm.Stat, what string) func() error {
			return func() error {
				a := s.lockArgs(o, true, off, n)
				a.Reclaim = true
				st, err := s.lockWith(s.rpc, a)
				return wantNLM(st, err, want, what)
			}
		}
		if err := steps(
			s.expectLock(s.b, true, 20, 10, nlm.DeniedGracePeriod, "a new LOCK during grace"),
			s.expectTest(s.b, true, 0, 0, nlm.DeniedGracePeriod, nil, "TEST during grace (as knfsd)"),
			reclaim(s.a, 0, 10, nlm.Granted, "a's reclaim during grace"),
			reclaim(s.b, 5, 1, nlm.Denied, "b's conflicting reclaim"),
			func() error {
				st, err := s.unlock(s.a, 0, 0)
				return wantNLM(st, err, nlm.DeniedGracePeriod, "UNLOCK during grace (as knfsd)")
			},
		); err != nil {
			return err
		}
		if err := waitGrace(e, start); err != nil {
			return err
		}
		return steps(
			s.expectLock(s.b, true, 20, 10, nlm.Granted, "a new LOCK after grace"),
			reclaim(s.c, 40, 1, nlm.DeniedGracePeriod, "a reclaim after grace (as knfsd)"),
			s.expectLock(s.c, true, 5, 1, nlm.Denied, "a's reclaimed lock after grace"),
		)
	})(e)
}

// nsmTests is the NSM part of the table.
func nsmTests() []Test {
	const x = "XNFS 3W 11.3"
	return []Test{
		t("NSM1", "NSMNull", "nsm", "", "SM_NULL over UDP and TCP ("+x+")", testNSMNull),
		t("NSM2", "NSMStat", "nsm", "NSM1", "SM_STAT answers stat_succ and an odd state ("+x+")", testNSMStat),
		t("NSM3", "NSMMonUnmon", "nsm", "NSM1", "SM_MON (local callers only), SM_UNMON and SM_UNMON_ALL answer the state ("+x+")", testNSMMonUnmon),
		t("NSM4", "NSMNotifyFrees", "nsm nlm lock", "NSM1 NLM3", "SM_NOTIFY from a rebooted client frees its locks and no one else's ("+x+", XNFS 3W 14.2)", testNSMNotifyFrees),
		t("NSM5", "NSMNotifyOther", "nsm nlm lock", "NSM1 NLM3", "SM_NOTIFY of another host leaves a client's locks ("+x+")", testNSMNotifyOther),
		t("NSM6", "NSMGarbage", "nsm", "NSM1", "truncated SM_NOTIFY and SM_MON are GARBAGE_ARGS (RFC 5531 9, "+x+")", testNSMGarbage),
		t("NSM7", "NSMProcUnavail", "nsm", "NSM1", "NSM procedure 7 is PROC_UNAVAIL, version 2 PROG_MISMATCH 1-1 (RFC 5531 9, "+x+")", testNSMProcUnavail),
		t("NSM8", "NSMCrashNotify", "nsm nlm grace callback", "NSM2 NLM3", "SM_SIMU_CRASH raises the state by 2 and sends SM_NOTIFY with it to lock holders ("+x+")", testNSMCrashNotify),
		t("NSM9", "NSMGrace", "nsm nlm grace", "NSM2 NLM3", "during grace only reclaims are granted (new LOCK, TEST, UNLOCK DENIED_GRACE_PERIOD); after it, reclaims are refused ("+x+", XNFS 3W 14.2)", testNSMGrace),
	}
}

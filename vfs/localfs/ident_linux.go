package localfs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gonfsrdma/gonfsrdma/internal/threadcred"
	"github.com/gonfsrdma/gonfsrdma/vfs"
)

// Running system calls as the caller.
//
// The OS backend makes the kernel enforce the caller's permissions, as
// knfsd (nfsd_setuser) and NFS-Ganesha's VFS layer do: each
// identity-dependent system call runs on a thread whose fsuid, fsgid and
// supplementary groups are the caller's, set with raw per-thread system
// calls (setfsuid(2), setfsgid(2), setgroups(2) through unix.RawSyscall).
// The Go wrappers syscall.Setgroups and friends are not used: they change
// every thread of the process (AllThreadsSyscall), which is what must not
// happen here.
//
// Those threads are dedicated: asCaller hands the call to one of a pool
// of goroutines, each locked to its own OS thread for the life of the
// process (runtime.LockOSThread, never unlocked), so no other goroutine
// ever runs on a thread that has taken a caller's identity. Restoring the
// ids afterwards would not be enough: every change of a thread's
// credentials makes a new struct cred, and the kernel compares credential
// pointers, not values, where it checks that a file is written by the
// credentials that opened it (ib_safe_file_access for the uverbs and
// rdma_cm command files: Soft-RoCE posts work requests through write(2)
// on them). A thread that had switched and come back to root got EACCES
// from ibv_post_send and rdma_accept. A pool thread keeps the last
// identity it took and switches only when the next call's differs.
// (MKDIR, SYMLINK and MKNOD may switch on the calling thread instead,
// in a process without RDMA: asCallerHere, at the end of this file.)
//
// New threads do not inherit a caller's identity either: clone(2) copies
// the creating thread's credentials, but the Go runtime never creates an
// M from a thread locked with LockOSThread. runtime/proc.go (go1.26),
// newm: "if gp.m.lockedExt != 0 || gp.m.incgo" it hands the new M to
// the template thread ("We're on a locked M ... The kernel state of this
// thread may be strange ... We don't want to clone that into another
// thread. Instead, ask a known-good thread to create the thread for us"),
// and LockOSThread starts that template thread (startTemplateThread)
// before the first lock, while the process is still in its own identity.
// A blocking system call made on a pool thread lets sysmon or another M
// hand the P on; those threads were never switched.
//
// setfsuid to a non-zero uid drops the filesystem capabilities
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID,
// CAP_CHOWN, CAP_MKNOD) from the thread's effective set, and setfsuid
// back to 0 restores them (capabilities(7), "Effect of user ID changes
// on capabilities"). open_by_handle_at needs CAP_DAC_READ_SEARCH, so
// handles are resolved (and files opened for I/O) as the server, and only
// the operation itself runs as the caller.

// procIdent is the process's own identity.
var procIdent struct {
	once   sync.Once
	uid    uint32
	gid    uint32
	groups []uint32
	err    error       // why identities cannot be switched
	broken atomic.Bool // a switch was found not to have taken effect
}

// loadProcIdent records the process's identity. Whether this process may
// take other identities (CAP_SETUID, CAP_SETGID) is learned on the first
// switch: switchThread checks that each switch took effect.
func loadProcIdent() {
	// The fsuid and fsgid follow the effective ids.
	procIdent.uid = uint32(unix.Geteuid())
	procIdent.gid = uint32(unix.Getegid())
	gs, err := unix.Getgroups()
	if err != nil {
		procIdent.err = err
		return
	}
	for _, g := range gs {
		procIdent.groups = append(procIdent.groups, uint32(g))
	}
}

// IdentityThreads is the number of dedicated identity threads of the OS
// backend (shared by all its exports): as many calls as other identities
// run at once, the others wait for a thread. knfsd runs 8 threads by
// default; metadata calls are short.
const IdentityThreads = 32

// identJob is one call handed to an identity thread.
type identJob struct {
	c    *vfs.Cred
	fn   func() error
	done chan error
}

var identPool struct {
	once sync.Once
	jobs chan *identJob
	free sync.Pool     // of *identJob
	hops atomic.Uint64 // calls handed to an identity thread, for tests
}

func startIdentPool() {
	identPool.jobs = make(chan *identJob)
	identPool.free.New = func() any { return &identJob{done: make(chan error, 1)} }
	for range IdentityThreads {
		go identThread()
	}
}

// identThread runs jobs on its own locked thread, keeping the identity
// of the last one.
func identThread() {
	runtime.LockOSThread() // for good: see the comment at the top
	var (
		have     bool
		uid, gid uint32
		groups   []uint32
	)
	for j := range identPool.jobs {
		c := j.c
		if !have || c.UID != uid || c.GID != gid || !sameGroups(c.GIDs, groups) {
			if err := switchThread(c, true); err != nil {
				have = false
				j.done <- err
				continue
			}
			have, uid, gid = true, c.UID, c.GID
			groups = append(groups[:0], c.GIDs...)
		}
		j.done <- j.fn()
	}
}

// switchThread gives the current (locked) thread c's identity, with c's
// supplementary groups unless groups is false (the thread has them
// already), and checks that it took: setfsuid and setfsgid return the
// ids they replace, so a second call reads the first one back; the
// second passes an invalid id (-1), which changes nothing and, unlike a
// repeat of the same id, makes the kernel prepare no new credentials.
// Were they not c's, identities are marked broken and later calls as
// another identity fail with EPERM.
func switchThread(c *vfs.Cred, groups bool) error {
	if groups {
		var p unsafe.Pointer
		if len(c.GIDs) > 0 {
			p = unsafe.Pointer(&c.GIDs[0])
		}
		if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(c.GIDs)), uintptr(p), 0); e != 0 {
			return e
		}
	}
	unix.RawSyscall(sysSetfsgid, uintptr(c.GID), 0, 0)
	g, _, _ := unix.RawSyscall(sysSetfsgid, readID, 0, 0)
	unix.RawSyscall(sysSetfsuid, uintptr(c.UID), 0, 0)
	u, _, _ := unix.RawSyscall(sysSetfsuid, readID, 0, 0)
	if uint32(u) != c.UID || uint32(g) != c.GID {
		procIdent.broken.Store(true)
		return unix.EPERM
	}
	return nil
}

// asCaller runs fn with c's identity in effect for the system calls it
// makes, and returns fn's error. It fails with EINVAL for a Cred holding
// InvalidID, and with EPERM when identities cannot be switched (the
// server lacks CAP_SETUID or CAP_SETGID): fn is then not run at all. The
// process's own identity (root calling as root) needs no switch and runs
// fn on the calling goroutine; any other identity runs fn on a dedicated
// identity thread, so fn must not call asCaller itself, and what it
// captures it must not share with code running meanwhile.
func asCaller(c *vfs.Cred, fn func() error) error {
	switchNeeded, err := needsSwitch(c)
	if err != nil {
		return err
	}
	if !switchNeeded {
		return fn()
	}
	return onIdentityThread(c, fn)
}

// needsSwitch is what asCaller and asCallerHere check first: EINVAL for
// a Cred holding InvalidID or too many groups, false for the process's
// own identity (no switch), EPERM when identities cannot be switched.
func needsSwitch(c *vfs.Cred) (bool, error) {
	if !c.Valid() || len(c.GIDs) > 65536 {
		return false, unix.EINVAL
	}
	procIdent.once.Do(loadProcIdent)
	if c.UID == procIdent.uid && c.GID == procIdent.gid && (c.UID == 0 || sameGroups(c.GIDs, procIdent.groups)) {
		// Root keeps CAP_DAC_OVERRIDE and CAP_FSETID whatever its groups,
		// so they change nothing; a non-root server as itself is itself.
		return false, nil
	}
	if procIdent.err != nil || procIdent.broken.Load() {
		return false, unix.EPERM
	}
	return true, nil
}

// onIdentityThread runs fn as c on an identity thread (asCaller, once
// needsSwitch said a switch is needed).
func onIdentityThread(c *vfs.Cred, fn func() error) error {
	identPool.once.Do(startIdentPool)
	j := identPool.free.Get().(*identJob)
	j.c, j.fn = c, fn
	identPool.hops.Add(1)
	identPool.jobs <- j
	err := <-j.done
	j.c, j.fn = nil, nil
	identPool.free.Put(j)
	return err
}

func sameGroups(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Switching on the calling goroutine's own thread.
//
// MKDIR, SYMLINK and MKNOD must be made by the caller's identity (there
// is no O_TMPFILE for them; see servercreate_linux.go), and a hand-off to
// an identity thread and back was most of their cost. asCallerHere runs
// fn as c on the calling goroutine's thread instead: LockOSThread, the
// same raw per-thread setgroups, setfsgid and setfsuid as switchThread
// (checked the same way), fn, then the process's own ids back, checked
// (setfsuid and setfsgid read back, and the thread's capability sets
// compared with what they were before the switch: setfsuid back to 0
// re-raises the filesystem capabilities from the permitted set), and
// UnlockOSThread. The restored thread then runs other goroutines with
// equal ids but a new struct cred, which the RDMA command files refuse
// (see the top of this file): so this is done only while
// threadcred.Taint allows it, that is in a process that has not opened
// and will never open an RDMA device (verbs.NewRDMAProvider, when it
// finds one, reserves the process first and is refused after a Taint). Otherwise, and when the
// thread cannot be restored, calls go to the identity threads as before.
// A thread whose restore failed is never unlocked: its goroutine keeps it
// until it exits, and the runtime then ends the thread instead of reusing
// it; later calls take the identity threads.

var here struct {
	off   atomic.Bool   // restore failed once, or disabled by a test
	calls atomic.Uint64 // calls run on the calling thread, for tests
}

// asCallerHere runs fn as c like asCaller, on the calling goroutine's
// thread where allowed (see above), else through asCaller.
func asCallerHere(c *vfs.Cred, fn func() error) error {
	switchNeeded, err := needsSwitch(c)
	if err != nil {
		return err
	}
	if !switchNeeded {
		return fn()
	}
	if procIdent.uid != 0 || here.off.Load() || !threadcred.Taint() {
		return onIdentityThread(c, fn)
	}
	runtime.LockOSThread()
	var before capSets
	if err := before.get(); err != nil {
		runtime.UnlockOSThread()
		return onIdentityThread(c, fn)
	}
	groups := !sameGroups(c.GIDs, procIdent.groups)
	defer func() {
		// Runs on a panic in fn too.
		if restoreThread(&before, groups) {
			runtime.UnlockOSThread()
		} else {
			here.off.Store(true)
		}
	}()
	if err := switchThread(c, groups); err != nil {
		return err
	}
	here.calls.Add(1)
	return fn()
}

// readID passed to setfsuid or setfsgid changes nothing and returns the
// current id: -1 is no valid id.
const readID = ^uintptr(0) & 0xffffffff

// capSets is a thread's capability sets (capget, version 3).
type capSets struct{ d [2]unix.CapUserData }

func (s *capSets) get() error {
	h := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	return unix.Capget(&h, &s.d[0])
}

// restoreThread gives the current thread the process's own identity back
// (the groups too when the switch set them) and reports whether it is
// exactly as before: fsuid first (back to 0 it restores the capabilities
// setgroups needs), then fsgid and the groups, each read back as in
// switchThread, then the capability sets compared.
func restoreThread(before *capSets, groups bool) bool {
	unix.RawSyscall(sysSetfsuid, uintptr(procIdent.uid), 0, 0)
	u, _, _ := unix.RawSyscall(sysSetfsuid, readID, 0, 0)
	unix.RawSyscall(sysSetfsgid, uintptr(procIdent.gid), 0, 0)
	g, _, _ := unix.RawSyscall(sysSetfsgid, readID, 0, 0)
	if uint32(u) != procIdent.uid || uint32(g) != procIdent.gid {
		return false
	}
	var after capSets
	if !groups {
		return after.get() == nil && after == *before
	}
	var p unsafe.Pointer
	if len(procIdent.groups) > 0 {
		p = unsafe.Pointer(&procIdent.groups[0])
	}
	if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(procIdent.groups)), uintptr(p), 0); e != 0 {
		return false
	}
	return after.get() == nil && after == *before
}

package vfs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Running system calls as the caller.
//
// The OS backend makes the kernel enforce the caller's permissions, as
// knfsd (nfsd_setuser) and NFS-Ganesha's VFS layer do: around each
// identity-dependent system call the calling goroutine is locked to its
// OS thread (runtime.LockOSThread) and that thread's fsuid, fsgid and
// supplementary groups are set to the caller's with raw per-thread system
// calls (setfsuid(2), setfsgid(2), setgroups(2) through unix.RawSyscall).
// The Go wrappers syscall.Setgroups and friends are not used: they change
// every thread of the process (AllThreadsSyscall), which is what must not
// happen here. The identity is restored before the thread is unlocked,
// so no other goroutine ever runs on a thread with a caller's identity.
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
// A blocking system call made while locked lets sysmon or another M hand
// the P on; those threads were never switched.
//
// setfsuid to a non-zero uid drops the filesystem capabilities
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID,
// CAP_CHOWN, CAP_MKNOD) from the thread's effective set, and setfsuid
// back to 0 restores them (capabilities(7), "Effect of user ID changes
// on capabilities"). open_by_handle_at needs CAP_DAC_READ_SEARCH, so
// handles are resolved (and files opened for I/O) as the server, and only
// the operation itself runs as the caller.

// procIdent is the process's own identity, restored after each call.
var procIdent struct {
	once   sync.Once
	uid    uint32
	gid    uint32
	groups []uint32
	err    error       // why identities cannot be switched
	broken atomic.Bool // a switch was found not to have taken effect
}

// loadProcIdent records the process's identity and probes, once, that
// this thread can take another one and come back (setfsuid and setfsgid
// report no errors: the probe sets an id, reads it back with a second
// call, and restores it). Per call, unbecome checks the ids it replaces
// were the caller's.
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
	const probe = 65534
	if procIdent.uid == probe {
		return // nothing to switch to that this identity could not be
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.RawSyscall(sysSetfsgid, probe, 0, 0)
	g, _, _ := unix.RawSyscall(sysSetfsgid, uintptr(procIdent.gid), 0, 0)
	unix.RawSyscall(sysSetfsuid, probe, 0, 0)
	u, _, _ := unix.RawSyscall(sysSetfsuid, uintptr(procIdent.uid), 0, 0)
	if uint32(u) != probe || uint32(g) != probe {
		procIdent.err = unix.EPERM // no CAP_SETUID / CAP_SETGID
	}
}

// switched says whether become changed the thread's identity (and locked
// it), so that unbecome must restore it.
type switched struct {
	on       bool
	uid, gid uint32
}

// become locks the goroutine to its thread and gives the thread c's
// identity. It fails with EINVAL for a Cred holding InvalidID, and with
// EPERM when identities cannot be switched (the server lacks CAP_SETUID
// or CAP_SETGID): the call is then not made at all. The process's own
// identity (root calling as root) needs no switch. Always pair with
// unbecome.
func become(c *Cred) (switched, error) {
	if !c.Valid() || len(c.GIDs) > 65536 {
		return switched{}, unix.EINVAL
	}
	procIdent.once.Do(loadProcIdent)
	if c.UID == procIdent.uid && c.GID == procIdent.gid && (c.UID == 0 || sameGroups(c.GIDs, procIdent.groups)) {
		// Root keeps CAP_DAC_OVERRIDE and CAP_FSETID whatever its groups,
		// so they change nothing; a non-root server as itself is itself.
		return switched{}, nil
	}
	if procIdent.err != nil || procIdent.broken.Load() {
		return switched{}, unix.EPERM
	}
	runtime.LockOSThread()
	var p unsafe.Pointer
	if len(c.GIDs) > 0 {
		p = unsafe.Pointer(&c.GIDs[0])
	}
	if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(c.GIDs)), uintptr(p), 0); e != 0 {
		runtime.UnlockOSThread() // nothing changed
		return switched{}, e
	}
	unix.RawSyscall(sysSetfsgid, uintptr(c.GID), 0, 0)
	unix.RawSyscall(sysSetfsuid, uintptr(c.UID), 0, 0)
	return switched{on: true, uid: c.UID, gid: c.GID}, nil
}

// unbecome restores the process's identity on the thread and unlocks it.
// setfsuid and setfsgid return the ids they replace: were they not the
// caller's, the switch had not taken effect (it cannot fail for a server
// that passed the probe), so identities are marked broken and later calls
// as another identity fail with EPERM. Should the restore itself fail,
// the thread stays locked to this goroutine: the runtime then never
// schedules another goroutine on it and ends the thread when the
// goroutine exits.
func unbecome(s switched) {
	if !s.on {
		return
	}
	// The fsuid first: going back to the server's regains the filesystem
	// capabilities.
	u, _, _ := unix.RawSyscall(sysSetfsuid, uintptr(procIdent.uid), 0, 0)
	g, _, _ := unix.RawSyscall(sysSetfsgid, uintptr(procIdent.gid), 0, 0)
	if uint32(u) != s.uid || uint32(g) != s.gid {
		procIdent.broken.Store(true)
	}
	groups := procIdent.groups
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	if _, _, e := unix.RawSyscall(sysSetgroups, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		procIdent.broken.Store(true)
		return
	}
	if u, _, _ := unix.RawSyscall(sysSetfsuid, uintptr(procIdent.uid), 0, 0); uint32(u) != procIdent.uid {
		procIdent.broken.Store(true)
		return
	}
	runtime.UnlockOSThread()
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

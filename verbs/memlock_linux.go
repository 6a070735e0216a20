//go:build linux

package verbs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RaiseMemlock raises RLIMIT_MEMLOCK: to unlimited when the process may
// (CAP_SYS_RESOURCE), else the soft limit to the hard limit. Registered
// memory is pinned and counts against this limit. If the resulting limit
// is below need bytes (need 0: no requirement) the error says what to
// change.
func RaiseMemlock(need uint64) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return fmt.Errorf("verbs: getrlimit(RLIMIT_MEMLOCK): %w", err)
	}
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &inf); err == nil {
		return nil
	}
	if lim.Cur < lim.Max {
		up := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &up); err != nil {
			return fmt.Errorf("verbs: setrlimit(RLIMIT_MEMLOCK) to the hard limit %d: %w", lim.Max, err)
		}
		lim = up
	}
	if need > 0 && lim.Cur != unix.RLIM_INFINITY && lim.Cur < need {
		return fmt.Errorf("verbs: RLIMIT_MEMLOCK is %d bytes, registered memory needs %d: "+
			"raise the hard limit (ulimit -l unlimited in the starting shell, "+
			"LimitMEMLOCK=infinity in the systemd unit, or memlock in /etc/security/limits.conf), "+
			"or run with CAP_SYS_RESOURCE", lim.Cur, need)
	}
	return nil
}

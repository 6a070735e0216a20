package daemon

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Notifier is told the service manager's states (sd_notify(3)): Run
// sends READY=1 once every listener is up, RELOADING=1 (with
// MONOTONIC_USEC) before a reload and READY=1 after it, and STOPPING=1
// when shutdown begins, each with a STATUS= line. The CLI passes
// go-systemd's daemon.SdNotify; nil sends nothing.
type Notifier func(state string)

func (n Notifier) send(lines ...string) {
	if n != nil {
		n(strings.Join(lines, "\n"))
	}
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which systemd wants
// with RELOADING=1 to tell one reload from the next.
func monotonicUsec() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "MONOTONIC_USEC=0"
	}
	return fmt.Sprintf("MONOTONIC_USEC=%d", ts.Nano()/1000)
}

// status is the STATUS= line systemctl status shows: what is served
// where.
func (d *Daemon) status() string {
	set := d.st.cur.Load()
	n := 0
	if set != nil {
		n = len(set.table.Exports)
	}
	s := fmt.Sprintf("STATUS=serving %d export(s); NFS/TCP %s", n, d.nfsL.Addr())
	if d.rdma != nil {
		s += fmt.Sprintf(", NFS/RDMA port %d", d.rdmaPort)
	} else {
		s += ", no RDMA"
	}
	s += fmt.Sprintf(", MOUNT %s", d.mountL.Addr())
	return s
}

package nlm

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Reserved source ports for callbacks, as the Linux server binds them
// (xprt_bindresvport: 665 up to 1023).
const (
	minReservedPort = 665
	maxReservedPort = 1023
)

// DialCallback connects to remote over network ("tcp" or "udp") from
// local (when valid), from a reserved port when the process may bind
// one, as the Linux lock manager and sm-notify do, so that peers that
// insist on privileged callers take the call; otherwise, or when no
// reserved port is free after a few tries, from an ephemeral port.
func DialCallback(ctx context.Context, network string, local netip.Addr, remote string, timeout time.Duration) (net.Conn, error) {
	ip := net.IP(nil)
	if local.IsValid() && !local.IsUnspecified() {
		ip = local.AsSlice()
	}
	addr := func(port int) net.Addr {
		if network == "udp" {
			return &net.UDPAddr{IP: ip, Port: port}
		}
		return &net.TCPAddr{IP: ip, Port: port}
	}
	if os.Geteuid() == 0 {
		for range 8 {
			d := net.Dialer{Timeout: timeout, LocalAddr: addr(minReservedPort + rand.IntN(maxReservedPort-minReservedPort+1))}
			c, err := d.DialContext(ctx, network, remote)
			if err == nil {
				return c, nil
			}
			if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EADDRNOTAVAIL) {
				return nil, err
			}
		}
	}
	d := net.Dialer{Timeout: timeout}
	if ip != nil {
		d.LocalAddr = addr(0)
	}
	return d.DialContext(ctx, network, remote)
}

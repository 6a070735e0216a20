package oncrpc

import (
	"net"
	"strconv"
)

// ListenTCPUDP binds TCP and UDP on the same port, as an RPC service
// registered with rpcbind for both netids needs. For port 0 it takes the
// port the kernel picked for TCP and retries (up to five times) when UDP
// has that port taken already.
func ListenTCPUDP(addr string) (net.Listener, net.PacketConn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, p))
		if err == nil {
			return ln, pc, nil
		}
		ln.Close()
		if port != "0" || attempt == 4 {
			return nil, nil, err
		}
	}
}

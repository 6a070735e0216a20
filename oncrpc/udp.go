package oncrpc

import (
	"errors"
	"net"
	"net/netip"
	"sync"

	"go.uber.org/zap"
)

// maxDatagram is the largest UDP datagram read or written.
const maxDatagram = 65507

// udpWorkers is the number of goroutines serving one UDP socket; UDP carries
// only the cold MOUNT and rpcbind programs.
const udpWorkers = 4

// ServeUDP serves RPC datagrams on pc until Shutdown. Each datagram is one
// call; replies larger than a datagram are answered with SYSTEM_ERR.
//
// Buffer ownership: each worker owns one receive buffer and one reply
// buffer, reused for every datagram it handles.
func (s *Server) ServeUDP(pc net.PacketConn) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		pc.Close()
		return ErrServerClosed
	}
	s.packets[pc] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	log := s.log.With(zap.String("transport", "udp"), zap.Stringer("local", pc.LocalAddr()))
	local := addrPort(pc.LocalAddr())
	var wg sync.WaitGroup
	errs := make(chan error, udpWorkers)
	for i := 0; i < udpWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.udpWorker(pc, local, log)
		}()
	}
	wg.Wait()
	s.mu.Lock()
	closing := s.closing
	delete(s.packets, pc)
	s.mu.Unlock()
	if closing {
		return ErrServerClosed
	}
	return <-errs
}

func (s *Server) udpWorker(pc net.PacketConn, local netip.AddrPort, log *zap.Logger) error {
	buf := make([]byte, maxDatagram)
	var call Call
	reply := NewReply(make([]byte, 0, 4096), nil)
	var flat []byte
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				pc.Close()
				return err
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			pc.Close()
			return err
		}
		info := ConnInfo{Transport: UDP, Local: local, Remote: addrPort(from), Caps: Capabilities{MaxReply: maxDatagram}}
		if !s.disp.Dispatch(s.ctx, buf[:n], &info, &call, &reply) {
			continue
		}
		if reply.Len() > maxDatagram {
			log.Warn("reply too large for UDP; answering SYSTEM_ERR", zap.Int("size", reply.Len()), zap.Uint32("xid", call.XID))
			reply.Reset()
			reply.Head = AppendAcceptedHeader(reply.Head, call.XID, SystemErr)
		}
		flat = reply.AppendFlat(flat[:0])
		if _, err := pc.WriteTo(flat, from); err != nil {
			log.Info("UDP reply not sent", zap.Stringer("to", from), zap.Error(err))
		}
	}
}

package oncrpc

import (
	"errors"
	"net"
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
	if !s.life.Listen(pc) {
		return ErrServerClosed
	}
	defer s.life.Unlisten(pc)

	log := s.log.With(zap.String("transport", "udp"), zap.Stringer("local", pc.LocalAddr()))
	peer := Peer{Transport: UDP, Local: addrPort(pc.LocalAddr())}
	var wg sync.WaitGroup
	errs := make(chan error, udpWorkers)
	for i := 0; i < udpWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.udpWorker(pc, peer, log)
		}()
	}
	wg.Wait()
	if s.life.Closing() {
		return ErrServerClosed
	}
	return <-errs
}

// udpExchange is a UDP worker's Exchange for the datagram it handles.
type udpExchange struct {
	peer Peer
	msg  []byte
}

func (u *udpExchange) Peer() *Peer                             { return &u.peer }
func (u *udpExchange) Message() []byte                         { return u.msg }
func (u *udpExchange) MaxReply() int                           { return maxDatagram }
func (u *udpExchange) AllocPayload(n int) []byte               { return make([]byte, n) }
func (u *udpExchange) CanSplice() bool                         { return false }
func (u *udpExchange) SpliceFile(int, int64, int) (int, error) { return 0, ErrNoSplice }

func (s *Server) udpWorker(pc net.PacketConn, peer Peer, log *zap.Logger) error {
	buf := make([]byte, maxDatagram)
	var call Call
	reply := NewReply(make([]byte, 0, 4096))
	ex := udpExchange{peer: peer}
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
		ex.peer.Remote, ex.msg = addrPort(from), buf[:n]
		if !s.disp.Dispatch(s.life.Context(), &ex, &call, &reply) {
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

package rpcbind

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// DefaultAddr is where rpcbind listens: port 111 on every address.
const DefaultAddr = ":111"

// Config configures Start.
type Config struct {
	// Addr is the TCP and UDP address to serve rpcbind on, and the address
	// of the rpcbind to register with when another process owns it.
	// Default DefaultAddr.
	Addr string
	// Mappings are this process's services, registered at Start. An
	// empty Owner becomes the effective user ID, as libtirpc's rpcb_set
	// sends.
	Mappings []Mapping
	// Server bounds the rpcbind server's connections (local mode).
	Server oncrpc.ServerConfig
}

// Service is rpcbind as Start left it: either serving its own Registry
// (local mode) or holding registrations made with another rpcbind (remote
// mode).
type Service struct {
	log  *zap.Logger
	addr net.Addr // TCP address served (local) or registered with (remote)

	// Local mode.
	reg *Registry
	srv *oncrpc.Server
	wg  sync.WaitGroup

	// Remote mode.
	remote string // dial address of the other rpcbind
	mu     sync.Mutex
	owned  []Mapping // registered with the other rpcbind, to undo at Close
}

// Start serves rpcbind on cfg.Addr over TCP and UDP and registers
// cfg.Mappings in it, together with rpcbind's own versions 2, 3 and 4. When
// the address is taken (EADDRINUSE: the system's rpcbind runs) or may not be
// bound (EACCES: port 111 without privilege), it registers cfg.Mappings with
// the rpcbind listening there instead, over TCP from loopback, replacing any
// stale registration of the same program, version and netid. Either way it
// logs which happened. ctx bounds the registration calls.
func Start(ctx context.Context, log *zap.Logger, cfg Config) (*Service, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	ln, pc, err := oncrpc.ListenTCPUDP(addr)
	if err == nil {
		return startLocal(log, cfg, ln, pc), nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) && !errors.Is(err, syscall.EACCES) {
		return nil, fmt.Errorf("rpcbind: listen on %s: %w", addr, err)
	}
	s, rerr := startRemote(ctx, log, addr, cfg.Mappings)
	if rerr != nil {
		return nil, fmt.Errorf("rpcbind: cannot listen on %s (%v) nor register with the rpcbind there: %w", addr, err, rerr)
	}
	return s, nil
}

func startLocal(log *zap.Logger, cfg Config, ln net.Listener, pc net.PacketConn) *Service {
	reg := NewRegistry()
	tcp := ln.Addr().(*net.TCPAddr).AddrPort()
	for _, m := range selfMappings(tcp) {
		reg.Set(m)
	}
	for _, m := range cfg.Mappings {
		if m.Owner == "" {
			m.Owner = strconv.Itoa(os.Geteuid())
		}
		if !reg.Set(m) {
			log.Warn("rpcbind: mapping not registered", zap.Uint32("prog", m.Prog), zap.Uint32("vers", m.Vers), zap.String("netid", m.Netid), zap.String("addr", m.Addr))
		}
	}
	s := &Service{log: log, addr: ln.Addr(), reg: reg}
	s.srv = oncrpc.NewServer(log, oncrpc.NewDispatcher(log, nil, reg.Program()), cfg.Server)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.srv.ServeTCP(ln); err != nil && !errors.Is(err, oncrpc.ErrServerClosed) {
			log.Error("rpcbind: TCP listener failed", zap.Error(err))
		}
	}()
	go func() {
		defer s.wg.Done()
		if err := s.srv.ServeUDP(pc); err != nil && !errors.Is(err, oncrpc.ErrServerClosed) {
			log.Error("rpcbind: UDP listener failed", zap.Error(err))
		}
	}()
	log.Info("rpcbind: serving", zap.Stringer("addr", ln.Addr()), zap.Int("mappings", len(cfg.Mappings)))
	return s
}

// selfMappings are rpcbind's own registrations: versions 2 to 4 over tcp
// and udp, and over tcp6 and udp6 when listening on IPv6 or every address.
func selfMappings(l netip.AddrPort) []Mapping {
	a := l.Addr().Unmap()
	var netids []string
	if a.Is4() || a.IsUnspecified() {
		netids = append(netids, NetidTCP, NetidUDP)
	}
	if a.Is6() {
		netids = append(netids, NetidTCP6, NetidUDP6)
	}
	var out []Mapping
	for _, n := range netids {
		for v := uint32(VersPmap); v <= Vers4; v++ {
			m := NewMapping(Prog, v, n, l.Port())
			m.Owner = "superuser"
			out = append(out, m)
		}
	}
	return out
}

func startRemote(ctx context.Context, log *zap.Logger, addr string, mappings []Mapping) (*Service, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip, perr := netip.ParseAddr(host); host == "" || (perr == nil && ip.IsUnspecified()) {
		host = "127.0.0.1" // SET is honoured from loopback only
	}
	s := &Service{log: log, remote: net.JoinHostPort(host, port)}
	conn, err := new(net.Dialer).DialContext(ctx, "tcp", s.remote)
	if err != nil {
		return nil, err
	}
	s.addr = conn.RemoteAddr()
	c := oncrpc.NewClient(conn)
	defer c.Close()
	if err := Null(ctx, c, VersPmap); err != nil {
		return nil, fmt.Errorf("no rpcbind at %s: %w", s.remote, err)
	}
	for _, m := range mappings {
		if err := s.register(ctx, c, m); err != nil {
			s.Close(ctx)
			return nil, err
		}
	}
	log.Info("rpcbind: another rpcbind owns the port; registered with it", zap.String("addr", s.remote), zap.Int("mappings", len(mappings)))
	return s, nil
}

func (s *Service) register(ctx context.Context, c oncrpc.Caller, m Mapping) error {
	if m.Owner == "" {
		m.Owner = strconv.Itoa(os.Geteuid())
	}
	// Clear a stale registration (ours from an unclean exit, or a service
	// that is gone), as rpc.mountd and the kernel do before registering.
	if _, err := Unset(ctx, c, m.Prog, m.Vers, m.Netid); err != nil {
		return fmt.Errorf("rpcbind: unset %d/%d/%s: %w", m.Prog, m.Vers, m.Netid, err)
	}
	ok, err := Set(ctx, c, m)
	if err != nil {
		return fmt.Errorf("rpcbind: set %d/%d/%s: %w", m.Prog, m.Vers, m.Netid, err)
	}
	if !ok {
		return fmt.Errorf("rpcbind: %s refused %d/%d/%s at %s", s.remote, m.Prog, m.Vers, m.Netid, m.Addr)
	}
	s.mu.Lock()
	s.owned = append(s.owned, m)
	s.mu.Unlock()
	return nil
}

// Remote reports whether the service registered with another rpcbind
// instead of serving its own.
func (s *Service) Remote() bool { return s.reg == nil }

// Addr returns the TCP address rpcbind is served on (local mode) or the
// address of the rpcbind registered with (remote mode).
func (s *Service) Addr() net.Addr { return s.addr }

// Registry returns the served registry, or nil in remote mode.
func (s *Service) Registry() *Registry { return s.reg }

// Register adds m in either mode; a transport started later (RDMA) uses it.
// In remote mode the mapping is undone at Close.
func (s *Service) Register(ctx context.Context, m Mapping) error {
	if s.reg != nil {
		if m.Owner == "" {
			m.Owner = strconv.Itoa(os.Geteuid())
		}
		if !s.reg.Set(m) {
			return fmt.Errorf("rpcbind: %d/%d/%s already registered or malformed", m.Prog, m.Vers, m.Netid)
		}
		return nil
	}
	c, err := oncrpc.Dial(ctx, "tcp", s.remote)
	if err != nil {
		return err
	}
	defer c.Close()
	return s.register(ctx, c, m)
}

// Close stops serving (local mode) or removes the registrations made with
// the other rpcbind (remote mode). ctx bounds the drain or the calls.
func (s *Service) Close(ctx context.Context) error {
	if s.reg != nil {
		err := s.srv.Shutdown(ctx)
		s.wg.Wait()
		return err
	}
	s.mu.Lock()
	owned := s.owned
	s.owned = nil
	s.mu.Unlock()
	if len(owned) == 0 {
		return nil
	}
	c, err := oncrpc.Dial(ctx, "tcp", s.remote)
	if err != nil {
		return fmt.Errorf("rpcbind: cannot unregister from %s: %w", s.remote, err)
	}
	defer c.Close()
	var errs []error
	for _, m := range owned {
		if _, err := Unset(ctx, c, m.Prog, m.Vers, m.Netid); err != nil {
			errs = append(errs, fmt.Errorf("rpcbind: unset %d/%d/%s: %w", m.Prog, m.Vers, m.Netid, err))
		}
	}
	s.log.Info("rpcbind: unregistered from the other rpcbind", zap.String("addr", s.remote), zap.Int("mappings", len(owned)))
	return errors.Join(errs...)
}

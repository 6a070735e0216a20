package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	"go.uber.org/zap"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
)

// Program numbers of the lock manager and the status monitor.
const (
	nlmProgram = nlm.Prog
	nsmProgram = nsm.Prog
)

// lockFiles adapts the NFS server's handle resolution to nlm.Resolver:
// an NLM call naming a handle is authorized exactly as an NFS call
// naming it.
type lockFiles struct{ st *exportState }

// ResolveLock implements nlm.Resolver.
func (l lockFiles) ResolveLock(call *oncrpc.Call, fh []byte, exclusive bool) (nlm.File, nlm.Stat) {
	r, st := l.st.nfs.ResolveHandle(call, fh)
	if st == wire.OK {
		st = l.st.nfs.PermitLock(&r, exclusive)
	}
	switch st {
	case wire.OK:
	case wire.ErrStale:
		return nlm.File{}, nlm.StaleFH
	default:
		// As the Linux server, whose lockd opens the file through nfsd
		// (nlm_fopen): stale is NLM4_STALE_FH, anything else (a
		// malformed handle, a refused client) NLM4_FAILED.
		return nlm.File{}, nlm.Failed
	}
	h := append([]byte(nil), r.Handle...)
	return nlm.File{Key: nlm.KeyPrefix(r.Export.FSID) + string(h), FS: r.Export.FS, Handle: h, ReadOnly: r.ReadOnly}, nlm.Granted
}

// lockAddr is addr, or the host of fallback with port 0 when addr is
// empty (an ephemeral port beside NFS).
func lockAddr(addr, fallback string) string {
	if addr != "" {
		return addr
	}
	host, _, _ := net.SplitHostPort(fallback)
	return net.JoinHostPort(host, "0")
}

// startLocking creates the status monitor and the lock manager (before
// the dispatcher exists: their programs go into it).
func (d *Daemon) startLocking(log *zap.Logger, cfg Config, st *exportState) error {
	host, _ := os.Hostname()
	var err error
	d.nsm, err = nsm.Start(nsm.Config{
		StateDir:          cfg.StateDir,
		Grace:             cfg.Grace,
		Log:               log.Named("nsm"),
		OnReboot:          func(name string, addr netip.Addr) { d.nlm.HostRebooted(name, addr) },
		OnCrash:           func() { d.nlm.ReleaseAll() },
		ClientPortmapPort: cfg.ClientPortmapPort,
		LocalPortmap:      d.localPortmap,
		NotifyFor:         cfg.NotifyFor,
	})
	if err != nil {
		return fmt.Errorf("status monitor: %w", err)
	}
	d.nlm = nlm.NewServer(nlm.Config{
		Files:             lockFiles{st},
		Monitor:           sharedGrace{d.nsm, st},
		Log:               log.Named("nlm"),
		ClientPortmapPort: cfg.ClientPortmapPort,
		GrantRetry:        cfg.NLMGrantRetry,
		MachineName:       host,
	})
	return nil
}

// serveLocking opens the NLM and NSM listeners (TCP and UDP each).
func (d *Daemon) serveLocking(cfg Config, serve func(string, func() error)) error {
	for _, l := range []struct {
		name, addr string
		port       *uint16
	}{
		{"NLM", lockAddr(cfg.NLMAddr, cfg.NFSAddr), &d.nlmPort},
		{"NSM", lockAddr(cfg.NSMAddr, cfg.NFSAddr), &d.nsmPort},
	} {
		ln, pc, err := oncrpc.ListenTCPUDP(l.addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", l.name, err)
		}
		*l.port = portOf(ln.Addr().String())
		serve(l.name+"/TCP", func() error { return d.rpc.ServeTCP(ln) })
		serve(l.name+"/UDP", func() error { return d.rpc.ServeUDP(pc) })
	}
	d.log.Info("locking served", zap.Uint16("nlm_tcp_udp", d.nlmPort), zap.Uint16("nsm_tcp_udp", d.nsmPort), zap.Int32("nsm_state", d.nsm.State()), zap.Bool("grace", d.nsm.InGrace()))
	return nil
}

// lockMappings are the rpcbind registrations of NLM v1, v3, v4 and NSM v1.
func (d *Daemon) lockMappings() []rpcbind.Mapping {
	var maps []rpcbind.Mapping
	for _, n := range []string{"tcp", "udp"} {
		for _, v := range []uint32{nlm.Vers1, nlm.Vers3, nlm.Vers4} {
			maps = append(maps, rpcbind.NewMapping(nlmProgram, v, n, d.nlmPort))
		}
		maps = append(maps, rpcbind.NewMapping(nsmProgram, nsm.Vers1, n, d.nsmPort))
	}
	return maps
}

// closeLocking stops callbacks and notifications; locks are not
// released (a restart is recovered by reclaims).
func (d *Daemon) closeLocking() {
	if d.nlm != nil {
		d.nlm.Close()
	}
	if d.nsm != nil {
		d.nsm.Close()
	}
}

// publishLocalPortmap records this daemon's rpcbind (once it runs) for
// the status monitor, which may already be serving.
func (d *Daemon) publishLocalPortmap() {
	addr := "127.0.0.1:111"
	if a, ok := d.PortmapAddr().(*net.TCPAddr); ok && a != nil {
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	d.localPM.Store(&addr)
}

// localPortmap is where the status monitor finds local programs that
// called MON: this daemon's rpcbind, or the system's on port 111.
func (d *Daemon) localPortmap() string {
	if p := d.localPM.Load(); p != nil {
		return *p
	}
	return "127.0.0.1:111"
}

// NLM returns the lock manager, nil with NoNLM.
func (d *Daemon) NLM() *nlm.Server { return d.nlm }

// NSM returns the status monitor, nil with NoNLM.
func (d *Daemon) NSM() *nsm.Server { return d.nsm }

// NLMPort and NSMPort are the lock manager's and the status monitor's
// ports (TCP and UDP), 0 with NoNLM.
func (d *Daemon) NLMPort() uint16 { return d.nlmPort }

// NSMPort: see NLMPort.
func (d *Daemon) NSMPort() uint16 { return d.nsmPort }

package daemon

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gonfsrdma/gonfsrdma/exports"
	"github.com/gonfsrdma/gonfsrdma/metrics"
	"github.com/gonfsrdma/gonfsrdma/metrics/meter"
	"github.com/gonfsrdma/gonfsrdma/nfs"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nlm"
	"github.com/gonfsrdma/gonfsrdma/nsm"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Config is everything the CLI decides.
type Config struct {
	ExportsFile   string // exports(5) file; empty: DefaultExport to loopback
	DefaultExport string
	NFSAddr       string // NFS over TCP
	MountAddr     string // MOUNT over TCP and UDP
	RDMAAddr      string // NFS over RPC-over-RDMA; empty disables
	RequireRDMA   bool
	// RDMAProvider replaces real RDMA (tests use the software fabric);
	// nil means verbs.NewRDMAProvider.
	RDMAProvider verbs.Provider
	PortmapAddr  string
	NoPortmap    bool
	StateDir     string
	RDMACredits  int
	RDMAInline   int
	// RDMAAckTimeout is the queue pairs' local ACK timeout
	// (rpcrdma.Config.AckTimeout: 0 its default, negative the connection
	// manager's).
	RDMAAckTimeout time.Duration
	MaxInFlight    int
	// SpliceReads sends TCP READ data from the page cache by splice(2)
	// (oncrpc.ServerConfig.SpliceReads); gonfsrdma serve turns it on
	// unless --tcp-splice=false.
	SpliceReads bool
	// Resource limits, shared by NFS, MOUNT, NLM, NSM and rpcbind over
	// TCP and by RPC-over-RDMA (oncrpc.LimitsConfig): connections in
	// total and per client address (0: default, negative: no cap), the
	// bytes of TCP call and reply buffers (0: default), the idle timeout
	// (0: 6 minutes, negative: never) and the registered memory of RDMA
	// connections (0: default).
	MaxConns          int
	MaxConnsPerClient int
	BufferBudget      int64
	IdleTimeout       time.Duration
	RDMAMaxPinned     int64
	Version           string

	// NoNLM turns file locking off: no NLM, no NSM (clients must mount
	// with nolock).
	NoNLM bool
	// NLMAddr and NSMAddr are the lock manager's and the status
	// monitor's TCP and UDP addresses; empty means NFSAddr's host with
	// an ephemeral port.
	NLMAddr, NSMAddr string
	// Grace is the grace period after a start with locks to reclaim
	// (and after SM_SIMU_CRASH).
	Grace time.Duration
	// ClientPortmapPort is the port of the clients' rpcbind, for NLM
	// callbacks and SM_NOTIFY (0: 111; tests running the client side on
	// this host use another).
	ClientPortmapPort int
	// NotifyFor bounds how long SM_NOTIFY is retried per host (0: 15
	// minutes).
	NotifyFor time.Duration
	// NLMGrantRetry is the interval of GRANTED_MSG resends (0: 10 s).
	NLMGrantRetry time.Duration

	// Notify is told READY=1, RELOADING=1 and STOPPING=1 (sd_notify(3));
	// nil: nothing is sent.
	Notify Notifier

	// MetricsAddr serves Prometheus metrics (/metrics) and readiness
	// (/healthz) over HTTP; empty: off (and no per-client counting).
	MetricsAddr string
	// MetricsTopClients is how many of the busiest client addresses get
	// their own series (0: 10).
	MetricsTopClients int
}

// Program numbers registered with rpcbind.
const (
	nfsProgram   = 100003
	mountProgram = 100005
)

// drainTimeout bounds the orderly shutdown; reloadGrace is how long a
// removed export's backend stays open for calls already using it.
const (
	drainTimeout = 10 * time.Second
	reloadGrace  = 30 * time.Second
)

// Daemon is a started server. Its listeners run until Shutdown.
type Daemon struct {
	log    *zap.Logger
	cfg    Config
	st     *exportState
	rpc    *oncrpc.Server
	limits *oncrpc.Limits
	rdma   rdmaServer
	pm     *rpcbind.Service
	errc   chan error
	nfsL   net.Listener
	mountL net.Listener

	rdmaPort   uint16
	rdmaWhyNot error // why RDMA is not served (for the summary)

	nlm              *nlm.Server
	nsm              *nsm.Server
	nlmPort, nsmPort uint16
	localPM          atomic.Pointer[string] // this daemon's rpcbind, for NSM's MON callbacks

	drc     *oncrpc.DRC
	disp    *oncrpc.Dispatcher
	clients *meter.Clients // nil without metrics
	health  health
	reloads reloadCounts
	metrics *metrics.Server
}

// Run serves until ctx ends. Each value received on reload re-reads the
// exports file.
func Run(ctx context.Context, log *zap.Logger, cfg Config, reload <-chan os.Signal) error {
	d, err := Start(ctx, log, cfg)
	if err != nil {
		return err
	}
	cfg.Notify.send("READY=1", d.status())
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			break loop
		case err := <-d.errc:
			d.health.failed.Store(true)
			log.Error("listener failed", zap.Error(err))
			runErr = err
			break loop
		case <-reload:
			cfg.Notify.send("RELOADING=1", monotonicUsec(), "STATUS=reloading "+cfg.ExportsFile)
			if err := d.Reload(); err != nil {
				logBlock(log, zapcore.ErrorLevel, refusedLines(cfg.ExportsFile, err))
			}
			cfg.Notify.send("READY=1", d.status())
		}
	}
	cfg.Notify.send("STOPPING=1", "STATUS=draining calls in progress")
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	d.Shutdown(sctx)
	return runErr
}

// Start opens the exports and starts every listener. Listener addresses
// may use port 0; NFSAddr and MountAddr tell what was bound.
func Start(ctx context.Context, log *zap.Logger, cfg Config) (_ *Daemon, err error) {
	log.Info("gonfsrdma starting", zap.String("version", cfg.Version), zap.Int("pid", os.Getpid()))
	var early earlyRDMA
	if cfg.RDMAAddr != "" && cfg.RDMAProvider == nil {
		// Before any NFS call is served: with a device, this reserves the
		// process for RDMA, so that no MKDIR as a caller switches
		// identity on a shared thread first (internal/threadcred).
		early.p, early.err = verbs.NewRDMAProvider()
		defer func() {
			if err != nil && early.p != nil && !early.taken {
				early.p.Close()
			}
		}()
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	key, err := handleKey(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	log.Info("state directory", zap.String("path", cfg.StateDir))

	table, err := loadTable(log, cfg)
	if err != nil {
		return nil, err
	}
	st := &exportState{log: log, handleKey: key, stateDir: cfg.StateDir}
	if !cfg.NoNLM {
		st.lockGraceEnd = predictedGrace(log, cfg)
	}
	set, _, err := st.build(table, nil)
	if err != nil {
		return nil, err
	}
	st.publish(set, nil, 0)
	d := &Daemon{log: log, cfg: cfg, st: st, errc: make(chan error, 8)}
	d.reloads.loaded(time.Now())
	if cfg.MetricsAddr != "" {
		d.clients = meter.NewClients(0)
	}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			defer cancel()
			d.Shutdown(sctx)
		}
	}()

	nfsSrv := nfs.NewServer(nfs.Config{Exports: st, Authorize: st.authorize, Log: log.Named("nfs")})
	st.nfs = nfsSrv
	mountSrv := mount.NewServer(log.Named("mount"), mountBackend{st})
	programs := []*oncrpc.Program{nfsSrv.Program(), mountSrv.Program()}
	if !cfg.NoNLM {
		if err := d.startLocking(log, cfg, st); err != nil {
			return nil, err
		}
		programs = append(programs, d.nlm.Program(), d.nsm.Program())
		st.lockGraceEnd = d.nsm.GraceEnd
		d.publishGrace()
	}
	// The duplicate request cache covers every non-idempotent procedure
	// of every program: NFS, and NLM's LOCK, UNLOCK, CANCEL, SHARE, ...
	d.drc = oncrpc.NewDRC(8192, 16<<20, 2*time.Minute)
	disp := oncrpc.NewDispatcher(log.Named("rpc"), d.drc, programs...)
	// Without --metrics-listen nobody reads the call counters: no atomic
	// add per call then.
	disp.SetCounting(cfg.MetricsAddr != "")
	d.disp = disp
	d.limits = oncrpc.NewLimits(oncrpc.LimitsConfig{MaxConns: cfg.MaxConns, MaxConnsPerClient: cfg.MaxConnsPerClient, BufferBudget: cfg.BufferBudget})
	lc := d.limits.Config()
	log.Info("limits", zap.Int("max_connections", lc.MaxConns), zap.Int("max_connections_per_client", lc.MaxConnsPerClient),
		zap.Int64("buffer_budget", lc.BufferBudget), zap.Duration("idle_timeout", cfg.IdleTimeout))
	d.rpc = oncrpc.NewServer(log.Named("rpc"), disp, d.serverConfig())

	serve := func(name string, f func() error) {
		go func() {
			if err := f(); err != nil && !errors.Is(err, oncrpc.ErrServerClosed) {
				d.errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	if d.nfsL, err = net.Listen("tcp", cfg.NFSAddr); err != nil {
		return nil, fmt.Errorf("NFS listener: %w", err)
	}
	serve("NFS/TCP", func() error { return d.rpc.ServeTCP(d.nfsL) })
	if d.mountL, err = net.Listen("tcp", cfg.MountAddr); err != nil {
		return nil, fmt.Errorf("MOUNT listener: %w", err)
	}
	serve("MOUNT/TCP", func() error { return d.rpc.ServeTCP(d.mountL) })
	mountPC, err := net.ListenPacket("udp", d.mountL.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("MOUNT UDP listener: %w", err)
	}
	serve("MOUNT/UDP", func() error { return d.rpc.ServeUDP(mountPC) })
	nfsPort, mountPort := portOf(d.nfsL.Addr().String()), portOf(d.mountL.Addr().String())
	log.Info("listening", zap.String("nfs_tcp", d.nfsL.Addr().String()), zap.String("mount_tcp_udp", d.mountL.Addr().String()))

	if !cfg.NoNLM {
		if err := d.serveLocking(cfg, serve); err != nil {
			return nil, err
		}
	} else {
		log.Warn("locking (NLM) is off (--no-nlm): clients must mount with -o nolock")
	}

	if d.rdma, d.rdmaPort, err = startRDMA(ctx, log, cfg, &early, disp, d.limits, d.clients, &d.rdmaWhyNot); err != nil {
		return nil, err
	}

	if !cfg.NoPortmap {
		maps := []rpcbind.Mapping{
			rpcbind.NewMapping(nfsProgram, 3, "tcp", nfsPort),
			rpcbind.NewMapping(mountProgram, 3, "tcp", mountPort),
			rpcbind.NewMapping(mountProgram, 3, "udp", mountPort),
			rpcbind.NewMapping(mountProgram, 1, "tcp", mountPort),
			rpcbind.NewMapping(mountProgram, 1, "udp", mountPort),
		}
		if d.rdma != nil {
			maps = append(maps, rpcbind.NewMapping(nfsProgram, 3, "rdma", d.rdmaPort))
		}
		if !cfg.NoNLM {
			maps = append(maps, d.lockMappings()...)
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		d.pm, err = rpcbind.Start(rctx, log.Named("rpcbind"), rpcbind.Config{Addr: cfg.PortmapAddr, Mappings: maps, Server: d.serverConfig()})
		cancel()
		if err != nil {
			log.Error("rpcbind unavailable; clients must name ports (mountport=, port=)", zap.Error(err))
			d.pm, err = nil, nil
		}
	}
	d.publishLocalPortmap()

	for _, e := range table.Exports {
		// The default export serves loopback clients only.
		server := "SERVER"
		if cfg.ExportsFile == "" {
			server = "127.0.0.1"
		}
		log.Info("mount with", zap.String("tcp", mountHint(server, e.Path, "tcp", nfsPort, mountPort, d.pm == nil, cfg.NoNLM)))
		if d.rdma != nil {
			log.Info("mount with", zap.String("rdma", mountHint(server, e.Path, "rdma", d.rdmaPort, mountPort, d.pm == nil, cfg.NoNLM)))
		}
	}
	if err := d.startMetrics(); err != nil {
		return nil, err
	}
	d.health.up.Store(true)
	logBlock(log, zapcore.InfoLevel, d.summary())
	return d, nil
}

// serverConfig is the TCP server configuration of NFS, MOUNT and rpcbind.
func (d *Daemon) serverConfig() oncrpc.ServerConfig {
	return oncrpc.ServerConfig{MaxInFlight: d.cfg.MaxInFlight, SpliceReads: d.cfg.SpliceReads, Limits: d.limits, IdleTimeout: d.cfg.IdleTimeout, Clients: d.clients}
}

// Limits returns the limits every listener of the daemon shares.
func (d *Daemon) Limits() *oncrpc.Limits { return d.limits }

// NFSAddr is the bound NFS/TCP address.
func (d *Daemon) NFSAddr() net.Addr { return d.nfsL.Addr() }

// PortmapAddr is the address rpcbind serves on (or the rpcbind this
// daemon registered with), nil without rpcbind.
func (d *Daemon) PortmapAddr() net.Addr {
	if d.pm == nil {
		return nil
	}
	return d.pm.Addr()
}

// RDMAPort is the RPC-over-RDMA port, 0 when RDMA is not served.
func (d *Daemon) RDMAPort() uint16 { return d.rdmaPort }

// MountAddr is the bound MOUNT address (TCP and UDP).
func (d *Daemon) MountAddr() net.Addr { return d.mountL.Addr() }

// Reload re-reads the exports file; on error the previous exports stay.
func (d *Daemon) Reload() (err error) {
	defer func() { d.reloads.record(err) }()
	if d.cfg.ExportsFile == "" {
		return errors.New("there is no exports file to reload")
	}
	t, err := loadTable(d.log, d.cfg)
	if err != nil {
		return err
	}
	prev := d.st.cur.Load()
	set, unused, err := d.st.build(t, prev)
	if err != nil {
		return err
	}
	d.st.publish(set, unused, reloadGrace)
	if d.nlm != nil {
		for _, e := range unused {
			if _, still := set.byFSID[e.nfs.FSID]; !still {
				d.nlm.ReleaseExport(e.nfs.FSID)
			}
		}
	}
	logBlock(d.log, zapcore.InfoLevel, reloadLines(d.cfg.ExportsFile, prev.table, t))
	return nil
}

// Shutdown unregisters from rpcbind, drains calls in progress and closes
// every listener and backend.
func (d *Daemon) Shutdown(ctx context.Context) {
	d.health.up.Store(false)
	if d.pm != nil {
		if err := d.pm.Close(ctx); err != nil {
			d.log.Warn("rpcbind close", zap.Error(err))
		}
	}
	if d.rdma != nil {
		if err := d.rdma.Shutdown(ctx); err != nil {
			d.log.Warn("RDMA shutdown", zap.Error(err))
		}
	}
	if d.rpc != nil {
		if err := d.rpc.Shutdown(ctx); err != nil {
			d.log.Warn("shutdown did not drain", zap.Error(err))
		}
	}
	d.closeLocking()
	d.st.closeAll()
	d.stopMetrics(ctx)
	d.log.Info("stopped")
}

func loadTable(log *zap.Logger, cfg Config) (*exports.Table, error) {
	if cfg.ExportsFile == "" {
		dir, err := filepath.Abs(cfg.DefaultExport)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("default export: %w", err)
		}
		log.Info("no --exports file: exporting the default directory read-write to loopback clients", zap.String("path", dir))
		return exports.Default(dir)
	}
	t, warnings, err := exports.Load(cfg.ExportsFile, exports.ParseOptions{BackendAvailable: BackendAvailable})
	for _, w := range warnings {
		log.Warn("exports", zap.String("warning", w.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("exports file %s:\n%w", cfg.ExportsFile, err)
	}
	log.Info("exports loaded", zap.String("file", cfg.ExportsFile), zap.Int("exports", len(t.Exports)))
	return t, nil
}

// handleKey returns the secret that authenticates OS-backend file handles,
// kept in the state directory so handles survive restarts.
func handleKey(stateDir string) ([]byte, error) {
	p := filepath.Join(stateDir, "fhkey")
	key, err := os.ReadFile(p)
	if err == nil && len(key) >= 16 {
		return key, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("handle key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("handle key: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return nil, fmt.Errorf("handle key: %w", err)
	}
	return key, nil
}

// portOf returns the port of a "host:port" address, 0 if it has none.
func portOf(addr string) uint16 {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

// mountHint is the mount command for an export. Locking needs the
// client to find NLM through rpcbind: without rpcbind, or with --no-nlm,
// the hint says nolock.
func mountHint(server, path, proto string, port, mountPort uint16, noPortmap, noNLM bool) string {
	opts := "vers=3,proto=" + proto + ",port=" + strconv.Itoa(int(port))
	if noPortmap {
		opts += ",mountport=" + strconv.Itoa(int(mountPort)) + ",mountproto=tcp"
	}
	if noPortmap || noNLM {
		opts += ",nolock"
	}
	return "mount -t nfs -o " + opts + " " + server + ":" + path + " /mnt"
}

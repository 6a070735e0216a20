package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// Defaults of the zero Config fields.
const (
	DefaultSize         = 1 << 30
	DefaultBlock        = 1 << 20
	DefaultQD           = 4
	DefaultRandQD       = 16
	DefaultRandBlock    = 4 << 10
	DefaultRandDuration = 10 * time.Second
	DefaultFiles        = 2000
	DefaultNFSPort      = 2049
	DefaultRDMAPort     = 20049
	DefaultMountPort    = 20048
)

// Phase names, in the order Run runs them.
const (
	PhaseWrite    = "seq-write"
	PhaseRead     = "seq-read"
	PhaseRandRead = "rand-read"
	PhaseCreate   = "create"
	PhaseStat     = "stat"
	PhaseRemove   = "remove"
)

// Transports.
const (
	TCP  = "tcp"
	RDMA = "rdma"
)

// Config describes one run. Zero fields take the defaults above.
type Config struct {
	Host   string // server host name or address
	Export string // exported path to MNT
	// Transport is TCP (default) or RDMA; MOUNT always goes over TCP.
	Transport string
	// Provider is the verbs provider for RDMA (verbs.NewRDMAProvider, or
	// a software fabric in tests).
	Provider verbs.Provider
	// Port is the NFS port (2049, or 20049 for RDMA). MountPort, when 0,
	// is asked of rpcbind on port 111, falling back to 20048.
	Port, MountPort int

	Size  int64 // sequential file size
	Block int   // sequential transfer size (at most 1 MiB)
	QD    int   // sequential and metadata queue depth

	RandQD    int
	RandBlock int
	// RandDuration bounds the random-read phase; RandOps, when positive,
	// runs that many reads instead.
	RandDuration time.Duration
	RandOps      int64

	Files int // files created, stat'ed and removed

	UID, GID uint32 // AUTH_SYS identity
	// Seed of the data pattern; 0 picks one at random.
	Seed uint64
	// Skip names phases not to run (seq-read needs seq-write; rand-read
	// needs seq-write).
	Skip map[string]bool

	// ServerCPU, when set, returns the server's cumulative CPU time; Run
	// samples it around each phase.
	ServerCPU func() (time.Duration, error)
	// OnPhase, when set, is called before (start true) and after each
	// phase (profiling hooks in tests).
	OnPhase func(phase string, start bool)
}

func (c *Config) setDefaults() error {
	if c.Transport == "" {
		c.Transport = TCP
	}
	switch c.Transport {
	case TCP:
		if c.Port == 0 {
			c.Port = DefaultNFSPort
		}
	case RDMA:
		if c.Port == 0 {
			c.Port = DefaultRDMAPort
		}
		if c.Provider == nil {
			return errors.New("bench: RDMA needs a verbs provider")
		}
	default:
		return fmt.Errorf("bench: transport %q is not tcp or rdma", c.Transport)
	}
	if c.Size <= 0 {
		c.Size = DefaultSize
	}
	if c.Block <= 0 {
		c.Block = DefaultBlock
	}
	if c.Block > wire.MaxData {
		return fmt.Errorf("bench: block size %d exceeds the NFS maximum %d", c.Block, wire.MaxData)
	}
	if c.QD <= 0 {
		c.QD = DefaultQD
	}
	if c.RandQD <= 0 {
		c.RandQD = DefaultRandQD
	}
	if c.RandBlock <= 0 {
		c.RandBlock = DefaultRandBlock
	}
	if int64(c.RandBlock) > c.Size {
		c.RandBlock = int(c.Size)
	}
	if c.RandDuration <= 0 {
		c.RandDuration = DefaultRandDuration
	}
	if c.Files <= 0 {
		c.Files = DefaultFiles
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64() | 1
	}
	if c.Host == "" || c.Export == "" {
		return errors.New("bench: server host and export path are required")
	}
	return nil
}

// Result is what Run measured.
type Result struct {
	Server    string  `json:"server"`
	Transport string  `json:"transport"`
	Size      int64   `json:"size_bytes"`
	Block     int     `json:"block_bytes"`
	QD        int     `json:"qd"`
	RandQD    int     `json:"rand_qd"`
	RandBlock int     `json:"rand_block_bytes"`
	Files     int     `json:"files"`
	Seed      uint64  `json:"seed"`
	Phases    []Phase `json:"phases"`
}

// Phase is one workload's numbers. Rates are per wall-clock second.
type Phase struct {
	Name      string  `json:"name"`
	Ops       int64   `json:"ops"`   // NFS-level operations (a stat is LOOKUP+GETATTR)
	Bytes     int64   `json:"bytes"` // data moved (zero for metadata)
	Seconds   float64 `json:"seconds"`
	MiBps     float64 `json:"mib_per_s,omitempty"`
	OpsPerSec float64 `json:"ops_per_s"`
	// MeanLatencyUs is the mean time a call was outstanding: from the
	// call to its decoded reply, without the client's checks after it.
	MeanLatencyUs float64 `json:"mean_latency_us"`
	// MeanVerifyUs is the mean time per op the client spent checking
	// READ data against the pattern, after the call and outside
	// MeanLatencyUs (zero for phases that read nothing). Wall-clock
	// rates include it.
	MeanVerifyUs float64 `json:"mean_verify_us"`
	// ServerCPUSeconds is the server's user+system CPU during the phase,
	// or -1 without Config.ServerCPU.
	ServerCPUSeconds float64 `json:"server_cpu_s"`
	CPUPerGiB        float64 `json:"server_cpu_s_per_gib,omitempty"`
	CPUPerOpUs       float64 `json:"server_cpu_us_per_op,omitempty"`
}

// Phase returns the named phase, or nil.
func (r *Result) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// session is one mounted run.
type session struct {
	cfg      Config
	nfs      *client.Client
	dir      []byte // working directory handle
	file     []byte // sequential file handle
	progress io.Writer
}

// Run mounts cfg.Export, runs the workloads and cleans up. progress, when
// not nil, receives a \r-updated status line.
func Run(ctx context.Context, cfg Config, progress io.Writer) (res Result, err error) {
	if err := cfg.setDefaults(); err != nil {
		return res, err
	}
	res = Result{
		Server: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)) + ":" + cfg.Export, Transport: cfg.Transport,
		Size: cfg.Size, Block: cfg.Block, QD: cfg.QD, RandQD: cfg.RandQD, RandBlock: cfg.RandBlock,
		Files: cfg.Files, Seed: cfg.Seed,
	}
	cred := oncrpc.NewAuthSys("gonfsrdma-bench", cfg.UID, cfg.GID, cfg.GID)

	root, err := mnt(ctx, &cfg, cred)
	if err != nil {
		return res, err
	}
	caller, err := dialNFS(ctx, &cfg, cred)
	if err != nil {
		return res, err
	}
	defer caller.Close()
	s := &session{cfg: cfg, nfs: client.New(caller).WithCred(cred), progress: progress}

	name := fmt.Sprintf("gonfsrdma-bench.%x", cfg.Seed)
	mk, err := s.nfs.Mkdir(ctx, root, name, wire.Sattr{Mode: wire.SetUint32{Set: true, V: 0o755}})
	if err != nil {
		return res, fmt.Errorf("bench: creating the working directory %s: %w", name, err)
	}
	if s.dir, err = handleOf(ctx, s.nfs, root, name, mk.FH); err != nil {
		return res, err
	}
	defer func() {
		// Clean up with a fresh context so a cancelled run still does.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if s.file != nil {
			s.nfs.Remove(cctx, s.dir, seqName)
		}
		if _, rerr := s.nfs.Rmdir(cctx, root, name); rerr != nil && err == nil {
			err = fmt.Errorf("bench: removing the working directory %s: %w", name, rerr)
		}
	}()

	phases := []struct {
		name string
		run  func(context.Context, *Phase) error
	}{
		{PhaseWrite, s.seqWrite},
		{PhaseRead, s.seqRead},
		{PhaseRandRead, s.randRead},
		{PhaseCreate, s.create},
		{PhaseStat, s.stat},
		{PhaseRemove, s.remove},
	}
	for _, p := range phases {
		if cfg.Skip[p.name] {
			continue
		}
		if s.file == nil && (p.name == PhaseRead || p.name == PhaseRandRead) {
			return res, fmt.Errorf("bench: %s needs %s", p.name, PhaseWrite)
		}
		ph := Phase{Name: p.name, ServerCPUSeconds: -1}
		if err := s.measure(ctx, &ph, p.run); err != nil {
			return res, err
		}
		res.Phases = append(res.Phases, ph)
	}
	return res, nil
}

// measure runs one phase with timing, CPU sampling and hooks.
func (s *session) measure(ctx context.Context, ph *Phase, run func(context.Context, *Phase) error) error {
	var cpu0 time.Duration
	if s.cfg.ServerCPU != nil {
		c, err := s.cfg.ServerCPU()
		if err != nil {
			return fmt.Errorf("bench: server CPU: %w", err)
		}
		cpu0 = c
	}
	if s.cfg.OnPhase != nil {
		s.cfg.OnPhase(ph.Name, true)
	}
	start := time.Now()
	err := run(ctx, ph)
	ph.Seconds = time.Since(start).Seconds()
	if s.cfg.OnPhase != nil {
		s.cfg.OnPhase(ph.Name, false)
	}
	if err != nil {
		if s.progress != nil {
			fmt.Fprintln(s.progress)
		}
		return fmt.Errorf("bench: %s: %w", ph.Name, err)
	}
	if s.cfg.ServerCPU != nil {
		c, err := s.cfg.ServerCPU()
		if err != nil {
			return fmt.Errorf("bench: server CPU: %w", err)
		}
		ph.ServerCPUSeconds = (c - cpu0).Seconds()
	}
	ph.derive()
	return nil
}

// derive fills the rates from the counts.
func (ph *Phase) derive() {
	if ph.Seconds > 0 {
		ph.OpsPerSec = float64(ph.Ops) / ph.Seconds
		ph.MiBps = float64(ph.Bytes) / (1 << 20) / ph.Seconds
	}
	if ph.ServerCPUSeconds >= 0 {
		if ph.Bytes > 0 {
			ph.CPUPerGiB = ph.ServerCPUSeconds / (float64(ph.Bytes) / (1 << 30))
		}
		if ph.Ops > 0 {
			ph.CPUPerOpUs = ph.ServerCPUSeconds / float64(ph.Ops) * 1e6
		}
	}
}

func mnt(ctx context.Context, cfg *Config, cred oncrpc.OpaqueAuth) ([]byte, error) {
	if cfg.MountPort == 0 {
		cfg.MountPort = DefaultMountPort
		if p, err := askRpcbind(ctx, cfg.Host); err == nil && p != 0 {
			cfg.MountPort = int(p)
		}
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MountPort))
	mc, err := oncrpc.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: MOUNT: %w", err)
	}
	defer mc.Close()
	mc.SetCred(cred)
	fh, _, err := mount.Mnt(ctx, mc, cfg.Export)
	if err != nil {
		return nil, fmt.Errorf("bench: MNT %s at %s: %w", cfg.Export, addr, err)
	}
	// The mount list entry is only bookkeeping; drop it again.
	mount.Umnt(ctx, mc, cfg.Export)
	return fh, nil
}

func askRpcbind(ctx context.Context, host string) (uint16, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := oncrpc.Dial(ctx, "tcp", net.JoinHostPort(host, "111"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return rpcbind.GetPort(ctx, c, 100005, 3, rpcbind.ProtoTCP)
}

func dialNFS(ctx context.Context, cfg *Config, cred oncrpc.OpaqueAuth) (oncrpc.Caller, error) {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	if cfg.Transport == RDMA {
		c, err := rdmaclient.Dial(ctx, cfg.Provider, addr, rdmaclient.Config{Cred: cred, Credits: max(cfg.QD, cfg.RandQD)})
		if err != nil {
			return nil, fmt.Errorf("bench: NFS over RDMA at %s: %w", addr, err)
		}
		return c, nil
	}
	c, err := oncrpc.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: NFS over TCP at %s: %w", addr, err)
	}
	c.SetCred(cred)
	return c, nil
}

// handleOf returns fh when the server sent one, else LOOKUPs name.
func handleOf(ctx context.Context, c *client.Client, dir []byte, name string, fh wire.PostOpFH) ([]byte, error) {
	if fh.Set && len(fh.FH) > 0 {
		return fh.FH, nil
	}
	res, err := c.Lookup(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return res.FH, nil
}

// parallel runs n workers until one fails or all return.
func parallel(ctx context.Context, n int, work func(ctx context.Context, worker int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(ctx, w); err != nil {
				once.Do(func() { firstErr = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// meter counts progress and prints the status line.
type meter struct {
	ops, bytes, busy atomic.Int64 // busy: summed call latency in ns
	verify           atomic.Int64 // summed client verify time in ns
	stop             chan struct{}
	done             chan struct{}
}

func (s *session) startMeter(ph *Phase, total int64, unitBytes bool) *meter {
	m := &meter{stop: make(chan struct{}), done: make(chan struct{})}
	if s.progress == nil {
		close(m.done)
		return m
	}
	start := time.Now()
	line := func() {
		el := time.Since(start).Seconds()
		done := m.ops.Load()
		if unitBytes {
			done = m.bytes.Load()
		}
		pct := ""
		if total > 0 {
			pct = fmt.Sprintf("%5.1f%% ", 100*float64(done)/float64(total))
		}
		rate := ""
		if el > 0 {
			if unitBytes {
				rate = fmt.Sprintf("%9.1f MiB/s", float64(m.bytes.Load())/(1<<20)/el)
			} else {
				rate = fmt.Sprintf("%9.0f ops/s", float64(m.ops.Load())/el)
			}
		}
		fmt.Fprintf(s.progress, "\r%-10s %s%s  %6.1fs ", ph.Name, pct, rate, el)
	}
	go func() {
		defer close(m.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				line()
			case <-m.stop:
				line()
				fmt.Fprintln(s.progress)
				return
			}
		}
	}()
	return m
}

// finish stops the status line and copies the counts into ph.
func (m *meter) finish(ph *Phase) {
	select {
	case <-m.done:
	default:
		close(m.stop)
		<-m.done
	}
	ph.Ops, ph.Bytes = m.ops.Load(), m.bytes.Load()
	if ph.Ops > 0 {
		ph.MeanLatencyUs = float64(m.busy.Load()) / float64(ph.Ops) / 1e3
		ph.MeanVerifyUs = float64(m.verify.Load()) / float64(ph.Ops) / 1e3
	}
}

// add counts one op of bytes whose call took lat.
func (m *meter) add(bytes int64, lat time.Duration) {
	m.busy.Add(int64(lat))
	m.bytes.Add(bytes)
	m.ops.Add(1)
}

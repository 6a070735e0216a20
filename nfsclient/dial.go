package nfsclient

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/client"
	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// RDMAOptions tune RPC-over-RDMA connections.
type RDMAOptions struct {
	// Provider makes the connections (nil: real RDMA through rdma-core,
	// verbs.NewRDMAProvider). Tests pass a *softfabric.Fabric.
	Provider verbs.Provider
	// Addr, "host:port", replaces Host and Port for the RDMA connection
	// (MOUNT still goes to Host).
	Addr string
	// Credits is the most calls in flight per connection (default 64).
	Credits int
	// LocalAddr, "host:port", binds the connection's source address
	// (empty: any).
	LocalAddr string
}

// Dial mounts the export named by rawURL (see ParseURL) and returns its
// file system. The context bounds the connection set-up only.
func Dial(ctx context.Context, rawURL string) (*FS, error) {
	cfg, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return DialConfig(ctx, cfg)
}

// DialConfig is Dial with a Config.
func DialConfig(ctx context.Context, cfg Config) (*FS, error) {
	if cfg.Host == "" {
		return nil, errors.New("nfsclient: no host")
	}
	if cfg.Proto == "" {
		cfg.Proto = ProtoTCP
	}
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	if cfg.NConnect <= 0 {
		cfg.NConnect = 1
	}
	if cfg.NConnect > maxNConnect {
		return nil, fmt.Errorf("nfsclient: nconnect %d exceeds %d", cfg.NConnect, maxNConnect)
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = -1
	}
	if cfg.MaxUncommitted <= 0 {
		cfg.MaxUncommitted = DefaultMaxUncommitted
	}
	if cfg.Machine == "" {
		cfg.Machine, _ = os.Hostname()
		if len(cfg.Machine) > 255 {
			cfg.Machine = cfg.Machine[:255]
		}
	}
	cred := oncrpc.NewAuthSys(cfg.Machine, cfg.UID, cfg.GID, cfg.GIDs...)

	export, root, err := mountExport(ctx, &cfg, cred)
	if err != nil {
		return nil, err
	}
	f := &FS{fsState: &fsState{cfg: cfg, cred: cred, export: export, root: root}, ctx: context.Background()}
	f.xids.Store(mrand.Uint32()) // apart from any other client's on the server
	f.sub = strings.Trim(strings.TrimPrefix(cfg.Path, export), "/")
	if err := f.connect(ctx); err != nil {
		return nil, err
	}
	if err := f.sizeIO(ctx); err != nil {
		f.pool.Close()
		return nil, err
	}
	return f, nil
}

// mountExport finds the export for cfg.Path and MOUNTs it: cfg.Export
// when given, else the longest listed export that is a prefix of the path,
// else (a server that cannot list its exports) the path itself, as the
// kernel's mount does. A server that MOUNTs any path it is given (go-nfs
// answers every MNT with its root) would make that last choice put files
// in the wrong place, so it is probed first and refused with advice.
func mountExport(ctx context.Context, cfg *Config, cred oncrpc.OpaqueAuth) (string, []byte, error) {
	mc, err := dialMount(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("nfsclient: MOUNT service of %s: %w", cfg.Host, err)
	}
	defer mc.Close()
	mc.SetCred(cred)
	export := cfg.Export
	if export == "" {
		list, err := mount.Exports(ctx, mc)
		if err == nil {
			best := ""
			for _, e := range list {
				if p := strings.TrimSuffix(e.Path, "/"); underExport(cfg.Path, p) && len(p) >= len(best) {
					best = p
				}
			}
			if best != "" || hasRootExport(list) {
				export = best
				if export == "" {
					export = "/"
				}
			}
		}
		if export == "" {
			if ignoresMountPath(ctx, mc) {
				return "", nil, fmt.Errorf("nfsclient: %s lists no exports (MOUNT EXPORT: %v) and MOUNTs any path, even one that does not exist: name the export in the URL with ?export=PATH", cfg.Host, err)
			}
			export = cfg.Path
		}
	}
	fh, _, err := mount.Mnt(ctx, mc, export)
	if err != nil {
		return "", nil, fmt.Errorf("nfsclient: MOUNT %s:%s: %w", cfg.Host, export, err)
	}
	return export, fh, nil
}

// ignoresMountPath reports whether the server MOUNTs a path that cannot
// exist. The probe's mount is undone.
func ignoresMountPath(ctx context.Context, mc *oncrpc.Client) bool {
	var nonce [8]byte
	rand.Read(nonce[:])
	probe := fmt.Sprintf("/nonexistent-gonfsrdma-probe-%x", nonce)
	if _, _, err := mount.Mnt(ctx, mc, probe); err != nil {
		return false
	}
	mount.Umnt(ctx, mc, probe)
	return true
}

func hasRootExport(list []mount.Export) bool {
	for _, e := range list {
		if e.Path == "/" {
			return true
		}
	}
	return false
}

// dialMount connects to MOUNT v3 over TCP: cfg.MountPort, or the port
// rpcbind on port 111 reports.
func dialMount(ctx context.Context, cfg *Config) (*oncrpc.Client, error) {
	port := cfg.MountPort
	if port == 0 {
		pm, err := oncrpc.Dial(ctx, "tcp", net.JoinHostPort(cfg.Host, "111"))
		if err != nil {
			return nil, fmt.Errorf("rpcbind (give mountport= without one): %w", err)
		}
		p, err := rpcbind.GetPort(ctx, pm, mount.Prog, mount.Vers3, 6)
		pm.Close()
		if err != nil {
			return nil, fmt.Errorf("rpcbind GETPORT: %w", err)
		}
		if p == 0 {
			return nil, errors.New("rpcbind: MOUNT v3 over TCP is not registered")
		}
		port = int(p)
	}
	return oncrpc.Dial(ctx, "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(port)))
}

// connect opens cfg.NConnect connections (falling back to TCP when asked).
func (f *FS) connect(ctx context.Context) error {
	proto := f.cfg.Proto
	conns := make([]*reconn, f.cfg.NConnect)
	for i := range conns {
		conns[i] = &reconn{fs: f, proto: proto}
	}
	if err := conns[0].redial(ctx); err != nil {
		if proto != ProtoRDMA || !f.cfg.FallbackTCP {
			return err
		}
		proto = ProtoTCP
		f.fellBack = err
		for _, c := range conns {
			c.proto = proto
		}
		if err := conns[0].redial(ctx); err != nil {
			return err
		}
	}
	for _, c := range conns[1:] {
		if err := c.redial(ctx); err != nil {
			for _, d := range conns {
				d.close()
			}
			return err
		}
	}
	f.proto = proto
	f.pool = &pool{conns: conns}
	f.nfs = client.New(f.pool).WithCred(f.cred)
	return nil
}

// sizeIO picks the READ and WRITE sizes from FSINFO.
func (f *FS) sizeIO(ctx context.Context) error {
	res, err := f.nfs.Fsinfo(ctx, f.root)
	if err != nil {
		return fmt.Errorf("nfsclient: FSINFO: %w", err)
	}
	pick := func(pref, max uint32) int {
		n := maxBlockSize
		if pref != 0 {
			n = min(n, int(pref))
		}
		if max != 0 {
			n = min(n, int(max))
		}
		return max4k(n)
	}
	f.rsize, f.wsize = pick(res.RTPref, res.RTMax), pick(res.WTPref, res.WTMax)
	if bs := f.cfg.BlockSize; bs > 0 {
		f.rsize = min(bs, maxOr(res.RTMax, bs))
		f.wsize = min(bs, maxOr(res.WTMax, bs))
	}
	f.nfs.SetIOSize(uint32(f.rsize), uint32(f.wsize))
	return nil
}

func max4k(n int) int {
	if n >= 4096 {
		return n &^ 4095
	}
	return max(n, 512)
}

func maxOr(v uint32, def int) int {
	if v == 0 {
		return def
	}
	return int(v)
}

// pool spreads calls over its connections round robin.
type pool struct {
	conns []*reconn
	next  atomic.Uint32
}

func (p *pool) Call(ctx context.Context, cc *oncrpc.ClientCall) ([]byte, error) {
	c := p.conns[int(p.next.Add(1))%len(p.conns)]
	return c.Call(ctx, cc)
}

func (p *pool) Close() error {
	for _, c := range p.conns {
		c.close()
	}
	return nil
}

// transport is a connected caller that says when it died.
type transport interface {
	oncrpc.Caller
	Done() <-chan struct{}
}

// reconn is one connection slot: it redials when its connection dies and
// sends a call again on the new connection.
type reconn struct {
	fs    *FS
	proto Proto

	mu     sync.Mutex
	cur    transport
	closed bool
}

var errFSClosed = errors.New("nfsclient: file system closed")

func (r *reconn) get(ctx context.Context) (transport, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errFSClosed
	}
	if r.cur != nil {
		select {
		case <-r.cur.Done():
			r.cur.Close()
			r.cur = nil
			r.fs.stats.reconnects.Add(1)
		default:
			return r.cur, nil
		}
	}
	t, err := r.fs.dialTransport(ctx, r.proto)
	if err != nil {
		return nil, err
	}
	r.cur = t
	return t, nil
}

func (r *reconn) redial(ctx context.Context) error {
	_, err := r.get(ctx)
	return err
}

// drop forgets t if it is still the current connection.
func (r *reconn) drop(t transport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == t {
		r.cur.Close()
		r.cur = nil
		r.fs.stats.reconnects.Add(1)
	}
}

func (r *reconn) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// Call sends cc, and again on a fresh connection (up to Config.Retries
// times, backing off) when the connection broke or an attempt timed out.
// Every attempt carries the same XID, as the kernel client's
// retransmissions do, so the server's duplicate request cache answers a
// resent call it already executed; only if the server restarted in
// between may a non-idempotent call (CREATE, REMOVE, RENAME...) report
// what its first execution did (NFS3ERR_EXIST, NFS3ERR_NOENT), as with
// any NFSv3 client.
func (r *reconn) Call(ctx context.Context, cc *oncrpc.ClientCall) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cc.XID == 0 {
		c := *cc
		c.XID = r.fs.xids.Add(1)
		cc = &c
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if attempt > r.fs.cfg.Retries {
				return nil, lastErr
			}
			r.fs.stats.retries.Add(1)
			backoff := min(50*time.Millisecond<<(attempt-1), 2*time.Second)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		t, err := r.get(ctx)
		if err != nil {
			if errors.Is(err, errFSClosed) || ctx.Err() != nil {
				return nil, err
			}
			lastErr = err
			continue
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if r.fs.cfg.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, r.fs.cfg.Timeout)
		}
		res, err := t.Call(actx, cc)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
		if errors.Is(err, rdmaclient.ErrClosed) {
			// The RDMA client fails its calls just before it reports
			// itself done: wait for that, then reconnect.
			select {
			case <-t.Done():
			case <-time.After(time.Second):
			}
		}
		select {
		case <-t.Done():
			r.drop(t)
			continue
		default:
		}
		if errors.Is(err, syscall.EFAULT) {
			// The payload's memory could not be read (a mapped local
			// file truncated under the copy): part of the record may
			// be on the wire, so the connection is unusable, and
			// sending again would fail the same way.
			r.drop(t)
			return nil, err
		}
		if sendBroke(err) {
			// The connection broke under the call's send (a reset
			// the reader has not seen yet): the call may or may not
			// have reached the server; send it again on a new
			// connection (same XID: a duplicate is answered from the
			// server's cache).
			r.drop(t)
			continue
		}
		if timedOut {
			// No reply within Config.Timeout: the server may have
			// vanished without a word (its disconnect lost on a dead
			// link), leaving this connection looking alive. Resend on a
			// new connection, as the kernel client does after timeo:
			// the same XID may not be in flight twice on one
			// connection. Dropping it fails the other calls on it,
			// which are resent the same way.
			lastErr = fmt.Errorf("nfsclient: no reply within %v (timeout=): %w", r.fs.cfg.Timeout, err)
			r.drop(t)
			continue
		}
		return nil, err
	}
}

// sendBroke reports whether err is a connection's failure to send (a
// write on a socket the peer reset or closed), not an answer.
func sendBroke(err error) bool {
	var op *net.OpError
	return (errors.As(err, &op) && op.Op == "write") || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// dialTransport makes one connection.
func (f *FS) dialTransport(ctx context.Context, proto Proto) (transport, error) {
	switch proto {
	case ProtoTCP:
		c, err := oncrpc.Dial(ctx, "tcp", f.cfg.nfsAddr(ProtoTCP))
		if err != nil {
			return nil, err
		}
		c.SetCred(f.cred)
		return c, nil
	case ProtoRDMA:
		prov := f.cfg.RDMA.Provider
		if prov == nil {
			p, err := f.rdmaProvider()
			if err != nil {
				return nil, err
			}
			prov = p
		}
		addr := f.cfg.RDMA.Addr
		if addr == "" {
			addr = f.cfg.nfsAddr(ProtoRDMA)
		}
		c, err := rdmaclient.Dial(ctx, prov, addr, rdmaclient.Config{
			Credits: f.cfg.RDMA.Credits, RemoteInvalidate: true, Cred: f.cred, LocalAddr: f.cfg.RDMA.LocalAddr,
		})
		if err != nil {
			return nil, fmt.Errorf("nfsclient: RPC-over-RDMA to %s: %w", addr, err)
		}
		f.mu.Lock()
		f.rdmaConns = append(f.rdmaConns, c)
		f.mu.Unlock()
		return c, nil
	}
	return nil, fmt.Errorf("nfsclient: unknown transport %q", proto)
}

// rdmaProvider opens rdma-core once per FS.
func (f *FS) rdmaProvider() (verbs.Provider, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ownProv != nil {
		return f.ownProv, nil
	}
	if err := verbs.RaiseMemlock(256 << 20); err != nil {
		return nil, err
	}
	p, err := verbs.NewRDMAProvider()
	if err != nil {
		return nil, err
	}
	f.ownProv = p
	return p, nil
}

// Close closes the connections and tells the server the export is no
// longer mounted (UMNT, best effort). Files still open lose their
// uncommitted data: Close or Sync them first.
func (f *FS) Close() error {
	f.pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if mc, err := dialMount(ctx, &f.cfg); err == nil {
		mc.SetCred(f.cred)
		mount.Umnt(ctx, mc, f.export)
		mc.Close()
	}
	if f.ownProv != nil {
		f.ownProv.Close()
	}
	return nil
}

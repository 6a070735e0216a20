package conformance

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
)

// rpcbind (RFC 1833): portmapper version 2 and rpcbind versions 3 and 4.

const protoTCP = 6

func (e *Env) pmapClient() (*oncrpc.Client, error) {
	c, err := e.DialRaw(e.PortmapAddr)
	return c, ok(err, "connecting to rpcbind at "+e.PortmapAddr)
}

func portOf(addr string) uint16 {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

func testPmapNull(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	for _, v := range []uint32{rpcbind.VersPmap, rpcbind.Vers3, rpcbind.Vers4} {
		if err := rpcbind.Null(e.Ctx, c, v); err != nil {
			return ok(err, fmt.Sprintf("rpcbind version %d NULL", v))
		}
	}
	return nil
}

func testPmapGetPort(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := rpcbind.GetPort(e.Ctx, c, mount.Prog, mount.Vers3, protoTCP)
	if err != nil {
		return ok(err, "GETPORT MOUNT v3 tcp")
	}
	if p != portOf(e.MountAddr) {
		return fmt.Errorf("GETPORT MOUNT v3 tcp: %d, MOUNT answers on %d", p, portOf(e.MountAddr))
	}
	if e.Cfg.Transport != "tcp" {
		return nil
	}
	p, err = rpcbind.GetPort(e.Ctx, c, wire.Program, wire.Version, protoTCP)
	if err != nil {
		return ok(err, "GETPORT NFS v3 tcp")
	}
	if p != portOf(e.RPCAddr) {
		return fmt.Errorf("GETPORT NFS v3 tcp: %d, NFS answers on %d", p, portOf(e.RPCAddr))
	}
	return nil
}

func testPmapGetPortUnknown(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := rpcbind.GetPort(e.Ctx, c, 0x20000777, 1, protoTCP)
	if errors.Is(err, rpcbind.ErrNotRegistered) {
		return nil
	}
	return fmt.Errorf("GETPORT of an unregistered program: port %d, %v; want 0", p, err)
}

func testPmapDump(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := rpcbind.PmapDump(e.Ctx, c)
	if err != nil {
		return ok(err, "PMAPPROC_DUMP")
	}
	for _, m := range l {
		if m.Prog == mount.Prog && m.Vers == mount.Vers3 && m.Prot == protoTCP && uint16(m.Port) == portOf(e.MountAddr) {
			return nil
		}
	}
	return fmt.Errorf("PMAPPROC_DUMP (%d entries) lacks MOUNT v3 tcp port %d", len(l), portOf(e.MountAddr))
}

func testRpcbGetAddr(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	ua, err := rpcbind.GetAddr(e.Ctx, c, mount.Prog, mount.Vers3, "tcp")
	if err != nil {
		return ok(err, "RPCBPROC_GETADDR MOUNT v3 tcp")
	}
	ap, err := rpcbind.ParseUaddr(ua)
	if err != nil {
		return fmt.Errorf("GETADDR returned %q: %v", ua, err)
	}
	if ap.Port() != portOf(e.MountAddr) {
		return fmt.Errorf("GETADDR MOUNT v3 tcp: %q (port %d), MOUNT answers on %d", ua, ap.Port(), portOf(e.MountAddr))
	}
	ua, err = rpcbind.GetAddr(e.Ctx, c, 0x20000777, 1, "tcp")
	if err != nil && !errors.Is(err, rpcbind.ErrNotRegistered) {
		return ok(err, "GETADDR of an unregistered program")
	}
	if ua != "" {
		return fmt.Errorf("GETADDR of an unregistered program: %q, want the empty string", ua)
	}
	return nil
}

func testRpcbDump(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := rpcbind.Dump(e.Ctx, c)
	if err != nil {
		return ok(err, "RPCBPROC_DUMP")
	}
	nfs, mnt := e.Cfg.Transport != "tcp", false
	for _, m := range l {
		ap, err := rpcbind.ParseUaddr(m.Addr)
		if err != nil {
			continue
		}
		if m.Prog == wire.Program && m.Vers == 3 && m.Netid == "tcp" && ap.Port() == portOf(e.RPCAddr) {
			nfs = true
		}
		if m.Prog == mount.Prog && m.Vers == 3 && m.Netid == "tcp" && ap.Port() == portOf(e.MountAddr) {
			mnt = true
		}
	}
	if !nfs || !mnt {
		return fmt.Errorf("RPCBPROC_DUMP (%d entries): NFS v3 tcp listed %v, MOUNT v3 tcp listed %v", len(l), nfs, mnt)
	}
	return nil
}

func testRpcbGetTime(e *Env) error {
	c, err := e.pmapClient()
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := rpcbind.GetTime(e.Ctx, c)
	if err != nil {
		return ok(err, "RPCBPROC_GETTIME")
	}
	d := time.Since(time.Unix(int64(t), 0))
	if d < -time.Hour || d > time.Hour {
		return Warnf("RPCBPROC_GETTIME is %v away from this host's clock", d)
	}
	return nil
}

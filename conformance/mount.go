package conformance

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// MOUNT version 3 (RFC 1813 appendix I), over TCP to the MOUNT port.

func (e *Env) mountClient() (*oncrpc.Client, error) {
	c, err := e.DialRaw(e.MountAddr)
	return c, ok(err, "connecting to MOUNT")
}

func testMountNull(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	return ok(mount.Null(e.Ctx, c), "MOUNTPROC3_NULL")
}

func testMountMnt(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	fh, flavors, err := mount.Mnt(e.Ctx, c, e.Cfg.Export)
	if err != nil {
		return ok(err, "MNT")
	}
	if len(fh) == 0 || len(fh) > mount.FHSIZE3 {
		return fmt.Errorf("MNT handle of %d bytes", len(fh))
	}
	sys := false
	for _, f := range flavors {
		sys = sys || f == mount.AuthSys
	}
	if !sys {
		return fmt.Errorf("MNT flavors %v lack AUTH_SYS", flavors)
	}
	a, err := e.attr(fh)
	if err != nil {
		return ok(err, "GETATTR of the MNT handle")
	}
	if a.Type != wire.TypeDir {
		return fmt.Errorf("MNT handle has type %v", a.Type)
	}
	return nil
}

func testMountNoEnt(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, _, err = mount.Mnt(e.Ctx, c, "/no/such/export/for/conformance")
	var st mount.Stat
	if !errors.As(err, &st) {
		return fmt.Errorf("MNT of a path that does not exist: %v, want MNT3ERR_NOENT", err)
	}
	// Strict: NOENT, the path is in no export (RFC 1813 5.1.5); mountd
	// answers ACCES, which the tolerant profile takes too.
	return oneOf(e, "MNT of a path that does not exist", st, mount.StatNoEnt, mount.StatAcces)
}

func testMountLongPath(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, _, err = mount.Mnt(e.Ctx, c, "/"+strings.Repeat("p", mount.MNTPATHLEN))
	var st mount.Stat
	if errors.As(err, &st) && (st == mount.StatNameTooLong || st == mount.StatNoEnt || st == mount.StatAcces) {
		return Warnf("MNT of a %d-byte dirpath: %v, rpc.mountd answers GARBAGE_ARGS", mount.MNTPATHLEN+1, st)
	}
	return acceptStat(err, oncrpc.GarbageArgs, fmt.Sprintf("MNT of a %d-byte dirpath", mount.MNTPATHLEN+1))
}

func testMountLongName(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, _, err = mount.Mnt(e.Ctx, c, strings.TrimSuffix(e.Cfg.Export, "/")+"/"+strings.Repeat("n", mount.MNTNAMLEN+1))
	var st mount.Stat
	if errors.As(err, &st) {
		switch st {
		case mount.StatNameTooLong:
			return nil
		case mount.StatNoEnt, mount.StatAcces:
			return Warnf("MNT of a path with a 256-byte component: %v, want MNT3ERR_NAMETOOLONG", st)
		}
	}
	return fmt.Errorf("MNT of a path with a 256-byte component: %v, want MNT3ERR_NAMETOOLONG", err)
}

// ourHost returns the address the server sees us as on c.
func ourHost(c *oncrpc.Client) string {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

func inDump(l []mount.Entry, host, dir string) bool {
	for _, en := range l {
		if en.Directory == dir && (en.Hostname == host || host == "") {
			return true
		}
	}
	return false
}

func testMountDump(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, _, err := mount.Mnt(e.Ctx, c, e.Cfg.Export); err != nil {
		return ok(err, "MNT")
	}
	l, err := mount.Dump(e.Ctx, c)
	if err != nil {
		return ok(err, "DUMP")
	}
	if !inDump(l, "", e.Cfg.Export) {
		return Warnf("DUMP after MNT lacks %s (%d entries); rmtab is advisory", e.Cfg.Export, len(l))
	}
	return nil
}

func testMountUmnt(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, _, err := mount.Mnt(e.Ctx, c, e.Cfg.Export); err != nil {
		return ok(err, "MNT")
	}
	if err := mount.Umnt(e.Ctx, c, e.Cfg.Export); err != nil {
		return ok(err, "UMNT")
	}
	l, err := mount.Dump(e.Ctx, c)
	if err != nil {
		return ok(err, "DUMP")
	}
	if host := ourHost(c); host != "" && inDump(l, host, e.Cfg.Export) {
		return fmt.Errorf("DUMP after UMNT still lists %s:%s", host, e.Cfg.Export)
	}
	// UMNT of something never mounted is not an error (void result).
	return ok(mount.Umnt(e.Ctx, c, "/never/mounted"), "UMNT of a path never mounted")
}

func testMountUmntAll(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, _, err := mount.Mnt(e.Ctx, c, e.Cfg.Export); err != nil {
		return ok(err, "MNT")
	}
	if err := mount.UmntAll(e.Ctx, c); err != nil {
		return ok(err, "UMNTALL")
	}
	l, err := mount.Dump(e.Ctx, c)
	if err != nil {
		return ok(err, "DUMP")
	}
	host := ourHost(c)
	for _, en := range l {
		if en.Hostname == host {
			return fmt.Errorf("DUMP after UMNTALL still lists %s:%s", en.Hostname, en.Directory)
		}
	}
	return nil
}

func testMountExport(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := mount.Exports(e.Ctx, c)
	if err != nil {
		return ok(err, "EXPORT")
	}
	for _, ex := range l {
		if ex.Path == e.Cfg.Export {
			return nil
		}
	}
	paths := make([]string, 0, len(l))
	for _, ex := range l {
		paths = append(paths, ex.Path)
	}
	return fmt.Errorf("EXPORT lists %v, not %s", paths, e.Cfg.Export)
}

func testMountV1(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	// showmount(8) asks version 1 for EXPORT; its exports list has the
	// same encoding as version 3's.
	if _, err := c.Call(e.Ctx, &oncrpc.ClientCall{Prog: mount.Prog, Vers: mount.Vers1, Proc: mount.ProcNull}); err != nil {
		return ok(err, "MOUNT v1 NULL")
	}
	if _, err := c.Call(e.Ctx, &oncrpc.ClientCall{Prog: mount.Prog, Vers: mount.Vers1, Proc: mount.ProcExport}); err != nil {
		return ok(err, "MOUNT v1 EXPORT")
	}
	return nil
}

func testMountVersMismatch(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: mount.Prog, Vers: 4, Proc: mount.ProcNull})
	var ae *oncrpc.AcceptError
	if !errors.As(err, &ae) || ae.Stat != oncrpc.ProgMismatch {
		return fmt.Errorf("MOUNT version 4: %v, want PROG_MISMATCH", err)
	}
	if ae.Low > 3 || ae.High < 3 {
		return fmt.Errorf("PROG_MISMATCH range %d-%d excludes MOUNT version 3", ae.Low, ae.High)
	}
	return nil
}

func testMountProcUnavail(e *Env) error {
	c, err := e.mountClient()
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Call(e.Ctx, &oncrpc.ClientCall{Prog: mount.Prog, Vers: mount.Vers3, Proc: 6})
	return acceptStat(err, oncrpc.ProcUnavail, "MOUNT v3 procedure 6")
}

func testMountUDP(e *Env) error {
	c, err := oncrpc.Dial(e.Ctx, "udp", e.MountAddr)
	if err != nil {
		return ok(err, "MOUNT over UDP")
	}
	defer c.Close()
	c.SetCred(e.Cred)
	if err := mount.Null(e.Ctx, c); err != nil {
		return ok(err, "MOUNTPROC3_NULL over UDP")
	}
	_, _, err = mount.Mnt(e.Ctx, c, e.Cfg.Export)
	return ok(err, "MNT over UDP")
}

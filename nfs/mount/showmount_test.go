package mount_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gonfsrdma/gonfsrdma/nfs/mount"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/oncrpc/rpcbind"
)

// TestShowmount runs the real showmount(8) and rpcinfo(8) (nfs-common)
// against our rpcbind on port 111 and our MOUNT server. Port 111 belongs to
// the system, so the test runs only when GONFSRDMA_NETNS_TEST=1 and the
// process is alone in a network namespace with nothing but loopback:
//
//	unshare -n sh -c 'ip link set lo up &&
//	  GONFSRDMA_NETNS_TEST=1 go test -run TestShowmount ./nfs/mount'
func TestShowmount(t *testing.T) {
	if os.Getenv("GONFSRDMA_NETNS_TEST") != "1" {
		t.Skip("needs a private network namespace; see the comment")
	}
	ifs, err := net.Interfaces()
	if err != nil || len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 {
		t.Fatalf("not in a private network namespace (interfaces %v, %v); refusing to bind port 111", ifs, err)
	}
	if _, err := exec.LookPath("showmount"); err != nil {
		t.Skip("showmount not installed")
	}
	srv := mount.NewServer(zaptest.NewLogger(t), fakeBackend{})
	tcp, udp := serve(t, srv)
	port := func(a string) uint16 { p, _ := net.ResolveTCPAddr("tcp", a); return uint16(p.Port) }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rb, err := rpcbind.Start(ctx, zaptest.NewLogger(t), rpcbind.Config{Mappings: []rpcbind.Mapping{
		rpcbind.NewMapping(mount.Prog, 1, "tcp", port(tcp)),
		rpcbind.NewMapping(mount.Prog, 3, "tcp", port(tcp)),
		rpcbind.NewMapping(mount.Prog, 1, "udp", port(udp)),
		rpcbind.NewMapping(mount.Prog, 3, "udp", port(udp)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close(ctx)
	if rb.Remote() {
		t.Fatal("port 111 taken inside the namespace")
	}
	run := func(name string, args ...string) string {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		t.Logf("$ %s %s\n%s", name, strings.Join(args, " "), out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return string(out)
	}
	out := run("showmount", "-e", "127.0.0.1")
	for _, want := range []string{"Export list for 127.0.0.1:", "/export", "/private 192.0.2.0/24,trusted.example", "/anon    (everyone)"} {
		if !strings.Contains(out, want) {
			t.Errorf("showmount -e output lacks %q", want)
		}
	}
	// A mount recorded by MNT shows up in showmount -a (DUMP, version 1).
	dispatch(t, srv.Program(), trusted, 1, 3, mount.ProcMnt, mount.AppendDirpath(nil, "/export"))
	if _, _, err := mount.Mnt(ctx, dialT(t, tcp), "/export"); err != nil {
		t.Fatal(err)
	}
	out = run("showmount", "-a", "127.0.0.1")
	if !strings.Contains(out, "127.0.0.1:/export") {
		t.Errorf("showmount -a output lacks 127.0.0.1:/export")
	}
	out = run("rpcinfo", "-p", "127.0.0.1")
	if !strings.Contains(out, "100005    3   tcp") || !strings.Contains(out, "portmapper") {
		t.Errorf("rpcinfo -p output lacks mountd or portmapper")
	}
	out = run("rpcinfo", "127.0.0.1")
	if !strings.Contains(out, "100000    4    tcp") {
		t.Errorf("rpcinfo (RPCBPROC_DUMP) output lacks rpcbind v4")
	}
	run("rpcinfo", "-t", "127.0.0.1", "mountd", "3")
	run("rpcinfo", "-u", "127.0.0.1", "mountd", "1")
}

func dialT(t *testing.T, addr string) *oncrpc.Client {
	t.Helper()
	c, err := oncrpc.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetCred(oncrpc.NewAuthSys("client", 0, 0))
	return c
}

package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gonfsrdma/gonfsrdma/nfs/wire"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
)

// TestAsyncExport checks the async option end to end: the daemon warns at
// start-up that an async export can lose data, and its WRITEs answer the
// stability asked for (no sync), while a sync export answers FILE_SYNC
// for a DATA_SYNC WRITE (it fsyncs).
func TestAsyncExport(t *testing.T) {
	tmp := t.TempDir()
	syncDir, asyncDir := filepath.Join(tmp, "sync"), filepath.Join(tmp, "async")
	for _, d := range []string{syncDir, asyncDir} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	text := syncDir + " 127.0.0.1(rw,insecure,no_root_squash)\n" + asyncDir + " 127.0.0.1(rw,insecure,no_root_squash,async)\n"
	core, logs := observer.New(zapcore.WarnLevel)
	d := startDaemonLogging(t, zap.New(core), text)
	var warned []string
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "async") {
			for _, f := range e.Context {
				if f.Key == "export" {
					warned = append(warned, f.String)
				}
			}
		}
	}
	if len(warned) != 1 || warned[0] != asyncDir {
		t.Errorf("async warnings name exports %q, want only %s", warned, asyncDir)
	}

	ctx := testCtx(t)
	mc, err := oncrpc.Dial(ctx, "tcp", d.MountAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	mc.SetCred(authSys(uint32(os.Geteuid()), uint32(os.Getegid())))
	nc, err := oncrpc.Dial(ctx, "tcp", d.NFSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := nfsAs(nc, uint32(os.Geteuid()), uint32(os.Getegid()))
	for _, tc := range []struct {
		dir  string
		want wire.StableHow
	}{{syncDir, wire.FileSync}, {asyncDir, wire.DataSync}} {
		root, _ := mnt(t, mc, tc.dir)
		cr, err := c.Create(ctx, root, "f", unchecked(0o644))
		if err != nil || !cr.FH.Set {
			t.Fatalf("CREATE in %s: %v", tc.dir, err)
		}
		res, err := c.Write(ctx, cr.FH.FH, 0, []byte("data"), wire.DataSync)
		if err != nil {
			t.Fatalf("WRITE in %s: %v", tc.dir, err)
		}
		if res.Committed != tc.want {
			t.Errorf("DATA_SYNC WRITE in %s: committed %v, want %v", tc.dir, res.Committed, tc.want)
		}
		if _, err := c.Commit(ctx, cr.FH.FH, 0, 0); err != nil {
			t.Errorf("COMMIT in %s: %v", tc.dir, err)
		}
	}
}

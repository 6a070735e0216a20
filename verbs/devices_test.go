package verbs

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDevicesFromSysfs(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rxe0/ports/1/state", "4: ACTIVE")
	write("rxe0/ports/1/link_layer", "Ethernet")
	write("rxe0/ports/1/rate", "10 Gb/sec (1X QDR)")
	write("rxe0/ports/1/gid_attrs/ndevs/0", "veth1")
	write("mlx5_0/ports/2/state", "1: DOWN")
	write("mlx5_0/ports/2/link_layer", "InfiniBand")
	write("mlx5_0/ports/1/state", "4: ACTIVE")
	write("mlx5_0/ports/1/link_layer", "InfiniBand")
	got, err := devicesIn(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []DeviceInfo{
		{Name: "mlx5_0", Ports: []PortInfo{{Num: 1, State: "ACTIVE", LinkLayer: "InfiniBand"}, {Num: 2, State: "DOWN", LinkLayer: "InfiniBand"}}},
		{Name: "rxe0", Ports: []PortInfo{{Num: 1, State: "ACTIVE", LinkLayer: "Ethernet", Rate: "10 Gb/sec (1X QDR)", NetDev: "veth1"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("devices\n got %+v\nwant %+v", got, want)
	}
	if s := got[1].Ports[0].String(); s != "port 1 ACTIVE Ethernet veth1 10 Gb/sec (1X QDR)" {
		t.Errorf("String: %q", s)
	}
	if devs, err := devicesIn(filepath.Join(root, "absent")); devs != nil || err != nil {
		t.Errorf("no sysfs directory: %v %v, want none and no error", devs, err)
	}
}

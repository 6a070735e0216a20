package verbs

// devices.go: the RDMA devices and ports the kernel lists in sysfs
// (/sys/class/infiniband, what `rdma link` and ibv_devinfo read), for
// start-up messages. Pure Go: it works in builds without RDMA too, to say
// what such a build is missing.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DeviceInfo is one RDMA device and its ports.
type DeviceInfo struct {
	Name  string // "mlx5_0", "rxe0"
	Ports []PortInfo
}

// PortInfo is one port of a device.
type PortInfo struct {
	Num       int
	State     string // "ACTIVE", "DOWN", ...
	LinkLayer string // "Ethernet" (RoCE) or "InfiniBand"
	Rate      string // "100 Gb/sec (4X EDR)"; "" if the kernel gives none
	NetDev    string // the Ethernet interface of a RoCE port, "" if none
}

// String is "mlx5_0 port 1 ACTIVE Ethernet eth2 100 Gb/sec (4X EDR)".
func (p PortInfo) String() string {
	s := fmt.Sprintf("port %d %s %s", p.Num, p.State, p.LinkLayer)
	if p.NetDev != "" {
		s += " " + p.NetDev
	}
	if p.Rate != "" {
		s += " " + p.Rate
	}
	return s
}

// SysfsDevices is where the kernel lists RDMA devices.
const SysfsDevices = "/sys/class/infiniband"

// Devices lists the RDMA devices under SysfsDevices in name order. No
// directory (no RDMA driver loaded) is no devices and no error.
func Devices() ([]DeviceInfo, error) { return devicesIn(SysfsDevices) }

func devicesIn(root string) ([]DeviceInfo, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var devs []DeviceInfo
	for _, e := range ents {
		d := DeviceInfo{Name: e.Name()}
		ports, _ := os.ReadDir(filepath.Join(root, e.Name(), "ports"))
		for _, p := range ports {
			n, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			dir := filepath.Join(root, e.Name(), "ports", p.Name())
			pi := PortInfo{Num: n, State: readSysfs(dir, "state"), LinkLayer: readSysfs(dir, "link_layer"), Rate: readSysfs(dir, "rate"),
				NetDev: readSysfs(dir, "gid_attrs/ndevs/0")}
			// "4: ACTIVE" -> "ACTIVE"
			if _, s, ok := strings.Cut(pi.State, ": "); ok {
				pi.State = s
			}
			d.Ports = append(d.Ports, pi)
		}
		sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, nil
}

func readSysfs(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

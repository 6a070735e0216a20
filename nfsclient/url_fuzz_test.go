package nfsclient

import (
	"path"
	"testing"
)

// FuzzParseURL: any string is parsed or refused without a panic; what is
// accepted has a host and a clean absolute path, stays within the
// documented ranges (timeout=0 is Config.Timeout -1, none), and its String form parses back to the same form.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"nfs://srv/export", "nfs://srv:2050/a/b?proto=rdma&fallback=tcp&mountport=20048",
		"nfs://[::1]:2049/x?uid=1&gid=2&gids=3,4&machine=m&nconnect=4&bs=1M&depth=16&retries=3&timeout=2s",
		"nfs://srv/../../etc?bs=4K", "nfs://srv/%2e%2e/x", "nfs://srv/x?retries=0", "nfs://srv/x?timeout=0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := ParseURL(s)
		if err != nil {
			return
		}
		if cfg.Host == "" || cfg.Path == "" || cfg.Path[0] != '/' || path.Clean(cfg.Path) != cfg.Path {
			t.Fatalf("%q: host %q path %q", s, cfg.Host, cfg.Path)
		}
		if cfg.NConnect < 0 || cfg.NConnect > maxNConnect || cfg.BlockSize < 0 || cfg.BlockSize > maxBlockSize ||
			cfg.Depth < 0 || cfg.Depth > 256 || len(cfg.GIDs) > 16 || len(cfg.Machine) > 255 || cfg.Timeout < -1 {
			t.Fatalf("%q: out of range: %+v", s, cfg)
		}
		again, err := ParseURL(cfg.String())
		if err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, cfg.String(), err)
		}
		if again.String() != cfg.String() {
			t.Fatalf("%q: %q reparses as %q", s, cfg.String(), again.String())
		}
	})
}

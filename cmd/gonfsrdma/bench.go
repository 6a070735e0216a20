package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/bench"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// benchCommand is `gonfsrdma bench SERVER:/EXPORT`: flags to a
// bench.Config, bench.Run, then the table and optional JSON.
func benchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure an NFSv3 server: sequential and random I/O, metadata rates",
		ArgsUsage: "SERVER:/EXPORT",
		Description: "Mounts EXPORT with MOUNT v3 over TCP and, in a fresh directory below it, writes a file " +
			"(UNSTABLE WRITEs, then COMMIT), reads it back sequentially and at random 4 KiB offsets, then " +
			"creates, stats (LOOKUP+GETATTR) and removes many files. Every byte read is checked against the " +
			"pattern written. Queue depth is calls outstanding on one connection.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "transport", Value: bench.TCP, Usage: "tcp or rdma (MOUNT always uses TCP)"},
			&cli.IntFlag{Name: "port", Usage: "NFS port (default 2049 for tcp, 20049 for rdma)"},
			&cli.IntFlag{Name: "mountport", Usage: "MOUNT port (default: ask rpcbind, else 20048)"},
			&cli.StringFlag{Name: "size", Value: "1GiB", Usage: "sequential file `SIZE`"},
			&cli.StringFlag{Name: "block", Value: "1MiB", Usage: "sequential READ/WRITE `SIZE`"},
			&cli.IntFlag{Name: "qd", Value: bench.DefaultQD, Usage: "outstanding calls for sequential and metadata phases"},
			&cli.IntFlag{Name: "rand-qd", Value: bench.DefaultRandQD, Usage: "outstanding 4 KiB random READs"},
			&cli.DurationFlag{Name: "rand-time", Value: bench.DefaultRandDuration, Usage: "random-read duration"},
			&cli.Int64Flag{Name: "rand-ops", Usage: "random READs to issue instead of --rand-time"},
			&cli.IntFlag{Name: "files", Value: bench.DefaultFiles, Usage: "files for the metadata phases"},
			&cli.StringFlag{Name: "skip", Usage: "comma-separated `PHASES` to skip (seq-write,seq-read,rand-read,create,stat,remove)"},
			&cli.UintFlag{Name: "uid", Value: uint(os.Geteuid()), Usage: "AUTH_SYS uid"},
			&cli.UintFlag{Name: "gid", Value: uint(os.Getegid()), Usage: "AUTH_SYS gid"},
			&cli.IntFlag{Name: "server-pid", Usage: "local server process whose CPU time (/proc/PID/stat) to report per phase"},
			&cli.StringFlag{Name: "json", Usage: "also write the result as JSON to `FILE` (- for stdout)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress line"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() != 1 {
				return cli.Exit("gonfsrdma bench: name one server and export: gonfsrdma bench [flags] SERVER:/EXPORT, "+
					"as in gonfsrdma bench 127.0.0.1:/srv/gonfsrdma --size 256MiB", exitUsage)
			}
			host, export, err := splitTarget(c.Args().First())
			if err != nil {
				return cli.Exit("gonfsrdma bench: "+err.Error(), exitUsage)
			}
			cfg := bench.Config{
				Host: host, Export: export, Transport: c.String("transport"),
				Port: c.Int("port"), MountPort: c.Int("mountport"),
				QD: c.Int("qd"), RandQD: c.Int("rand-qd"), RandDuration: c.Duration("rand-time"),
				RandOps: c.Int64("rand-ops"), Files: c.Int("files"),
				UID: uint32(c.Uint("uid")), GID: uint32(c.Uint("gid")),
				Skip: map[string]bool{},
			}
			if cfg.Size, err = bench.ParseSize(c.String("size")); err != nil {
				return cli.Exit("--size: "+err.Error(), 2)
			}
			block, err := bench.ParseSize(c.String("block"))
			if err != nil {
				return cli.Exit("--block: "+err.Error(), 2)
			}
			cfg.Block = int(block)
			for _, p := range strings.Split(c.String("skip"), ",") {
				if p = strings.TrimSpace(p); p != "" {
					cfg.Skip[p] = true
				}
			}
			if pid := c.Int("server-pid"); pid > 0 {
				cfg.ServerCPU = bench.ProcCPU(pid)
			}
			if cfg.Transport == bench.RDMA {
				p, err := verbs.NewRDMAProvider()
				if err != nil {
					return fmt.Errorf("RDMA: %w", err)
				}
				cfg.Provider = p
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			progress := c.Root().ErrWriter
			if c.Bool("quiet") {
				progress = nil
			}
			res, err := bench.Run(ctx, cfg, progress)
			if err != nil {
				return err
			}
			if err := bench.WriteTable(c.Root().Writer, &res); err != nil {
				return err
			}
			switch path := c.String("json"); path {
			case "":
			case "-":
				return bench.WriteJSON(c.Root().Writer, &res)
			default:
				f, err := os.Create(path)
				if err != nil {
					return err
				}
				if err := bench.WriteJSON(f, &res); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}
			return nil
		},
	}
}

// splitTarget splits SERVER:/EXPORT; SERVER may be a bracketed IPv6
// address. A target written another common way (an nfs:// URL,
// SERVER/EXPORT) is refused with the spelling to use.
func splitTarget(s string) (host, export string, err error) {
	bad := func() (string, string, error) {
		return "", "", fmt.Errorf("%q is not SERVER:/EXPORT%s", s, targetHint(s))
	}
	if strings.Contains(s, "://") {
		return bad()
	}
	rest := s
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]:")
		if i < 0 {
			return bad()
		}
		host, rest = s[1:i], s[i+1:]
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return bad()
		}
		host, rest = s[:i], s[i:]
	}
	export = strings.TrimPrefix(rest, ":")
	if host == "" || !strings.HasPrefix(export, "/") || strings.Contains(host, "/") {
		return bad()
	}
	return host, export, nil
}

// targetHint suggests the SERVER:/EXPORT spelling of a mistyped target.
func targetHint(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme == "nfs" && u.Host != "" {
		h := u.Hostname()
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		hint := "; type " + h + ":" + path.Clean("/"+u.Path)
		if u.Port() != "" {
			hint += " --port " + u.Port()
		}
		return hint
	}
	if i := strings.IndexByte(s, '/'); i > 0 && !strings.Contains(s[:i], ":") {
		return "; type " + s[:i] + ":" + s[i:]
	}
	if strings.HasPrefix(s, "/") {
		return "; type SERVER:" + s + ", as in 127.0.0.1:" + s
	}
	return ", as in 127.0.0.1:/srv/gonfsrdma"
}

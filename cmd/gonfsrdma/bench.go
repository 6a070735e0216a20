package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

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
			&cli.StringFlag{Name: "size", Value: "1GiB", Usage: "sequential file size"},
			&cli.StringFlag{Name: "block", Value: "1MiB", Usage: "sequential READ/WRITE size"},
			&cli.IntFlag{Name: "qd", Value: bench.DefaultQD, Usage: "outstanding calls for sequential and metadata phases"},
			&cli.IntFlag{Name: "rand-qd", Value: bench.DefaultRandQD, Usage: "outstanding 4 KiB random READs"},
			&cli.DurationFlag{Name: "rand-time", Value: bench.DefaultRandDuration, Usage: "random-read duration"},
			&cli.Int64Flag{Name: "rand-ops", Usage: "random READs to issue instead of --rand-time"},
			&cli.IntFlag{Name: "files", Value: bench.DefaultFiles, Usage: "files for the metadata phases"},
			&cli.StringFlag{Name: "skip", Usage: "comma-separated phases to skip (seq-write,seq-read,rand-read,create,stat,remove)"},
			&cli.UintFlag{Name: "uid", Value: uint(os.Geteuid()), Usage: "AUTH_SYS uid"},
			&cli.UintFlag{Name: "gid", Value: uint(os.Getegid()), Usage: "AUTH_SYS gid"},
			&cli.IntFlag{Name: "server-pid", Usage: "local server process whose CPU time (/proc/PID/stat) to report per phase"},
			&cli.StringFlag{Name: "json", Usage: "also write the result as JSON to this file (- for stdout)"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress line"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: gonfsrdma bench [flags] SERVER:/EXPORT", 2)
			}
			host, export, err := splitTarget(c.Args().First())
			if err != nil {
				return cli.Exit(err.Error(), 2)
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
			progress := c.App.ErrWriter
			if c.Bool("quiet") {
				progress = nil
			}
			res, err := bench.Run(ctx, cfg, progress)
			if err != nil {
				return err
			}
			if err := bench.WriteTable(c.App.Writer, &res); err != nil {
				return err
			}
			switch path := c.String("json"); path {
			case "":
			case "-":
				return bench.WriteJSON(c.App.Writer, &res)
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
// address.
func splitTarget(s string) (host, export string, err error) {
	rest := s
	if strings.HasPrefix(s, "[") {
		i := strings.Index(s, "]:")
		if i < 0 {
			return "", "", fmt.Errorf("bad target %q: want SERVER:/EXPORT", s)
		}
		host, rest = s[1:i], s[i+1:]
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return "", "", fmt.Errorf("bad target %q: want SERVER:/EXPORT", s)
		}
		host, rest = s[:i], s[i:]
	}
	export = strings.TrimPrefix(rest, ":")
	if host == "" || !strings.HasPrefix(export, "/") {
		return "", "", fmt.Errorf("bad target %q: want SERVER:/EXPORT", s)
	}
	return host, export, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/conformance"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	rdmaclient "github.com/gonfsrdma/gonfsrdma/rpcrdma/client"
	"github.com/gonfsrdma/gonfsrdma/verbs"
)

// conformanceCommand runs the conformance suite against a server:
// flags -> conformance.Config -> conformance.Run.
func conformanceCommand() *cli.Command {
	return &cli.Command{
		Name:      "conformance",
		Usage:     "run the NFSv3 / MOUNT / rpcbind / ONC RPC conformance suite against a server",
		ArgsUsage: "SERVER:/EXPORT [FLAGS|CODES...]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "transport", Value: "tcp", Usage: "NFS transport: tcp or rdma"},
			&cli.IntFlag{Name: "port", Usage: "NFS port (default: ask rpcbind for tcp, 20049 for rdma)"},
			&cli.IntFlag{Name: "tcp-port", Usage: "NFS over TCP port for the raw ONC RPC tests when --transport rdma (default: ask rpcbind)"},
			&cli.IntFlag{Name: "mountport", Usage: "MOUNT port over TCP (default: ask rpcbind)"},
			&cli.IntFlag{Name: "portmapport", Value: conformance.DefaultPortmapPort, Usage: "rpcbind port"},
			&cli.StringFlag{Name: "callback-rpcbind", Usage: "rpcbind the server asks for this client's NLM and NSM (its own, 127.0.0.1:111 with no other lockd/statd registered), where the suite registers its callback service for the blocking-lock, _MSG and SM_NOTIFY tests (`ADDR:PORT` over TCP, or the path of a system rpcbind's local socket, /run/rpcbind.sock)"},
			&cli.DurationFlag{Name: "grace", Usage: "the server's NLM grace period; enables the grace tests, which run SM_SIMU_CRASH (from loopback only)"},
			&cli.StringFlag{Name: "roexport", Usage: "a second export, read-only to this client and holding a regular file, for the rofs tests (`PATH`)"},
			&cli.BoolFlag{Name: "maketree", Usage: "remove and recreate the base tree " + conformance.BaseTree + " in the export"},
			&cli.BoolFlag{Name: "showflags", Usage: "list the test flags and exit"},
			&cli.BoolFlag{Name: "showcodes", Usage: "list the test codes and exit"},
			&cli.BoolFlag{Name: "strict", Usage: "judge the server as gonfsrdma: its exact answers, and a WARN fails unless --allow-warn lists it"},
			&cli.StringFlag{Name: "allow-warn", Usage: "with --strict, the tests allowed to WARN, one `FILE` line each: CODE reason (conformance/strict-allow.txt)"},
			&cli.StringFlag{Name: "json", Usage: "write the results as JSON to `FILE`"},
			&cli.StringFlag{Name: "junit", Usage: "write the results as JUnit XML to `FILE`"},
			&cli.UintFlag{Name: "uid", Value: uint(os.Geteuid()), Usage: "AUTH_SYS uid"},
			&cli.UintFlag{Name: "gid", Value: uint(os.Getegid()), Usage: "AUTH_SYS gid"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			out := c.Root().Writer
			if c.Bool("showflags") {
				conformance.ShowFlags(out)
				return nil
			}
			if c.Bool("showcodes") {
				conformance.ShowCodes(out)
				return nil
			}
			if c.NArg() < 1 {
				return cli.Exit("gonfsrdma conformance: which server? Type gonfsrdma conformance [flags] SERVER:/EXPORT [FLAGS|CODES...], "+
					"as in gonfsrdma conformance 127.0.0.1:/srv/gonfsrdma rpc (--showcodes and --showflags list what to select)", exitUsage)
			}
			host, export, err := splitTarget(c.Args().First())
			if err != nil {
				return cli.Exit("gonfsrdma conformance: "+err.Error(), exitUsage)
			}
			cfg := conformance.Config{
				Server:          host,
				Export:          export,
				Transport:       c.String("transport"),
				Port:            c.Int("port"),
				TCPPort:         c.Int("tcp-port"),
				MountPort:       c.Int("mountport"),
				PortmapPort:     c.Int("portmapport"),
				MakeTree:        c.Bool("maketree"),
				ROExport:        c.String("roexport"),
				CallbackPortmap: c.String("callback-rpcbind"),
				Grace:           c.Duration("grace"),
				UID:             uint32(c.Uint("uid")),
				GID:             uint32(c.Uint("gid")),
				Select:          c.Args().Tail(),
				Strict:          c.Bool("strict"),
			}
			if path := c.String("allow-warn"); path != "" {
				if !cfg.Strict {
					return errors.New("conformance: --allow-warn needs --strict")
				}
				f, err := os.Open(path)
				if err != nil {
					return fmt.Errorf("conformance: %w", err)
				}
				cfg.AllowWarn, err = conformance.ParseAllowList(f)
				f.Close()
				if err != nil {
					return err
				}
			}
			if cfg.Transport == "rdma" {
				p, err := verbs.NewRDMAProvider()
				if err != nil {
					return fmt.Errorf("conformance: RDMA: %w", err)
				}
				defer p.Close()
				cfg.DialNFS = func(ctx context.Context, addr string) (oncrpc.Caller, error) {
					return rdmaclient.Dial(ctx, p, addr, rdmaclient.Config{})
				}
				cfg.DialRDMA = func(ctx context.Context, addr string, rc rdmaclient.Config) (*rdmaclient.Client, error) {
					return rdmaclient.Dial(ctx, p, addr, rc)
				}
				cfg.DialVerbs = func(ctx context.Context, addr string, cp verbs.ConnParams) (verbs.Conn, error) {
					return p.Dial(ctx, addr, cp)
				}
			}
			sum, err := conformance.Run(ctx, cfg, out)
			if err != nil {
				return err
			}
			if err := writeReport(c.String("json"), &sum, conformance.WriteJSON); err != nil {
				return err
			}
			if err := writeReport(c.String("junit"), &sum, conformance.WriteJUnit); err != nil {
				return err
			}
			if sum.Failed > 0 {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

func writeReport(path string, s *conformance.Summary, write func(w io.Writer, s *conformance.Summary) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

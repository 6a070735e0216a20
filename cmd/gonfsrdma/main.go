package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/daemon"
	"github.com/gonfsrdma/gonfsrdma/exports"
	"github.com/gonfsrdma/gonfsrdma/oncrpc"
	"github.com/gonfsrdma/gonfsrdma/rpcrdma"
)

// version is set by the build (make build: -ldflags "-X main.version=$(git describe)");
// without it the module version or VCS revision from the build info is used.
var version = ""

func main() {
	if err := newApp().Run(context.Background(), os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "gonfsrdma:", err)
		os.Exit(1)
	}
}

// newApp is the whole command line: main runs it, the tests drive it and
// the man page is generated from it (gonfsrdma man).
func newApp() *cli.Command {
	app := &cli.Command{
		Name:    "gonfsrdma",
		Usage:   "NFSv3 server over TCP and RPC-over-RDMA",
		Version: buildVersion(),
		// Flags may follow the positional arguments (cli v3 parses
		// them anywhere until "--"), mistyped commands and flags get a
		// "Did you mean" and `gonfsrdma completion SHELL` prints a
		// completion script.
		Suggest:               true,
		EnableShellCompletion: true,
		ConfigureShellCompletionCommand: func(c *cli.Command) {
			c.Hidden = false
			c.Usage = "print the shell completion script for bash, zsh, fish or pwsh"
			c.Description = "bash: source <(gonfsrdma completion bash) in ~/.bashrc; zsh: source <(gonfsrdma completion zsh) in ~/.zshrc; " +
				"fish: gonfsrdma completion fish > ~/.config/fish/completions/gonfsrdma.fish. " +
				"The Debian package installs the bash, zsh and fish scripts."
		},
		Commands: append([]*cli.Command{
			serveCommand(),
			exportsCommand(),
			conformanceCommand(),
			benchCommand(),
			statsCommand(),
			manCommand(),
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(ctx context.Context, c *cli.Command) error {
					fmt.Fprintln(c.Root().Writer, "gonfsrdma", buildVersion())
					return nil
				},
			},
		}, clientCommands()...),
	}
	explainUsage(app)
	return app
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		// go install github.com/gonfsrdma/gonfsrdma/cmd/gonfsrdma@v1.2.3
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		rev, dirty := "", ""
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			return "devel-" + rev + dirty
		}
	}
	return "devel"
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the NFS server",
		Description: "Serves the exports file (or, without one, a default directory read-write to loopback " +
			"clients) over NFSv3 on TCP and RPC-over-RDMA, with MOUNT v3 and rpcbind.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "exports", Usage: "exports(5) `FILE`; SIGHUP reloads it"},
			&cli.StringFlag{Name: "default-export", Value: "/srv/gonfsrdma", Usage: "`DIR` exported (rw, loopback only) when no --exports file is given"},
			&cli.StringFlag{Name: "listen", Value: ":2049", Usage: "NFS over TCP `ADDR:PORT`"},
			&cli.StringFlag{Name: "mount-listen", Value: ":20048", Usage: "MOUNT v3 `ADDR:PORT` (TCP and UDP)"},
			&cli.StringFlag{Name: "rdma-listen", Value: ":20049", Usage: "NFS over RPC-over-RDMA `ADDR:PORT`; empty disables RDMA"},
			&cli.BoolFlag{Name: "require-rdma", Usage: "fail when RDMA cannot listen instead of serving TCP only"},
			&cli.StringFlag{Name: "portmap-listen", Value: ":111", Usage: "rpcbind `ADDR:PORT` (TCP and UDP)"},
			&cli.BoolFlag{Name: "no-portmap", Usage: "neither run rpcbind nor register with one"},
			&cli.StringFlag{Name: "state-dir", Value: "/var/lib/gonfsrdma", Sources: cli.EnvVars("STATE_DIRECTORY"),
				Usage: "`DIR` for persistent state: the file handle key (fhkey) and the status monitor's state number and monitored hosts (nsm.json); " +
					"under systemd the unit's StateDirectory="},
			&cli.IntFlag{Name: "rdma-credits", Value: 64, Usage: "RPC-over-RDMA credits granted per connection"},
			&cli.IntFlag{Name: "rdma-inline", Value: 4096, Usage: "RPC-over-RDMA inline message size (1024-65536)"},
			&cli.DurationFlag{Name: "rdma-ack-timeout", Value: rpcrdma.DefaultAckTimeout,
				Usage: "how long an RDMA request whose last packet was lost waits before the queue pair resends it, rounded up to 4.096us x 2^n (0: the connection manager's, 2.1s on RoCE)"},
			&cli.IntFlag{Name: "max-inflight", Value: 64, Usage: "calls in progress per TCP connection"},
			&cli.StringFlag{Name: "nlm-listen", Value: ":4045", Usage: "NLM (file locking, program 100021 v1/v3/v4) `ADDR:PORT` (TCP and UDP)"},
			&cli.StringFlag{Name: "nsm-listen", Value: ":4046", Usage: "NSM (status monitor, program 100024) `ADDR:PORT` (TCP and UDP)"},
			&cli.BoolFlag{Name: "no-nlm", Usage: "serve no file locking (NLM, NSM); clients must mount with -o nolock"},
			&cli.DurationFlag{Name: "grace", Value: 90 * time.Second, Usage: "grace period for lock reclaims after a restart that had clients holding locks"},
			&cli.IntFlag{Name: "max-connections", Usage: "connections in total over TCP and RDMA (0: half the descriptor limit, at most 4096; -1: no cap)"},
			&cli.IntFlag{Name: "max-connections-per-client", Value: oncrpc.DefaultMaxConnsPerClient, Usage: "connections from one client address (-1: no cap)"},
			&cli.DurationFlag{Name: "idle-timeout", Value: oncrpc.DefaultIdleTimeout, Usage: "close connections (TCP, RDMA) idle, or TCP ones with unread replies, this long (0: never)"},
			&cli.Int64Flag{Name: "buffer-budget-mib", Value: oncrpc.DefaultBufferBudget >> 20, Usage: "MiB of TCP call and reply buffers across connections before the largest holders are throttled"},
			&cli.Int64Flag{Name: "rdma-max-pinned-mib", Value: rpcrdma.DefaultMaxPinned >> 20, Usage: "MiB of registered memory across RDMA connections; a connection over it is rejected"},
			&cli.BoolFlag{Name: "tcp-splice", Value: true, Usage: "send TCP READ data from the page cache with splice(2) instead of copying it (half the server CPU per byte read; --tcp-splice=false copies)"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics (/metrics) and readiness (/healthz) over HTTP on `ADDR:PORT` (default: off)"},
			&cli.IntFlag{Name: "metrics-top-clients", Value: 10, Usage: "the `N` busiest client addresses (by bytes) that get their own series in the metrics"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "`LEVEL`: debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: logAuto, Usage: "`FORMAT`: console, json, journal (no timestamps, syslog priority prefixes) " +
				"or auto (journal when stderr is systemd's journal, else console)"},
			&cli.StringFlag{Name: "cpu-profile", Usage: "write a pprof CPU profile of the whole run to `FILE` (on shutdown)"},
			&cli.StringFlag{Name: "exec-trace", Usage: "write a Go execution trace of the whole run to `FILE` (go tool trace: goroutines, system calls, thread hand-offs)"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				msg := fmt.Sprintf("gonfsrdma serve: takes no arguments, only flags (got %q)", c.Args().First())
				if fi, err := os.Stat(c.Args().First()); err == nil {
					if fi.IsDir() {
						msg += fmt.Sprintf("; to export a directory to loopback clients type gonfsrdma serve --default-export %s", c.Args().First())
					} else {
						msg += fmt.Sprintf("; for an exports file type gonfsrdma serve --exports %s", c.Args().First())
					}
				}
				return cli.Exit(msg, exitUsage)
			}
			// Before anything is opened or started: on success this
			// process is replaced (sysmon.go).
			reexecErr := reexecForSysmon()
			log, err := newLogger(c.String("log-level"), c.String("log-format"))
			if err != nil {
				return err
			}
			defer log.Sync()
			if reexecErr != nil {
				log.Warn("running with Go's default sysmon: re-executing with GODEBUG=" + sysmonSetting + " failed: " + reexecErr.Error())
			}
			if path := c.String("cpu-profile"); path != "" {
				stopProfile, err := startRecording(path, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			if path := c.String("exec-trace"); path != "" {
				stopTrace, err := startRecording(path, "execution trace", trace.Start, trace.Stop)
				if err != nil {
					return err
				}
				defer stopTrace()
			}
			cfg := daemon.Config{
				ExportsFile:       c.String("exports"),
				DefaultExport:     c.String("default-export"),
				NFSAddr:           c.String("listen"),
				MountAddr:         c.String("mount-listen"),
				RDMAAddr:          c.String("rdma-listen"),
				RequireRDMA:       c.Bool("require-rdma"),
				PortmapAddr:       c.String("portmap-listen"),
				NoPortmap:         c.Bool("no-portmap"),
				StateDir:          c.String("state-dir"),
				RDMACredits:       c.Int("rdma-credits"),
				RDMAInline:        c.Int("rdma-inline"),
				RDMAAckTimeout:    c.Duration("rdma-ack-timeout"),
				MaxInFlight:       c.Int("max-inflight"),
				SpliceReads:       c.Bool("tcp-splice"),
				Version:           buildVersion(),
				Notify:            serviceNotifier(log),
				NoNLM:             c.Bool("no-nlm"),
				NLMAddr:           c.String("nlm-listen"),
				NSMAddr:           c.String("nsm-listen"),
				Grace:             c.Duration("grace"),
				MaxConns:          c.Int("max-connections"),
				MaxConnsPerClient: c.Int("max-connections-per-client"),
				BufferBudget:      c.Int64("buffer-budget-mib") << 20,
				IdleTimeout:       c.Duration("idle-timeout"),
				RDMAMaxPinned:     c.Int64("rdma-max-pinned-mib") << 20,
				MetricsAddr:       c.String("metrics-listen"),
				MetricsTopClients: int(c.Int("metrics-top-clients")),
			}
			if cfg.IdleTimeout == 0 {
				cfg.IdleTimeout = -1 // 0 on the command line: never
			}
			if cfg.RDMAAckTimeout == 0 {
				cfg.RDMAAckTimeout = -1 // 0 on the command line: the connection manager's
			}
			if cfg.BufferBudget <= 0 || cfg.RDMAMaxPinned <= 0 || cfg.MaxConnsPerClient == 0 {
				return cli.Exit("--buffer-budget-mib, --rdma-max-pinned-mib and --max-connections-per-client must be positive (-1: no per-client cap)", 2)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			return daemon.Run(ctx, log, cfg, hup)
		},
	}
}

// startRecording creates path and starts a recorder of the whole run
// into it (what names it in errors: a CPU profile, an execution trace);
// the returned function stops the recorder and closes the file.
func startRecording(path, what string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return func() {
		stop()
		f.Close()
	}, nil
}

func exportsCommand() *cli.Command {
	return &cli.Command{
		Name:  "exports",
		Usage: "inspect exports files",
		Commands: []*cli.Command{{
			Name:      "check",
			Usage:     "parse an exports file and print the effective table or the errors",
			ArgsUsage: "FILE",
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.NArg() != 1 {
					return cli.Exit("usage: gonfsrdma exports check FILE", 2)
				}
				t, warnings, err := exports.Load(c.Args().First(), exports.ParseOptions{BackendAvailable: daemon.BackendAvailable})
				for _, w := range warnings {
					fmt.Fprintln(c.Root().ErrWriter, "warning:", w)
				}
				if err != nil {
					fmt.Fprintln(c.Root().ErrWriter, err)
					return cli.Exit("", 1)
				}
				return exports.WriteTable(c.Root().Writer, t)
			},
		}},
	}
}

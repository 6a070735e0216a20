package main

import (
	"context"
	"fmt"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/gonfsrdma/gonfsrdma/metrics"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "show a running server's counters, like nfsstat -s (reads its --metrics-listen endpoint)",
		ArgsUsage: "HOST:PORT | http://HOST:PORT/metrics",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh in place every --interval, with rates per second"},
			&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "time between refreshes with --watch"},
			&cli.IntFlag{Name: "count", Usage: "with --watch, stop after this many refreshes (0: until interrupted)"},
			&cli.IntFlag{Name: "top", Value: 10, Usage: "rows in the busiest-clients table"},
			&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "time allowed for one scrape"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: gonfsrdma stats [--watch] HOST:PORT (the server's --metrics-listen address)", 2)
			}
			if c.Duration("interval") <= 0 || c.Duration("timeout") <= 0 || c.Int("top") <= 0 || c.Int("count") < 0 {
				return cli.Exit("--interval, --timeout and --top must be positive, --count not negative", 2)
			}
			url := metricsURL(c.Args().First())
			client := &http.Client{Timeout: c.Duration("timeout")}
			opts := metrics.ViewOptions{TopClients: c.Int("top")}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			cur, err := metrics.Scrape(ctx, client, url)
			if err != nil {
				return cli.Exit(fmt.Sprintf("gonfsrdma stats: %v (is the server running with --metrics-listen?)", err), 6)
			}
			if !c.Bool("watch") {
				return metrics.WriteStats(c.Root().Writer, cur, nil, opts)
			}
			return watchStats(ctx, c, client, url, cur, opts)
		},
	}
}

// watchStats redraws the view every interval until ctx ends or count
// refreshes are done; the screen is cleared and the cursor homed before
// each frame, so the view refreshes in place.
func watchStats(ctx context.Context, c *cli.Command, client *http.Client, url string, cur *metrics.Snapshot, opts metrics.ViewOptions) error {
	var prev *metrics.Snapshot
	t := time.NewTicker(c.Duration("interval"))
	defer t.Stop()
	for n := 1; ; n++ {
		var frame strings.Builder
		frame.WriteString("\x1b[H\x1b[2J")
		if err := metrics.WriteStats(&frame, cur, prev, opts); err != nil {
			return err
		}
		if _, err := fmt.Fprint(c.Root().Writer, frame.String()); err != nil {
			return err
		}
		if limit := c.Int("count"); limit > 0 && n >= limit {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next, err := metrics.Scrape(ctx, client, url)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return cli.Exit(fmt.Sprintf("gonfsrdma stats: %v", err), 6)
		}
		prev, cur = cur, next
	}
}

// metricsURL accepts HOST:PORT or a URL.
func metricsURL(arg string) string {
	if strings.Contains(arg, "://") {
		return arg
	}
	return "http://" + arg + "/metrics"
}

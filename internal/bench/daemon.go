package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
)

// startDaemon runs a daemon (internal/daemon) named name on the database at url: the Git
// source bench on repo (polled hourly; push webhooks signed with secret; more added to its
// config; repo "": no source), the action act (the instance given), workers workers. It
// returns the daemon, started, and its API's URL.
func (b *bench) startDaemon(ctx context.Context, name, url, repo, secret, more string, workers int, act actions.Action) (*daemon.Daemon, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	listen := ln.Addr().String()
	ln.Close()
	text := fmt.Sprintf(`dataDir: %q
database: {url: %q}
server: {listen: %q}
log: {level: warn}
actions: [{name: act, type: bench}]
reconcile: {workers: %d, leaseTTL: 30s}
`, filepath.Join(b.dir, "data-"+name), url, listen, workers)
	if repo != "" {
		text += fmt.Sprintf("sources:\n  - {name: bench, git: {url: %q, branch: main, interval: 1h}, webhook: {secret: %q}%s}\n", repo, secret, more)
	}
	cfg, err := config.Parse([]byte(text), b.dir, func(string) string { return "" })
	if err != nil {
		return nil, "", err
	}
	reg, err := daemon.Registry()
	if err != nil {
		return nil, "", err
	}
	if err := reg.Register("bench", func(json.RawMessage, actions.Env) (actions.Action, error) { return act, nil }); err != nil {
		return nil, "", err
	}
	d, err := daemon.New(cfg, daemon.Deps{Stderr: os.Stderr, Registry: reg, Version: "bench", Replica: name})
	if err != nil {
		return nil, "", err
	}
	if err := d.Start(ctx); err != nil {
		return nil, "", err
	}
	return d, "http://" + listen, nil
}

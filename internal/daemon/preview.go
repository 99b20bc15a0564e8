package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// newPreviewRunner builds the preview runner of sc, a source with preview enabled. It has
// its own loader (its cache serves the syncer) and no decryption key: a pull request's
// encrypted fields stay markers. Previews run on the replica that receives the webhook (each
// runner is local to its replica); the previews table's row lock keeps two replicas from
// both commenting on one pull request.
func newPreviewRunner(cfg *config.Config, sc config.Source, src sources.Source, st *store.Store, acts map[string]actions.Action, plans *actions.PlanGate,
	checkRef func(from string, target graph.ID, outputs []string) error, policies func() *policy.Set, secrets *redact.Registry, replica string, logger *slog.Logger) (*preview.Runner, error) {
	fetcher, pub, err := previewPublisher(sc, src)
	if err != nil {
		return nil, err
	}
	return preview.New(preview.Options{Source: sc.Name, Fetcher: fetcher, Publisher: pub, Store: st,
		ExternalURL: strings.TrimSuffix(cfg.Server.ExternalURL, "/"), Replica: replica, Logger: logger,
		Checker: &preview.Checker{Source: sc.Name, Store: st, Loader: manifest.NewLoader(), Render: render.ForSource(sc, cfg.Reconcile.LeaseTTL*2/3),
			CheckAction: CheckAction(acts), CheckReference: checkRef, Limits: manifest.Limits(cfg.Limits), Prune: sc.PruneEnabled(), MaxPruneFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty,
			Actions: acts, Plans: plans, PlanTimeout: sc.Preview.PlanTimeout, PlanConcurrency: sc.Preview.PlanConcurrency, Redact: secrets, Roots: previewRoots(cfg, acts),
			NoResolve: sc.Preview.ResolveOutputs == config.ResolveNever, ResolveForks: sc.Preview.ResolveOutputs == config.ResolveAlways,
			ForkPlans: sc.Preview.ForkPlans, Policies: policies}}), nil
}

// previewPublisher is what sc's preview runner fetches pull requests with (src) and
// publishes its statuses and comments through (sc's commitStatus block, which config
// validation requires of a source that previews).
func previewPublisher(sc config.Source, src sources.Source) (preview.Fetcher, *commitstatus.Previewer, error) {
	fetcher, ok := src.(preview.Fetcher)
	if !ok {
		return nil, nil, fmt.Errorf("source %s: preview: the source cannot fetch pull-request refs", sc.Name)
	}
	pub, err := commitstatus.NewPreviewer(statusConfig(sc), sc.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("source %s: preview: %w", sc.Name, err)
	}
	return fetcher, pub, nil
}

// previewRoots are the controller's folders that previews cut from what plans publish: the
// config file's folder, the data folder (git mirrors, the private PostgreSQL) and the
// folders the actions keep files in (actions.LocalDirs). The temp dir is added by the preview.
func previewRoots(cfg *config.Config, acts map[string]actions.Action) []string {
	dirs := []string{cfg.BaseDir, cfg.DataDir}
	for _, a := range acts {
		if l, ok := a.(actions.LocalDirs); ok {
			dirs = append(dirs, l.LocalDirs()...)
		}
	}
	var roots []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			roots = append(roots, abs)
		}
	}
	return roots
}

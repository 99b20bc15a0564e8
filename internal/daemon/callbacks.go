package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/notifier"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// actionType is the plugin type of the action instance name in the config running ("":
// none); the reconciler's traces name it.
func (rt *Daemon) actionType(name string) string {
	for _, a := range rt.cfg.Load().Actions {
		if a.Name == name {
			return a.Type
		}
	}
	return ""
}

// checkAction is the syncers' CheckAction: against the action instances configured now.
func (rt *Daemon) checkAction(name string, with json.RawMessage) error {
	return CheckAction(rt.acts.Current())(name, with)
}

// checkReference is the syncers', previews' and reconciler's CheckReference: against the
// grants of the config running (a reload applies them at once).
func (rt *Daemon) checkReference(from string, target graph.ID, outputs []string) error {
	return crossref.Check(rt.cfg.Load().References.Expose, from, target, outputs)
}

// policies is the reconciler's Policies: those of the config running and its approvalTTL (a
// reload applies them at once).
func (rt *Daemon) policies() (*policy.Set, time.Duration) {
	c := rt.cfg.Load()
	return c.PolicySet(), c.ApprovalTTL
}

// windows is the reconciler's and the server's Windows: those of the config running (a
// reload applies them at once).
func (rt *Daemon) windows() *changewindow.Set { return rt.cfg.Load().WindowSet() }

// liveHeld reports whether this replica holds its liveness session (false before Start took
// it): a singleton lease taken without one is released by peers and by the next session.
func (rt *Daemon) liveHeld() bool {
	l := rt.live.Load()
	return l != nil && l.Held()
}

// setReveal builds the reconciler's Reveal with keys.
func (rt *Daemon) setReveal(keys map[string]*sealed.Keys) {
	rt.keys = keys
	r := revealer(rt.store, keys, rt.resolver)
	rt.reveal.Store(&r)
}

// revealKeys are the keys Reveal decrypts a source's resources with: those its running copy's
// syncer opens them with (running), so that both use the same generation of a rotated key;
// for a configured source with no copy running, those Reveal had.
func revealKeys(names []string, running map[string]*runningSource, had map[string]*sealed.Keys) map[string]*sealed.Keys {
	out := map[string]*sealed.Keys{}
	for _, name := range names {
		k := had[name]
		if rs := running[name]; rs != nil {
			k = rs.keys
		}
		if k != nil {
			out[name] = k
		}
	}
	return out
}

// revealCall is reconciler.Options.Reveal.
func (rt *Daemon) revealCall(ctx context.Context, c store.Claimed) (json.RawMessage, []string, error) {
	return (*rt.reveal.Load())(ctx, c)
}

// record writes this replica's config status to its replicas row (the dashboard's replicas
// table): the config running, and what is not in effect (the errors of a reload refused or
// applied in part; the blocks that wait for a restart).
func (rt *Daemon) record(res server.ReloadResult) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), 5*time.Second)
	defer cancel()
	for _, c := range replicaConfigs(rt.hash, res) {
		if err := rt.store.SetReplicaConfig(ctx, rt.replica, c); err != nil {
			rt.log.Warn("record the config status", "err", err)
			return
		}
	}
}

// replicaConfigs are the config status writes of a reload's result, in order: the file now
// running (hash), unless the reload was refused, then what of it is not in effect, if
// anything (a refusal keeps the hash running before).
func replicaConfigs(hash string, res server.ReloadResult) []store.ReplicaConfig {
	var out []store.ReplicaConfig
	if res.OK || res.Partial {
		out = append(out, store.ReplicaConfig{Hash: hash, LoadedAt: res.At})
	}
	var lines []string
	if !res.OK {
		lines = append(lines, res.Errors...)
	}
	if len(res.RestartRequired) > 0 {
		lines = append(lines, restartLine(res.RestartRequired))
	}
	if len(lines) > 0 {
		out = append(out, store.ReplicaConfig{Error: strings.Join(lines, "\n"), ErrorAt: res.At})
	}
	return out
}

// restartLine says which blocks of the file are not in effect.
func restartLine(blocks []string) string {
	return "restart required: " + strings.Join(blocks, ", ") + " changed in the file but keep their running values until the next restart"
}

// newSender builds the notification sender of cfg. It runs without a notifications block
// too: the outbox is written whatever the config says, and with no rule its entries are
// finished unsent and trimmed.
func newSender(st *store.Store, cfg *config.Config, replica string, live func() bool, met *metrics.Metrics, logger *slog.Logger) (*notifier.Sender, error) {
	ncfg := config.Notifications{MaxAttempts: 1}
	if cfg.Notifications != nil {
		ncfg = *cfg.Notifications
	}
	s, err := notifier.New(st, ncfg, notifier.Options{Replica: replica, LeaseTTL: cfg.Reconcile.LeaseTTL, Live: live,
		ExternalURL: cfg.Server.ExternalURL, Metrics: met,
		KeepSent: cfg.Retention.Notifications.Sent, KeepDead: cfg.Retention.Notifications.Dead}, logger)
	if err != nil {
		return nil, cfg.ScrubError(fmt.Errorf("notifications: %w", err))
	}
	return s, nil
}

// configHash names the content of the config file at path (sha256, shortened; "" when it
// cannot be read).
func configHash(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

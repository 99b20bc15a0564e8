package daemon

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/internal/webhook"
)

// listen holds the replica's LISTEN connection until ctx ends and routes what it hears:
// due work wakes the claimer, a freed lease its taker, a sync request the source's syncer,
// committed changes the watch hub.
func listen(ctx context.Context, st *store.Store, rec *reconciler.Reconciler, maint *reconciler.Maintenance, srv *server.Server,
	syncers func(string) *syncer.Syncer, requests syncRequests, wakeAll func(), logger *slog.Logger) {
	st.Listen(ctx, []string{store.WorkChannel, store.SyncChannel, store.ChangesChannel, store.LeasesChannel}, func(channel, payload string) {
		switch channel {
		case store.WorkChannel:
			rec.Wake()
		case store.LeasesChannel:
			// A lease was given up (shutdown, a source removed by a reload) or taken from a
			// dead replica: take it now.
			name, ok := strings.CutPrefix(payload, "source:")
			switch s := syncers(name); {
			case ok && s != nil:
				s.LeasesFreed()
			case payload == "maintenance":
				maint.Wake()
			default:
				wakeAll()
			}
		case store.SyncChannel:
			requests.notified(payload)
		case store.ChangesChannel:
			srv.NotifyChanges()
		default: // (re)connected: look for anything missed
			rec.Wake()
			srv.NotifyChanges()
		}
	}, logger)
}

// syncRequests routes requests for a sync between replicas: any replica may receive a
// source's push webhook, the holder of the source's lease acts on it, once. The receiver
// triggers its own syncer when it holds the lease and otherwise asks the holder through
// NOTIFY; it never does both, since its own NOTIFY would come back through its LISTEN and
// sync a second time.
type syncRequests struct {
	store   *store.Store
	syncers func(name string) *syncer.Syncer // nil: the source is not configured here
	log     *slog.Logger
}

// webhook is the webhook handler's Trigger.
func (r syncRequests) webhook(source, commit string) {
	if s := r.syncers(source); s != nil && s.TriggerIfHolder(commit) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.store.NotifySync(ctx, source, commit); err != nil {
		r.log.Warn("notify other replicas of a webhook", "source", source, "err", err)
	}
}

// notified handles a notification on store.SyncChannel ("source" or "source commit").
func (r syncRequests) notified(payload string) {
	name, commit, _ := strings.Cut(payload, " ")
	if s := r.syncers(name); s != nil {
		s.TriggerCommit(commit)
	}
}

// webhookSources lists the sources that accept push webhooks, with the branch they track
// ("" for tag, commit and folder sources: any push triggers a check).
func webhookSources(cfg *config.Config) map[string]webhook.Source {
	out := map[string]webhook.Source{}
	for _, sc := range cfg.Sources {
		if sc.Webhook == nil {
			continue
		}
		ws := webhook.Source{Name: sc.Name, Secret: sc.Webhook.Secret, Preview: sc.PreviewEnabled()}
		if sp := sc.Spec(); sp != nil {
			ws.Branch = sp.Info().Branch
		}
		if oci := sc.OCI; oci != nil {
			ws.Repository, ws.Tag = oci.Repository(), oci.Tag
		}
		out[sc.Name] = ws
	}
	return out
}

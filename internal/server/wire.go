package server

import (
	"net/http"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The API's answers (package api) built from the store's rows. Where a row and its wire type
// have the same fields, a conversion copies them: a field added to one and not the other
// fails to compile here rather than vanishing from the API.

func writeJSON(w http.ResponseWriter, code int, v any) { wire.WriteJSON(w, code, v) }

func writeError(w http.ResponseWriter, code int, msg string) { wire.WriteError(w, code, msg) }

// wireAll converts rows with f; the list is never null on the wire.
func wireAll[R, W any](rows []R, f func(R) W) []W {
	out := make([]W, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

func resourceWire(r store.Resource) wire.Resource {
	return wire.Resource{APIVersion: r.APIVersion, Kind: r.Kind, Metadata: wire.Metadata(r.Metadata), Spec: r.Spec,
		Status: wire.ResourceStatus(r.Status), Source: wire.ResourceSource(r.Source), DependsOn: edgesWire(r.DependsOn)}
}

// edgesWire keeps no edges absent: a list item without dependencies has no dependsOn.
func edgesWire(es []store.ResourceEdge) []wire.Dependency {
	if len(es) == 0 {
		return nil
	}
	return wireAll(es, func(e store.ResourceEdge) wire.Dependency {
		return wire.Dependency{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name, Explicit: e.Explicit, Outputs: nonNil(e.Outputs)}
	})
}

func typeWire(t store.ResourceType) wire.ResourceType {
	out := wire.ResourceType{Name: t.Name, Group: t.Group, Source: t.Source, Path: t.Path, Revision: t.Revision, Spec: t.Spec,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.Drift != nil {
		out.Drift = &wire.DriftPolicy{Mode: t.Drift.Mode, Ignore: t.Drift.Ignore}
	}
	return out
}

func historyWire(h store.HistoryEntry) wire.HistoryEntry { return wire.HistoryEntry(h) }

func eventWire(e store.Event) wire.Event { return wire.Event(e) }

func changeWire(c store.Change) wire.Change { return wire.Change(c) }

func sourceWire(s store.Source) wire.Source {
	return wire.Source{Name: s.Name, URL: s.URL, Branch: s.Branch, Path: s.Path, Revision: s.Revision,
		LastAttemptedRevision: s.LastAttemptedRevision, LastSyncTime: s.LastSyncTime, Conditions: s.Conditions,
		Errors: sourceErrorsWire(s.Errors), Holder: s.Holder, LastPollTime: s.LastPollTime,
		LastCompletedSyncTime: s.LastCompletedSyncTime, LastWebhookTime: s.LastWebhookTime, HeadRevision: s.HeadRevision,
		LagSeconds: s.LagSeconds, Suspended: s.Suspended, PendingRevision: s.PendingRevision, Prune: wire.SourcePrune(s.Prune),
		Pinned: pinWire(s.Pin)}
}

// sourceErrorsWire keeps a nil list nil: a source that never failed shows "errors": null.
func sourceErrorsWire(es []store.SourceError) []wire.SourceError {
	if es == nil {
		return nil
	}
	return wireAll(es, func(e store.SourceError) wire.SourceError { return wire.SourceError(e) })
}

func replicaWire(r store.Replica) wire.Replica {
	a := wire.Replica{Name: r.Name, Hostname: r.Hostname, PID: r.PID, Version: r.Version, Listen: r.Listen,
		StartedAt: r.StartedAt, LastSeen: r.LastSeen, Alive: r.Alive, Leases: r.Leases, Reconciles: r.Reconciles,
		Config: wire.ReplicaConfig{Hash: r.Config.Hash, Error: r.Config.Error}}
	if !r.Config.LoadedAt.IsZero() {
		a.Config.LoadedAt = &r.Config.LoadedAt
	}
	if !r.Config.ErrorAt.IsZero() {
		a.Config.ErrorAt = &r.Config.ErrorAt
	}
	return a
}

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/policy"
)

// Timeline entry kinds.
const (
	TimelineAttempt      = "attempt"
	TimelineCommit       = "commit"
	TimelineOperator     = "operator"
	TimelineDrift        = "drift"
	TimelineWait         = "wait"
	TimelineNotification = "notification"
	TimelineEvent        = "event"
)

// timelineKinds sorts the events of a resource into timeline kinds (TimelineEvent otherwise).
var timelineKinds = map[string]string{
	"Created": TimelineCommit, "SpecChanged": TimelineCommit, "DeletionRequested": TimelineCommit,
	ReasonManualReconcile: TimelineOperator, ReasonWindowOverride: TimelineOperator, ReasonApprovalGiven: TimelineOperator,
	ReasonRejectionGiven: TimelineOperator, ReasonSuspended: TimelineOperator, ReasonResumed: TimelineOperator,
	ReasonAbandoned: TimelineOperator,
	"DriftDetected": TimelineDrift,
	"WindowClosed":  TimelineWait, "ApprovalRequired": TimelineWait, "PolicyDenied": TimelineWait, "Rejected": TimelineWait,
	"WaitingForDependency": TimelineWait,
}

// TimelineEntry is one thing that happened to a resource: an attempt (history), an event
// or a notification.
type TimelineEntry struct {
	Time     time.Time
	Kind     string // TimelineAttempt, TimelineCommit, …
	Reason   string // the event's reason, the attempt's operation, the notification's event
	Message  string
	Actor    string // who asked for a manual attempt
	Revision string // the attempt's revision; the commit's (abbreviated as its event says it)
	Result   string // the attempt's result; the notification's state
}

// Timeline is a resource's history, events and notifications in time order, with what
// deciding its blocking reasons reads besides its status.
type Timeline struct {
	Resource Resource
	Entries  []TimelineEntry
	// Suspended, Attempt and RunAt are the row's (RunAt nil: not scheduled).
	Suspended bool
	Attempt   int
	RunAt     *time.Time
	// SourceSuspended and Pin are its source's (Pin nil: not pinned).
	SourceSuspended bool
	Pin             *SourcePin
	// Dependencies are those not Ready.
	Dependencies []TimelineDep
}

// TimelineDep is a dependency that is not Ready: Resource is what windows select it by
// (Kind as its row spells it; the edge's when it does not exist). A dependency in a namespace
// the reader's scope does not see is Hidden: Resource holds only the namespace, kind and name
// the dependent's edge names, Exists and Phase are zero. That it is not Ready is what the
// dependent's own DependenciesReady condition says already.
type TimelineDep struct {
	Resource policy.Resource
	Exists   bool
	Phase    string
	Hidden   bool
}

// Timeline reads a resource's timeline in scope sc: the newest limit entries (default 100
// when limit is not positive, 1000 when it is larger) in time order, oldest first. A resource that does not exist, or that sc does
// not see, is ErrNotFound.
func (s *Store) Timeline(ctx context.Context, sc Scope, namespace, kind, name string, limit int) (*Timeline, error) {
	if !sc.Contains(namespace) {
		return nil, resourceNotFound(namespace, kind, name)
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	// One read of the row: the resource, its scheduling and its source's suspension and pin.
	t := &Timeline{}
	var id int64
	var pinRev, pinBy, pinReason string
	var pinAt *time.Time
	res, err := scanResource(s.reader().QueryRow(ctx, `SELECT id, suspended, attempt, run_at, COALESCE(src.src_suspended, false),
		  COALESCE(src.pin_revision, ''), COALESCE(src.pin_by, ''), COALESCE(src.pin_why, ''), src.pin_at, `+resourceColumns+`
		FROM resources`+withQueue+` LEFT JOIN LATERAL (SELECT s.suspended AS src_suspended, s.pinned_revision AS pin_revision,
		  s.pinned_by AS pin_by, s.pin_reason AS pin_why, s.pinned_at AS pin_at FROM sources s WHERE s.name = resources.source) src ON true
		WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3`, namespace, kind, name),
		&id, &t.Suspended, &t.Attempt, &t.RunAt, &t.SourceSuspended, &pinRev, &pinBy, &pinReason, &pinAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, resourceNotFound(namespace, kind, name)
	}
	if err != nil {
		return nil, fmt.Errorf("timeline of %s/%s/%s: %w", namespace, kind, name, err)
	}
	t.Resource = res
	if pinRev != "" {
		t.Pin = &SourcePin{Revision: pinRev, Actor: pinBy, Reason: pinReason}
		if pinAt != nil {
			t.Pin.At = *pinAt
		}
	}
	if t.Dependencies, err = s.depsNotReady(ctx, sc, id); err != nil {
		return nil, err
	}
	if t.Entries, err = s.timelineEntries(ctx, namespace, res.Kind, name, limit); err != nil {
		return nil, fmt.Errorf("timeline of %s/%s/%s: %w", namespace, kind, name, err)
	}
	return t, nil
}

// depsNotReady reads the dependencies of the row id that are not Ready (as the claim's gate
// decides it), with the state of those in scope sc; those out of it are Hidden.
func (s *Store) depsNotReady(ctx context.Context, sc Scope, id int64) ([]TimelineDep, error) {
	args := params{id}
	visible, scoped := "true", ""
	if w := sc.where("e.dep_namespace", args.add); w != "" {
		visible, scoped = w, " AND "+w
	}
	// d decides readiness only; v, joined in scope, is what the answer tells of the dependency.
	rows, err := s.reader().Query(ctx, `SELECT e.dep_namespace, COALESCE(v.kind, e.dep_kind), e.dep_name, `+visible+`, v.id IS NOT NULL,
		  COALESCE(v.phase, ''), COALESCE(v.source, ''), COALESCE(v.api_version, ''), COALESCE(v.labels, '{}'), COALESCE(v.annotations, '{}')
		FROM resource_edges e
		LEFT JOIN resources d ON d.namespace = e.dep_namespace AND lower(d.kind) = lower(e.dep_kind) AND d.name = e.dep_name
		LEFT JOIN resources v ON v.id = d.id`+scoped+`
		WHERE e.resource_id = $1 AND NOT COALESCE(`+readySQL+`, false)
		ORDER BY e.dep_namespace, lower(e.dep_kind), e.dep_name`, args...)
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	var out []TimelineDep
	var d TimelineDep
	var seen bool
	var labels, ann []byte
	_, err = pgx.ForEachRow(rows, []any{&d.Resource.Namespace, &d.Resource.Kind, &d.Resource.Name, &seen, &d.Exists, &d.Phase,
		&d.Resource.Source, &d.Resource.APIVersion, &labels, &ann}, func() error {
		if err := decodeStrings(labels, &d.Resource.Labels); err != nil {
			return err
		}
		if err := decodeStrings(ann, &d.Resource.Annotations); err != nil {
			return err
		}
		d.Hidden = !seen
		out = append(out, d)
		d = TimelineDep{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	return out, nil
}

// timelineEntries merges the newest limit history rows, events and notifications of a
// resource, oldest first.
func (s *Store) timelineEntries(ctx context.Context, namespace, kind, name string, limit int) ([]TimelineEntry, error) {
	rows, err := s.reader().Query(ctx, `SELECT * FROM (
		  (SELECT started_at AS t, 'h' AS src, operation, message, actor, revision, result, trigger, id
		   FROM reconcile_history WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3 ORDER BY id DESC LIMIT $4)
		  UNION ALL
		  (SELECT created_at, 'e', reason, message, '', '', '', '', id
		   FROM events WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3 ORDER BY id DESC LIMIT $4)
		  UNION ALL
		  (SELECT created_at, 'n', event, message, '', revision, state, '', id
		   FROM notification_outbox WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3 ORDER BY id DESC LIMIT $4)
		  UNION ALL
		  -- A resource created in bulk has no event of its own: its source's Created event of
		  -- the same transaction (the same created_at) stands for it (events_source_created).
		  -- A source's events name nothing (name ''); a cluster-scoped resource's own have no
		  -- namespace either, and are not its source's.
		  (SELECT e.created_at, 'e', e.reason, e.message, '', '', '', '', e.id
		   FROM resources r JOIN events e ON e.created_at = r.created_at AND e.source = r.source AND e.name = '' AND e.reason = 'Created'
		   WHERE r.namespace = $1 AND lower(r.kind) = lower($2) AND r.name = $3 LIMIT 1)
		) x ORDER BY t DESC, id DESC LIMIT $4`, namespace, kind, name, limit)
	if err != nil {
		return nil, err
	}
	var out []TimelineEntry
	var e TimelineEntry
	var src, trigger string
	var rowID int64
	_, err = pgx.ForEachRow(rows, []any{&e.Time, &src, &e.Reason, &e.Message, &e.Actor, &e.Revision, &e.Result, &trigger, &rowID}, func() error {
		switch src {
		case "h":
			e.Kind = TimelineAttempt
			if trigger != "" {
				e.Reason += " (" + trigger + ")"
			}
		case "n":
			e.Kind = TimelineNotification
		default:
			e.Kind = timelineKinds[e.Reason]
			if e.Kind == "" {
				e.Kind = TimelineEvent
			}
			if e.Kind == TimelineCommit {
				if i := strings.LastIndex(e.Message, " at "); i >= 0 {
					e.Revision = e.Message[i+len(" at "):]
				}
			}
		}
		out = append(out, e)
		e = TimelineEntry{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

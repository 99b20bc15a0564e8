package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The tools' inputs. Their JSON schemas are inferred from these types (a field without
// omitempty is required); what a schema cannot say is checked by check (clear errors before
// any call), the rest by the API, whose refusals come back as the tool's error.

type resourceIn struct {
	Namespace string `json:"namespace" jsonschema:"the resource's namespace (default is the namespace of manifests that name none)"`
	Kind      string `json:"kind" jsonschema:"the resource's kind, e.g. DatabaseCluster (case-insensitive)"`
	Name      string `json:"name" jsonschema:"the resource's name"`
}

func (r resourceIn) check() error {
	return required("namespace", r.Namespace, "kind", r.Kind, "name", r.Name)
}

func (r resourceIn) path() string { return apiclient.ResourcePath(r.Namespace, r.Kind, r.Name) }

type listResourcesIn struct {
	Namespace     string `json:"namespace,omitempty" jsonschema:"only this namespace (default: every namespace the caller sees)"`
	Kind          string `json:"kind,omitempty" jsonschema:"only this kind (case-insensitive)"`
	Source        string `json:"source,omitempty" jsonschema:"only what this source declares"`
	Phase         string `json:"phase,omitempty" jsonschema:"only this phase: Pending, Reconciling, Ready, Failed or Deleting"`
	LabelSelector string `json:"labelSelector,omitempty" jsonschema:"label selector: k=v, k!=v, k in (a,b), k notin (a,b), k, !k; comma-separated"`
	Set           string `json:"set,omitempty" jsonschema:"only the resources this ResourceSet generates"`
	Limit         int    `json:"limit,omitempty" jsonschema:"resources per page, 1 to 1000 (default 100)"`
	Continue      string `json:"continue,omitempty" jsonschema:"the continue token of the previous page"`
}

type limitedResourceIn struct {
	Namespace string `json:"namespace" jsonschema:"the resource's namespace"`
	Kind      string `json:"kind" jsonschema:"the resource's kind (case-insensitive)"`
	Name      string `json:"name" jsonschema:"the resource's name"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many entries, the newest, 1 to 1000 (default 50)"`
}

type eventsIn struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"only this namespace"`
	Kind      string `json:"kind,omitempty" jsonschema:"only this kind"`
	Name      string `json:"name,omitempty" jsonschema:"only resources of this name"`
	Source    string `json:"source,omitempty" jsonschema:"only events of this source"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many events, the newest, 1 to 1000 (default 100)"`
}

type graphIn struct {
	Source    string `json:"source,omitempty" jsonschema:"the graph of this source's resources"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the graph of this namespace's resources"`
	Resource  string `json:"resource,omitempty" jsonschema:"KIND/NAMESPACE/NAME: this resource's surroundings instead (without source and namespace)"`
	Depth     int    `json:"depth,omitempty" jsonschema:"with resource: how many hops around it (0: no limit)"`
}

type sourceIn struct {
	Name   string `json:"name" jsonschema:"the source's name"`
	Counts bool   `json:"counts,omitempty" jsonschema:"also count its resources by phase"`
}

type sourceLimitIn struct {
	Name  string `json:"name" jsonschema:"the source's name"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many, the newest, 1 to 1000"`
}

type previewIn struct {
	Source string `json:"source" jsonschema:"the source whose pull request it is"`
	Number int    `json:"number" jsonschema:"the pull (merge) request's number"`
}

type setsIn struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"only this namespace"`
	Source    string `json:"source,omitempty" jsonschema:"only what this source declares"`
}

type approvalsIn struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"only this namespace"`
	State     string `json:"state,omitempty" jsonschema:"pending (default), rejected or denied"`
}

type noIn struct{}

type commandIn struct {
	Namespace string `json:"namespace" jsonschema:"the resource's namespace"`
	Kind      string `json:"kind" jsonschema:"the resource's kind (case-insensitive)"`
	Name      string `json:"name" jsonschema:"the resource's name"`
	Reason    string `json:"reason,omitempty" jsonschema:"why, kept in its events and history"`
}

func (c commandIn) ref() resourceIn {
	return resourceIn{Namespace: c.Namespace, Kind: c.Kind, Name: c.Name}
}

type syncIn struct {
	Name string `json:"name" jsonschema:"the source's name"`
}

// required refuses empty values of the fields named in pairs (name, value, ...).
func required(pairs ...string) error {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			missing = append(missing, pairs[i])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s must not be empty", strings.Join(missing, ", "))
	}
	return nil
}

// limit adds limit to q when set, after checking it is from 1 to 1000.
func limit(q url.Values, n int) error {
	if n == 0 {
		return nil
	}
	if n < 1 || n > 1000 {
		return fmt.Errorf("limit %d: want 1 to 1000", n)
	}
	q.Set("limit", strconv.Itoa(n))
	return nil
}

// phase spells a phase as the API does; the API would answer an unknown one with nothing.
func phase(p string) (string, error) {
	for _, ph := range []string{status.PhasePending, status.PhaseReconciling, status.PhaseReady, status.PhaseFailed, status.PhaseDeleting} {
		if strings.EqualFold(p, ph) {
			return ph, nil
		}
	}
	return "", fmt.Errorf("phase %q: want Pending, Reconciling, Ready, Failed or Deleting", p)
}

// put sets q[k] to v when v is not empty.
func put(q url.Values, kv ...string) url.Values {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func sourcePath(name string) string { return "/api/v1/sources/" + url.PathEscape(name) }

// readTools answer questions; they change nothing.
var readTools = []tool{
	call[listResourcesIn]{name: "list_resources", title: "List resources",
		desc: "One page of the resources the caller sees, filtered as the API filters them; the answer's continue token fetches the next page.",
		run: func(ctx context.Context, b Backend, in listResourcesIn) (json.RawMessage, error) {
			q := put(url.Values{}, "namespace", in.Namespace, "kind", in.Kind, "source", in.Source, "continue", in.Continue)
			if in.Phase != "" {
				p, err := phase(in.Phase)
				if err != nil {
					return nil, err
				}
				q.Set("phase", p)
			}
			sel := in.LabelSelector
			if in.Set != "" {
				sel = strings.TrimPrefix(sel+","+manifest.LabelResourceSet+"="+in.Set, ",")
			}
			put(q, "labelSelector", sel)
			if in.Limit == 0 {
				in.Limit = 100
			}
			if err := limit(q, in.Limit); err != nil {
				return nil, err
			}
			return get(ctx, b, "/api/v1/resources", q)
		}},
	call[resourceIn]{name: "get_resource", title: "Get a resource",
		desc: "One resource: its spec, labels, phase, conditions, outputs, approval and source revision.",
		run: func(ctx context.Context, b Backend, in resourceIn) (json.RawMessage, error) {
			if err := in.check(); err != nil {
				return nil, err
			}
			return get(ctx, b, in.path(), nil)
		}},
	call[limitedResourceIn]{name: "resource_history", title: "Reconcile history of a resource",
		desc: "A resource's reconcile attempts, newest first: generation, revision, trigger, result, message, times; it outlives the resource.",
		run:  resourceSub("/history"),
	},
	call[limitedResourceIn]{name: "why_resource", title: "Why a resource is in its state",
		desc: "What holds a resource back now (change windows, dependencies, approvals, backoff, stalls, suspensions), then its timeline.",
		run:  resourceSub("/timeline"),
	},
	call[eventsIn]{name: "list_events", title: "List events",
		desc: "Events, newest first, of a resource (namespace, kind, name), a namespace, a kind or a source.",
		run: func(ctx context.Context, b Backend, in eventsIn) (json.RawMessage, error) {
			q := put(url.Values{}, "namespace", in.Namespace, "kind", in.Kind, "name", in.Name, "source", in.Source)
			if err := limit(q, in.Limit); err != nil {
				return nil, err
			}
			return get(ctx, b, "/api/v1/events", q)
		}},
	call[graphIn]{name: "get_graph", title: "Dependency graph",
		desc: "The dependency graph of a source's or a namespace's resources, or of one resource's surroundings: nodes and edges, explicit or from output references.",
		run: func(ctx context.Context, b Backend, in graphIn) (json.RawMessage, error) {
			q := put(url.Values{}, "source", in.Source, "namespace", in.Namespace, "resource", in.Resource)
			if in.Depth != 0 {
				q.Set("depth", strconv.Itoa(in.Depth))
			}
			return get(ctx, b, "/api/v1/graph", q)
		}},
	call[noIn]{name: "list_sources", title: "List sources",
		desc: "The sources the caller sees: revision applied, last sync, Ready condition, rejected revisions' errors.",
		run: func(ctx context.Context, b Backend, _ noIn) (json.RawMessage, error) {
			return get(ctx, b, "/api/v1/sources", nil)
		}},
	call[sourceIn]{name: "get_source", title: "Get a source",
		desc: "One source; with counts, its resources counted by phase.",
		run: func(ctx context.Context, b Backend, in sourceIn) (json.RawMessage, error) {
			if err := required("name", in.Name); err != nil {
				return nil, err
			}
			q := url.Values{}
			if in.Counts {
				q.Set("counts", "true")
			}
			return get(ctx, b, sourcePath(in.Name), q)
		}},
	call[sourceLimitIn]{name: "source_revisions", title: "Revisions of a source",
		desc: "The revisions a source applied or rejected, newest first, with what each changed.",
		run:  sourceSub("/revisions"),
	},
	call[sourceLimitIn]{name: "list_previews", title: "Pull-request previews of a source",
		desc: "The previews of a source's pull requests: what each would change, newest first.",
		run:  sourceSub("/previews"),
	},
	call[previewIn]{name: "get_preview", title: "Get a pull-request preview",
		desc: "The preview of one pull request: the resources it adds, changes and deletes, and their plans.",
		run: func(ctx context.Context, b Backend, in previewIn) (json.RawMessage, error) {
			if err := required("source", in.Source); err != nil {
				return nil, err
			}
			if in.Number < 1 {
				return nil, fmt.Errorf("number %d: want a pull request's number (1 or more)", in.Number)
			}
			return get(ctx, b, sourcePath(in.Source)+"/previews/"+strconv.Itoa(in.Number), nil)
		}},
	call[noIn]{name: "list_resource_types", title: "List resource types",
		desc: "The ResourceTypes: each kind's group, versions, schema and action.",
		run: func(ctx context.Context, b Backend, _ noIn) (json.RawMessage, error) {
			return get(ctx, b, "/api/v1/resourcetypes", nil)
		}},
	call[setsIn]{name: "list_resource_sets", title: "List ResourceSets",
		desc: "The ResourceSets the caller sees, with their inputs and how many members are Ready.",
		run: func(ctx context.Context, b Backend, in setsIn) (json.RawMessage, error) {
			return get(ctx, b, "/api/v1/resourcesets", put(url.Values{}, "namespace", in.Namespace, "source", in.Source))
		}},
	call[approvalsIn]{name: "list_approvals", title: "List approval requests",
		desc: "The changes that wait for approval (or were rejected or denied), with their plans and votes.",
		run: func(ctx context.Context, b Backend, in approvalsIn) (json.RawMessage, error) {
			switch in.State {
			case "", "pending", "rejected", "denied":
			default:
				return nil, fmt.Errorf("state %q: want pending, rejected or denied", in.State)
			}
			return get(ctx, b, "/api/v1/approvals", put(url.Values{}, "namespace", in.Namespace, "state", in.State))
		}},
}

// resourceSub reads a resource's sub-path (history, timeline) with a limit.
func resourceSub(sub string) func(ctx context.Context, b Backend, in limitedResourceIn) (json.RawMessage, error) {
	return func(ctx context.Context, b Backend, in limitedResourceIn) (json.RawMessage, error) {
		r := resourceIn{Namespace: in.Namespace, Kind: in.Kind, Name: in.Name}
		if err := r.check(); err != nil {
			return nil, err
		}
		if in.Limit == 0 {
			in.Limit = 50
		}
		q := url.Values{}
		if err := limit(q, in.Limit); err != nil {
			return nil, err
		}
		return get(ctx, b, r.path()+sub, q)
	}
}

// sourceSub reads a source's sub-path (revisions, previews) with a limit.
func sourceSub(sub string) func(ctx context.Context, b Backend, in sourceLimitIn) (json.RawMessage, error) {
	return func(ctx context.Context, b Backend, in sourceLimitIn) (json.RawMessage, error) {
		if err := required("name", in.Name); err != nil {
			return nil, err
		}
		q := url.Values{}
		if err := limit(q, in.Limit); err != nil {
			return nil, err
		}
		return get(ctx, b, sourcePath(in.Name)+sub, q)
	}
}

// operatorTools change things; NewServer adds them only when asked to, and the API refuses
// them to a caller who may not operate in the namespace.
var operatorTools = []tool{
	call[commandIn]{name: "reconcile_resource", title: "Reconcile a resource now", write: true,
		desc: "Reconciles a resource now, without waiting for its next run or its backoff.",
		run:  command("reconcile"),
	},
	call[commandIn]{name: "suspend_resource", title: "Suspend a resource", write: true,
		desc: "Suspends a resource: trueup does not reconcile it until it is resumed.",
		run:  command("suspend"),
	},
	call[commandIn]{name: "resume_resource", title: "Resume a resource", write: true,
		desc: "Resumes a suspended resource.",
		run:  command("resume"),
	},
	call[syncIn]{name: "sync_source", title: "Sync a source now", write: true,
		desc: "Fetches and applies a source's latest revision now.",
		run: func(ctx context.Context, b Backend, in syncIn) (json.RawMessage, error) {
			if err := required("name", in.Name); err != nil {
				return nil, err
			}
			return post(ctx, b, sourcePath(in.Name)+"/sync", nil)
		}},
	call[commandIn]{name: "approve_resource", title: "Approve a resource's change", write: true,
		desc: "Approves the change a resource waits for: the plan it shows now, refused if the plan changes meanwhile.",
		run:  approve,
	},
}

// command posts a resource command (reconcile, suspend, resume) with its reason.
func command(verb string) func(ctx context.Context, b Backend, in commandIn) (json.RawMessage, error) {
	return func(ctx context.Context, b Backend, in commandIn) (json.RawMessage, error) {
		if err := in.ref().check(); err != nil {
			return nil, err
		}
		var body any
		if in.Reason != "" {
			body = map[string]string{"reason": in.Reason}
		}
		return post(ctx, b, in.ref().path()+"/"+verb, body)
	}
}

// approve votes for the plan the resource waits with now (its hash and generation), as
// `trueup approve` does: a plan that changed meanwhile is refused, not approved unseen.
func approve(ctx context.Context, b Backend, in commandIn) (json.RawMessage, error) {
	if err := in.ref().check(); err != nil {
		return nil, err
	}
	var r wire.Resource
	if err := b.Get(ctx, in.ref().path(), nil, &r); err != nil {
		return nil, err
	}
	if r.Approval == nil || r.Approval.State != "pending" {
		return nil, errors.New("the resource waits for no approval")
	}
	return post(ctx, b, in.ref().path()+"/approve", wire.Vote{Reason: in.Reason, PlanHash: r.Approval.PlanHash, Generation: r.Approval.Generation})
}

package wire

import (
	"encoding/json"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

// Resource is a resource: GET /api/v1/resources lists them.
type Resource struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Metadata        `json:"metadata"`
	Spec       json.RawMessage `json:"spec"`
	Status     ResourceStatus  `json:"status"`
	Source     ResourceSource  `json:"source"`
	// DependsOn is what the resource depends on: listed under dependsOn, or implied by an
	// output reference in its spec. A list item names each dependency as the dependent's
	// manifest writes it and leaves out the dependency's state; absent when there are none.
	// GET of one resource answers a list of its own, with the state (the server's
	// resourceAnswer).
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// Approval is what the resource waits for under a policy: GET of one resource only,
	// absent when nothing gates it.
	Approval *Approval `json:"approval,omitempty"`
}

// Dependency is one thing a resource depends on. GET of one resource fills Phase, Source
// and Ready when the dependency exists, else Missing; a list leaves all four out.
type Dependency struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Explicit  bool     `json:"explicit"` // listed under dependsOn (else implied by a reference)
	Outputs   []string `json:"outputs"`  // the output paths the spec references; never null
	Phase     string   `json:"phase,omitempty"`
	Source    string   `json:"source,omitempty"`
	Ready     *bool    `json:"ready,omitempty"`
	Missing   bool     `json:"missing,omitempty"`
}

// Metadata is a resource's identity and bookkeeping.
type Metadata struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace"`
	UID               string            `json:"uid"`
	Generation        int64             `json:"generation"`
	Labels            map[string]string `json:"labels"`
	Annotations       map[string]string `json:"annotations"`
	CreationTimestamp time.Time         `json:"creationTimestamp"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp"`
}

// ResourceStatus is what the reconciler wrote.
type ResourceStatus struct {
	Phase              string             `json:"phase"`
	ObservedGeneration int64              `json:"observedGeneration"`
	Conditions         []status.Condition `json:"conditions"`
	Message            string             `json:"message"`
	Outputs            json.RawMessage    `json:"outputs"`
	LastReconcileTime  *time.Time         `json:"lastReconcileTime"`
	// NextReconcileTime is when the controller takes the resource up next: a retry after its
	// backoff, a resync, or now when work is due. Absent when nothing is scheduled.
	NextReconcileTime *time.Time `json:"nextReconcileTime,omitempty"`
	// Orphaned: the manifest is gone from Git but pruning kept the resource. Absent when false.
	Orphaned bool `json:"orphaned,omitempty"`
}

// ResourceSource says where the desired state came from.
type ResourceSource struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	Revision string `json:"revision"`
	// ResourceSet is the ResourceSet that generated the resource (in its namespace; the
	// resource's trueup.dev/resource-set label); Path and Line are then the set's template.
	// Absent for a written resource.
	ResourceSet string `json:"resourceSet,omitempty"`
}

// ResourceSet is a ResourceSet (kind ResourceSet, group trueup.dev): GET
// /api/v1/resourcesets lists them, GET /api/v1/resourcesets/{namespace}/{name} shows one.
// Its members are the resources labelled trueup.dev/resource-set=NAME in its namespace
// (GET /api/v1/resources?namespace=NS&labelSelector=trueup.dev/resource-set%3DNAME).
type ResourceSet struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Source    string `json:"source"`
	Path      string `json:"path"`
	Line      int    `json:"line,omitempty"`
	Revision  string `json:"revision"`
	// Inputs is the number of inputs after the matrix product.
	Inputs int `json:"inputs"`
	// Members is the number of resources the set generates in its revision.
	Members int `json:"members"`
	// Phases counts the members stored now by phase (a member being deleted counts as
	// Deleting until it is gone); never null.
	Phases    map[string]int `json:"phases"`
	CreatedAt time.Time      `json:"createdAt"`
	UpdatedAt time.Time      `json:"updatedAt"`
}

// ResourceType is a type: GET /api/v1/types lists them.
type ResourceType struct {
	Name     string          `json:"name"`
	Group    string          `json:"group"`
	Source   string          `json:"source"`
	Path     string          `json:"path"`
	Revision string          `json:"revision"`
	Spec     json.RawMessage `json:"spec"`
	// Drift is the type's spec.drift (nil: remediate, nothing ignored).
	Drift     *DriftPolicy `json:"drift,omitempty"`
	CreatedAt time.Time    `json:"createdAt"`
	UpdatedAt time.Time    `json:"updatedAt"`
}

// DriftPolicy is what a resync that finds drift does for a type's resources.
type DriftPolicy struct {
	Mode   string   `json:"mode"` // remediate, detect or notify
	Ignore []string `json:"ignore,omitempty"`
}

// HistoryEntry is one reconcile attempt: GET /api/v1/resources/…/history lists them.
type HistoryEntry struct {
	ID         int64  `json:"id"`
	UID        string `json:"uid"`
	Namespace  string `json:"namespace"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Revision   string `json:"revision"`
	Operation  string `json:"operation"`
	Trigger    string `json:"trigger"`
	Result     string `json:"result"`
	Message    string `json:"message"`
	Replica    string `json:"replica,omitempty"`
	// Actor is who asked for the attempt (trigger manual): "token:NAME", "user:NAME",
	// "git:REVISION"; empty for the engine's own work.
	Actor      string          `json:"actor,omitempty"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt"`
	DurationMs int64           `json:"durationMs"`
	Outputs    json.RawMessage `json:"outputs,omitempty"`
	// TraceID names the attempt's OpenTelemetry trace when it was sampled ("": none).
	TraceID string `json:"traceId,omitempty"`
}

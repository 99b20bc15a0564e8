package wire

import "time"

// Event is a Normal or Warning event about a resource or a source.
type Event struct {
	ID        int64     `json:"id"`
	Namespace string    `json:"namespace,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	Name      string    `json:"name,omitempty"`
	Source    string    `json:"source,omitempty"`
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Replica   string    `json:"replica,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Change is one entry of the changes feed (GET /api/v1/watch sends each as the data of an
// event named after its object).
type Change struct {
	ID         int64     `json:"id"`
	Object     string    `json:"object"` // resource | source
	Type       string    `json:"type"`   // ADDED | MODIFIED | DELETED
	Namespace  string    `json:"namespace,omitempty"`
	Kind       string    `json:"kind,omitempty"`
	Name       string    `json:"name"`
	Source     string    `json:"source,omitempty"`
	Phase      string    `json:"phase,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	At         time.Time `json:"at"`
}

// Replica is one trueup process sharing the database, with what it holds and the config it
// runs: GET /api/v1/replicas lists them.
type Replica struct {
	Name       string        `json:"name"`
	Hostname   string        `json:"hostname"`
	PID        int           `json:"pid"`
	Version    string        `json:"version"`
	Listen     string        `json:"listen"`
	StartedAt  time.Time     `json:"startedAt"`
	LastSeen   time.Time     `json:"lastSeen"`
	Alive      bool          `json:"alive"`
	Leases     []string      `json:"leases"`     // singleton leases held (source:NAME, maintenance)
	Reconciles int           `json:"reconciles"` // resources leased right now
	Config     ReplicaConfig `json:"config"`
}

// ReplicaConfig is the config a replica runs and its last refused reload.
type ReplicaConfig struct {
	Hash     string     `json:"hash"`
	LoadedAt *time.Time `json:"loadedAt"`
	Error    string     `json:"error"`
	ErrorAt  *time.Time `json:"errorAt"`
}

// Command is the answer to every operator command (reconcile, sync, suspend, resume,
// abandon): who asked, when, and what it touched.
type Command struct {
	Action      string        `json:"action"` // reconcile | sync | suspend | resume | abandon
	Actor       string        `json:"actor"`
	RequestedAt time.Time     `json:"requestedAt"`
	Source      string        `json:"source,omitempty"`
	Resources   []ResourceRef `json:"resources"`
	// OverrideWindow says a reconcile overrides the change windows, for Reason.
	OverrideWindow bool   `json:"overrideWindow,omitempty"`
	Reason         string `json:"reason,omitempty"`
}

// ResourceRef names a resource.
type ResourceRef struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

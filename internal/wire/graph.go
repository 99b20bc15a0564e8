package wire

// Graph is GET /api/v1/graph's answer. Nodes are named "Kind/namespace/name"; an edge goes
// from the dependent to its dependency.
type Graph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is a resource of the graph; Missing when a dependency does not exist, External
// when it lies outside the filter (the end of an edge).
type GraphNode struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase,omitempty"`
	Source    string `json:"source,omitempty"`
	Ready     bool   `json:"ready"`
	Missing   bool   `json:"missing,omitempty"`
	External  bool   `json:"external,omitempty"`
}

// GraphEdge is one dependency: explicit (dependsOn) or through output references.
type GraphEdge struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Explicit bool     `json:"explicit"`
	Outputs  []string `json:"outputs"`
}

package graph

import "slices"

// Graph is a dependency graph over nodes 0..n-1: an edge from a to b says a depends on b.
type Graph struct {
	edges [][]int32
}

// New returns a graph of n nodes and no edges.
func New(n int) *Graph { return &Graph{edges: make([][]int32, n)} }

// Edge records that from depends on to.
func (g *Graph) Edge(from, to int) { g.edges[from] = append(g.edges[from], int32(to)) }

// Cycles returns one cycle for each group of nodes that depend on each other (a strongly
// connected component with more than one node, or a node depending on itself), each as the
// nodes in dependency order — a depends on b, b on c, c on a — starting at the component's
// smallest node; the cycles are sorted by that node. Iterative (Tarjan), so a chain of
// 100,000 nodes needs no deep stack; linear in nodes and edges.
func (g *Graph) Cycles() [][]int {
	n := len(g.edges)
	index := make([]int32, n) // 0: not visited; else visit order + 1
	low := make([]int32, n)
	onStack := make([]bool, n)
	var stack []int32
	type frame struct {
		v    int32
		next int // next edge to follow
	}
	var calls []frame
	var next int32 = 1
	var comps [][]int32
	for root := 0; root < n; root++ {
		if index[root] != 0 {
			continue
		}
		calls = append(calls, frame{v: int32(root)})
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next < len(g.edges[v]) {
				w := g.edges[v][f.next]
				f.next++
				switch {
				case index[w] == 0:
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{v: w})
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int32
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 || slices.Contains(g.edges[v], v) {
				comps = append(comps, comp)
			}
		}
	}
	out := make([][]int, 0, len(comps))
	for _, comp := range comps {
		out = append(out, g.cycleIn(comp))
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// cycleIn finds a shortest cycle through the component's smallest node, staying inside the
// component (breadth first).
func (g *Graph) cycleIn(comp []int32) []int {
	in := make(map[int32]bool, len(comp))
	start := comp[0]
	for _, v := range comp {
		in[v] = true
		start = min(start, v)
	}
	parent := map[int32]int32{start: -1}
	queue := []int32{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.edges[v] {
			if w == start {
				var path []int
				for x := v; x != -1; x = parent[x] {
					path = append(path, int(x))
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := parent[w]; !seen && in[w] {
				parent[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int{int(start)} // unreachable: a component's nodes reach each other
}

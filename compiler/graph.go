package compiler

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"

	"github.com/runbookdev/runbook/lang"
)

// edgeKey names a dependency between two steps by their positions in
// analysis.steps.
type edgeKey struct{ from, to int }

// edgeSet collects dependencies as references are resolved. There is at most
// one edge per pair of steps; a data edge wins over a sequence edge, since
// it implies the ordering too.
//
// The map holds only each edge's position in keys and infos, not the edge:
// a small value keeps the table, which every reference looks up, a quarter
// of the size (BENCHMARKS.md, "Compile under 2 s").
type edgeSet struct {
	at     map[edgeKey]int // position in keys and infos
	keys   []edgeKey
	infos  []edgeInfo
	afters []afterEdge
}

// edgeInfo is an edge's kind and the reference that made it.
type edgeInfo struct {
	kind string
	at   lang.Range
}

// afterEdge is one `:after` reference, kept for the W002 check.
type afterEdge struct {
	key edgeKey
	ref lang.Range
}

func newEdgeSet(capacity int) *edgeSet {
	return &edgeSet{at: make(map[edgeKey]int, capacity), keys: make([]edgeKey, 0, capacity), infos: make([]edgeInfo, 0, capacity)}
}

// edgeStrength orders the kinds of edge between the same two steps: a
// data edge implies a settle edge's waiting, which implies a sequence
// edge's ordering.
func edgeStrength(kind string) int {
	switch kind {
	case EdgeSequence:
		return 1
	case EdgeSettle:
		return 2
	case EdgeData:
		return 3
	}
	return 0
}

func (e *edgeSet) add(k edgeKey, kind string, at lang.Range) {
	i, ok := e.at[k]
	switch {
	case !ok:
		e.at[k] = len(e.keys)
		e.keys = append(e.keys, k)
		e.infos = append(e.infos, edgeInfo{kind, at})
	case edgeStrength(kind) > edgeStrength(e.infos[i].kind):
		e.infos[i] = edgeInfo{kind, at}
	}
}

// info is the edge k's kind and reference; the zero edgeInfo when there is
// no such edge.
func (e *edgeSet) info(k edgeKey) edgeInfo {
	if i, ok := e.at[k]; ok {
		return e.infos[i]
	}
	return edgeInfo{}
}

func (e *edgeSet) kind(k edgeKey) string { return e.info(k).kind }

// addRef adds the edge a reference in to's call makes from from.
func (e *edgeSet) addRef(from, to *step, kind string, at lang.Range) {
	k := edgeKey{from.id, to.id}
	if kind == EdgeSequence {
		e.afters = append(e.afters, afterEdge{key: k, ref: at})
	}
	e.add(k, kind, at)
}

// order returns the steps in a stable topological order: among steps that
// are ready together, the one written first comes first, a nested call
// before the call it is nested in (see step.rank). When steps are left
// over, they are on or behind a cycle: the cycles are reported (E040) and
// order returns nil.
//
// The order is Kahn's algorithm with a heap over flat adjacency lists.
// dominikbraun/graph holds the DAG for cycle analysis, its Tarjan SCC naming
// the cycles; it is not used on the acyclic path because at 100k steps it
// costs more than the rest of compilation (see BenchmarkGraphLibrary), and
// its topological sorts rescan every vertex for each one placed, which is
// quadratic.
func (a *analysis) order() []*step {
	succ := make([][]int, len(a.steps))
	indegree := make([]int, len(a.steps))
	for _, k := range a.edges.keys {
		succ[k.from] = append(succ[k.from], k.to)
		indegree[k.to]++
	}
	ready := &stepHeap{steps: a.steps}
	for id, d := range indegree {
		if d == 0 {
			ready.ids = append(ready.ids, id)
		}
	}
	heap.Init(ready)
	order := make([]*step, 0, len(a.steps))
	for ready.Len() > 0 {
		id := heap.Pop(ready).(int)
		order = append(order, a.steps[id])
		for _, to := range succ[id] {
			if indegree[to]--; indegree[to] == 0 {
				heap.Push(ready, to)
			}
		}
	}
	if len(order) == len(a.steps) {
		return order
	}
	var stuck []int
	for id, d := range indegree {
		if d > 0 {
			stuck = append(stuck, id)
		}
	}
	a.reportCycles(stuck)
	return nil
}

// reportCycles finds the cycles among the steps Kahn's pass could not
// place, using dominikbraun/graph's strongly connected components.
//
// Vertex keys are step ids plus one: the library's Tarjan (v0.23.0) pops
// each component with `var hash K; for hash != vertexHash`, so the
// component of the vertex whose key is the zero value comes back empty.
func (a *analysis) reportCycles(stuck []int) {
	in := map[int]bool{}
	g := graph.New(graph.IntHash, graph.Directed())
	for _, id := range stuck {
		in[id] = true
		_ = g.AddVertex(id + 1) // ids are unique
	}
	for _, k := range a.edges.keys {
		if in[k.from] && in[k.to] {
			_ = g.AddEdge(k.from+1, k.to+1, graph.EdgeAttribute("kind", a.edges.kind(k)))
		}
	}
	sccs, err := graph.StronglyConnectedComponents(g)
	if err != nil {
		panic("compiler: SCC of a directed graph: " + err.Error())
	}
	succ := map[int][]int{}
	for _, k := range a.edges.keys {
		if in[k.from] && in[k.to] {
			succ[k.from] = append(succ[k.from], k.to)
		}
	}
	for _, scc := range sccs {
		if len(scc) > 1 {
			ids := make([]int, len(scc))
			for i, key := range scc {
				ids[i] = key - 1
			}
			a.reportCycle(ids, succ)
		}
	}
}

// stepHeap orders step ids by their rank: their position in the runbook,
// with nested calls before the calls they are nested in.
type stepHeap struct {
	ids   []int
	steps []*step
}

func (h *stepHeap) Len() int           { return len(h.ids) }
func (h *stepHeap) Less(i, j int) bool { return h.steps[h.ids[i]].rank < h.steps[h.ids[j]].rank }
func (h *stepHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *stepHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *stepHeap) Pop() any {
	last := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return last
}

// reportCycle names one cycle through the strongly connected component:
// the shortest that returns to the step written first, with each reference
// that closes a link as a related range.
func (a *analysis) reportCycle(scc []int, succ map[int][]int) {
	members := map[int]bool{}
	start := scc[0]
	for _, id := range scc {
		members[id] = true
		if a.steps[id].index < a.steps[start].index {
			start = id
		}
	}
	// Breadth-first from start, inside the component, back to start.
	parent := map[int]int{start: -1}
	queue := []int{start}
	last := -1
	for len(queue) > 0 && last < 0 {
		u := queue[0]
		queue = queue[1:]
		next := slices.Clone(succ[u])
		slices.Sort(next)
		for _, v := range next {
			if v == start {
				last = u
				break
			}
			if _, seen := parent[v]; !seen && members[v] {
				parent[v] = u
				queue = append(queue, v)
			}
		}
	}
	var path []int
	for v := last; v >= 0; v = parent[v] {
		path = append(path, v)
	}
	slices.Reverse(path)

	names := make([]string, 0, len(path)+1)
	for _, id := range path {
		names = append(names, "@"+a.steps[id].key)
	}
	names = append(names, "@"+a.steps[start].key)
	msg := "dependency cycle: " + strings.Join(names, " → ")
	if extra := len(scc) - len(path); extra > 0 {
		msg += fmt.Sprintf(" (%d more steps are caught in cycles with these)", extra)
	}
	d := a.diags.Errorf(lang.ECycle, a.edges.info(edgeKey{last, start}).at, "%s", msg)
	for i := 0; i+1 < len(path); i++ {
		k := edgeKey{path[i], path[i+1]}
		d.WithRelated(a.edges.info(k).at, "@%s depends on @%s here", a.steps[k.to].key, a.steps[k.from].key)
	}
}

// impliedSearchBudget bounds the work of the transitive W002 check over a
// whole compile. Beyond it, only the direct case (an :after on a step whose
// result the call already uses) is reported: a warning must never make a
// large runbook slow to compile.
const impliedSearchBudget = 2_000_000

// warnImpliedAfter reports `:after @x` where the step already depends on
// @x through other edges (W002).
func (a *analysis) warnImpliedAfter(order []*step) {
	if len(a.edges.afters) == 0 || a.diags.HasErrors() {
		return
	}
	preds := make([][]int, len(a.steps))
	for _, k := range a.edges.keys {
		preds[k.to] = append(preds[k.to], k.from)
	}
	pos := make([]int, len(a.steps)) // step id → position in the order
	for i, s := range order {
		pos[s.id] = i
	}
	search := &ancestorSearch{preds: preds, pos: pos, mark: make([]int, len(a.steps)), budget: impliedSearchBudget}
	for _, af := range a.edges.afters {
		from := a.steps[af.key.from].key
		to := a.steps[af.key.to]
		if a.edges.kind(af.key) == EdgeData {
			d := a.diags.Warnf(lang.WImpliedAfter, af.ref, ":after @%s is implied: this step already uses @%s's result", from, from)
			removeAfterFix(d, to.file, to.call, af.ref)
			continue
		}
		if via, ok := search.reachesAvoiding(af.key); ok {
			d := a.diags.Warnf(lang.WImpliedAfter, af.ref, ":after @%s is implied: this step already runs after @%s, which runs after @%s",
				from, a.steps[via].key, from)
			removeAfterFix(d, to.file, to.call, af.ref)
		}
	}
}

// ancestorSearch walks predecessors. Marks are stamped with a generation,
// so no visited set is allocated per search.
type ancestorSearch struct {
	preds  [][]int
	pos    []int
	mark   []int
	gen    int
	stack  []int
	budget int
}

// reachesAvoiding reports whether k.from is an ancestor of k.to through a
// path other than the edge k itself, and through which direct predecessor
// of k.to. A step placed before k.from in the topological order cannot
// have it as an ancestor, so the walk stops there.
func (s *ancestorSearch) reachesAvoiding(k edgeKey) (int, bool) {
	target := k.from
	for _, first := range s.preds[k.to] {
		if first == target {
			continue
		}
		s.gen++
		s.stack = append(s.stack[:0], first)
		s.mark[first] = s.gen
		for len(s.stack) > 0 {
			if s.budget--; s.budget < 0 {
				return 0, false
			}
			u := s.stack[len(s.stack)-1]
			s.stack = s.stack[:len(s.stack)-1]
			if u == target {
				return first, true
			}
			for _, p := range s.preds[u] {
				if s.mark[p] != s.gen && s.pos[p] >= s.pos[target] {
					s.mark[p] = s.gen
					s.stack = append(s.stack, p)
				}
			}
		}
	}
	return 0, false
}

// list returns the edges in plan order: by the position of their target,
// then of their source, in the topological order.
func (e *edgeSet) list(order []*step) []Edge {
	pos := make([]int, len(order)) // step id → position in order
	for i, s := range order {
		pos[s.id] = i
	}
	// The edges' positions are sorted, so each edge's kind is read from
	// infos rather than looked up again.
	idx := make([]int, len(e.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		x, y := e.keys[i], e.keys[j]
		if pos[x.to] != pos[y.to] {
			return pos[x.to] - pos[y.to]
		}
		return pos[x.from] - pos[y.from]
	})
	out := make([]Edge, len(idx))
	for i, j := range idx {
		k := e.keys[j]
		out[i] = Edge{From: order[pos[k.from]].key, To: order[pos[k.to]].key, Kind: e.infos[j].kind}
	}
	return out
}

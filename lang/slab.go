package lang

// slab hands out values of T from arrays made a few at a time, so that
// the AST of a large file costs one allocation per run of nodes of a type
// rather than one a node: at 100k calls, the parser's references, strings,
// integers and calls were half a million allocations (BENCHMARKS.md,
// "Compile under 2 s"). Arrays grow from 16 values to 1,024, so a small
// file pays for little it does not use. A node keeps its array alive,
// which lives as long as the file's AST anyway.
type slab[T any] struct {
	free []T
	size int
}

// new returns a zero T.
func (s *slab[T]) new() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 16), 1024)
		s.free = make([]T, s.size)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// nodeSlabs are the slabs of the AST's most numerous nodes.
type nodeSlabs struct {
	refs    slab[Ref]
	strings slab[String]
	ints    slab[Int]
	calls   slab[Call]
}

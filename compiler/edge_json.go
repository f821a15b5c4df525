package compiler

// appendEdge appends an edge's JSON, the bytes encoding/json makes of it:
// a 100k-step plan has over 100k edges, and encoding each by reflection,
// once for the hash and once for the file, took a tenth of writing the
// plan (BENCHMARKS.md, "Compile under 2 s"). TestEdgeJSONIsEncodingJSON
// holds the two equal.
func appendEdge(b []byte, e Edge) []byte {
	b = append(b, `{"from":`...)
	b = appendString(b, e.From)
	b = append(b, `,"to":`...)
	b = appendString(b, e.To)
	b = append(b, `,"kind":`...)
	b = appendString(b, e.Kind)
	return append(b, '}')
}

// appendEdges appends a list of edges as encoding/json would: null for a
// nil list.
func appendEdges(b []byte, edges []Edge) []byte {
	if edges == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range edges {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEdge(b, e)
	}
	return append(b, ']')
}

package compiler

import "io"

// appendEdge appends an edge's JSON, the bytes encoding/json makes of it:
// a 100k-step plan has over 100k edges, each encoded by reflection once
// for the hash and once for the file before (BENCHMARKS.md, "Compile
// under 2 s"). TestEdgeJSONIsEncodingJSON holds the two equal.
func appendEdge(b []byte, e Edge) []byte {
	b = append(b, `{"from":`...)
	b = appendString(b, e.From)
	b = append(b, `,"to":`...)
	b = appendString(b, e.To)
	b = append(b, `,"kind":`...)
	b = appendString(b, e.Kind)
	return append(b, '}')
}

// writeEdges writes a list of edges as encoding/json would (null for a
// nil list), a piece at a time: the hash reads a 100k-step plan's edges,
// 5.7 MB of JSON, without growing a slice and a buffer to hold them all,
// which allocated 39 MB.
func writeEdges(w io.Writer, edges []Edge) {
	if edges == nil {
		_, _ = w.Write([]byte("null"))
		return
	}
	const piece = 32 << 10
	buf := make([]byte, 0, piece+512)
	buf = append(buf, '[')
	for i, e := range edges {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendEdge(buf, e)
		if len(buf) >= piece {
			_, _ = w.Write(buf)
			buf = buf[:0]
		}
	}
	_, _ = w.Write(append(buf, ']'))
}

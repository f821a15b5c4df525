package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEdgeJSONIsEncodingJSON(t *testing.T) {
	edges := []Edge{
		{From: "a", To: "b", Kind: EdgeData},
		{From: "bench.step#12", To: "x[3][0]", Kind: EdgeSequence},
		{From: "quo\"te\\", To: "<tag>&\u2028\x01\xff", Kind: EdgeSettle},
		{},
	}
	for _, e := range edges {
		want, err := json.Marshal(e)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendEdge(nil, e)))
	}
	for _, list := range [][]Edge{nil, {}, edges[:1], edges} {
		want, err := json.Marshal(list)
		require.NoError(t, err)
		var w bytes.Buffer
		writeEdges(&w, list)
		require.Equal(t, string(want), w.String())
	}
	// Enough edges to be written in many pieces.
	many := make([]Edge, 5000)
	for i := range many {
		many[i] = Edge{From: fmt.Sprint("s", i), To: fmt.Sprint("s", i+1), Kind: EdgeData}
	}
	want, err := json.Marshal(many)
	require.NoError(t, err)
	var w bytes.Buffer
	writeEdges(&w, many)
	require.Equal(t, string(want), w.String())
}

package compiler

import (
	"encoding/json"
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
		require.Equal(t, string(want), string(appendEdges(nil, list)))
	}
}

package main

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every kind of runbook in the mix compiles against the soak's verbs, at
// every size it comes in.
func TestMixCompiles(t *testing.T) {
	pc, err := newPlanCompiler(verbsFor("http://127.0.0.1:1"))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		for range 50 {
			src := k.source(rng)
			_, err := pc.compile(src)
			require.NoError(t, err, "%s:\n%s", k.name, src)
		}
	}
}

package compiler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bigNested is nested for-each forms over lists written out, whose inner
// step reads a big string of the outer element in each of its instances.
func bigNested(outer, inner, big int) string {
	var b strings.Builder
	b.WriteString("(for-each [")
	for i := 0; i < outer; i++ {
		fmt.Fprintf(&b, "{:name %q :ports [1]} ", fmt.Sprint(i)+strings.Repeat("h", big))
	}
	b.WriteString("] :as @h\n  (for-each [")
	for i := 0; i < inner; i++ {
		fmt.Fprintf(&b, "%d ", i)
	}
	b.WriteString("] :as @p\n    (lb.drain :host @h.name :port @p)))\n")
	return b.String()
}

// The estimate of a plan's bytes while its lists written out are expanded
// refuses a plan over Options.MaxPlanBytes before making it (E054, naming
// the bytes), and never refuses one that fits: it counts low.
func TestWrittenListsAreRefusedPastThePlanBytes(t *testing.T) {
	cat := catalogueOf(t, "loops.yaml", loopVerbs)
	src := []byte(bigNested(10, 200, 2000))
	_, diags := Options{MaxPlanBytes: 1 << 20}.CompileSource("big.rbk", src, cat)
	require.True(t, diags.HasErrors())
	require.Equal(t, "E054", string(diags[0].Code))
	require.Contains(t, diags[0].Message, "a plan may have at most 1048576")
	require.Contains(t, diags[0].Message, "(for-each ... :as @p)")

	small := []byte(bigNested(4, 20, 500))
	plan, diags := Options{}.CompileSource("small.rbk", small, cat)
	require.False(t, diags.HasErrors(), diags.Error())
	size := len(plan.JSON())
	plan, diags = Options{MaxPlanBytes: size}.CompileSource("small.rbk", small, cat)
	require.False(t, diags.HasErrors(), "a plan of %d bytes refused under a bound of its size: %v", size, diags.Error())
	require.Len(t, plan.Steps, 80)
}

// Package synthetic generates example runbooks of any size, and the verb
// definition they call, for the compile benchmarks. The Go benchmarks of
// lang, compiler and rbc use it, and so does rbload, which times the rbc
// binary for `make bench`; that is why it is an ordinary package and not
// test code: a shipped binary must not import a test helper. It lives
// beside the example runbooks because that is what it makes (the top-level
// layout is fixed, and an internal/ package could not serve lang and
// compiler).
package synthetic

import (
	"fmt"
	"strings"
)

// Verbs defines bench.step, the verb Runbook calls, as a verb file
// (docs/design/verbs.md). It has an input and an output schema, so that compiling a
// generated runbook checks arguments and references as a real one would.
const Verbs = `- name: step
  domain: bench
  description: A no-op step for benchmarks.
  execution:
    kind: sync
    handler: core.echo
    side_effects: none
  input_schema:
    properties:
      input: {type: integer}
      other: {type: integer}
      label: {type: string}
      tags: {type: array, items: {type: string}}
      meta:
        type: object
        properties:
          owner: {type: string}
          step: {type: integer}
  output_schema:
    required: [value]
    properties:
      value: {type: integer}
`

// Runbook writes a runbook of n steps in which each step depends on the
// one before it, and every fourth also on one further back, in four call
// shapes (two references; a literal list; a map over two lines; an
// :after), the way generated runbooks look. The same n gives the same
// bytes.
func Runbook(n int) []byte {
	var b strings.Builder
	b.Grow(n * 64)
	b.WriteString(";; generated benchmark runbook\n")
	b.WriteString("(bench.step :input 0 :label \"first\" :as @s0)\n")
	for i := 1; i < n; i++ {
		back := (i * 7919) % i // a deterministic earlier step
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "(bench.step :input @s%d.value :other @s%d.value :label \"step %d\" :as @s%d)\n", i-1, back, i, i)
		case 1:
			fmt.Fprintf(&b, "(bench.step :input @s%d.value :tags [\"a\" \"b\" \"c\"] :as @s%d)\n", i-1, i)
		case 2:
			fmt.Fprintf(&b, "(bench.step\n  :input @s%d.value\n  :meta {:owner \"ops\" :step %d}\n  :as @s%d)\n", i-1, i, i)
		default:
			fmt.Fprintf(&b, "(bench.step :input %d :label \"step %d\" :after @s%d :as @s%d)\n", i, i, i-1, i)
		}
	}
	return []byte(b.String())
}

// Package langtest holds what tests and benchmarks of several packages
// share about runbook sources: a generator of large runbooks and the verb
// definition they call.
package langtest

import (
	"fmt"
	"strings"
)

// BenchVerbs defines bench.step, the verb GenerateRunbook calls.
const BenchVerbs = `- name: step
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
    properties:
      value: {type: integer}
`

// GenerateRunbook writes a runbook of n steps in which each step depends on
// the one before it, and every fourth also on one further back, in four
// call shapes (two references; a literal list; a map over two lines; an
// :after), the way generated runbooks look.
func GenerateRunbook(n int) []byte {
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

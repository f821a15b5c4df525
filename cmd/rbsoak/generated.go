package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// generatedSource writes a runbook that combines the forms the soak's
// service can serve (docs/design/semantics.md, "The model check"): a list
// made by a step, one or two for-each loops over it with :parallel and a
// condition on the element, an effect and sometimes a durable task per
// iteration, reading the iteration's effect, and steps that run after a
// loop's list or read it. Every step it makes succeeds or is skipped by
// its own condition, so it ends complete; the checks hold each effect to
// its step and each complete runbook to steps that completed or skipped
// by their own choice. An iteration's effect names the instance it is
// for: the list is 0..n-1, so (str "e[" @x "]") is its key.
func generatedSource(rng *rand.Rand) string {
	var b strings.Builder
	n := rng.IntN(5)
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	fmt.Fprintf(&b, "(soak.list :v [%s] :as @l)\n", strings.Join(list, " "))
	loops := 1 + rng.IntN(2)
	var lists []string
	for j := range loops {
		e, t := fmt.Sprintf("e%d", j), fmt.Sprintf("t%d", j)
		fmt.Fprintf(&b, "(for-each @l.v :as @x%d", j)
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, " :parallel %d", 1+rng.IntN(2))
		}
		fmt.Fprintf(&b, "\n  (soak.effect :run $run :step (str \"%s[\" @x%d \"]\")", e, j)
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, " :when (< @x%d %d)", j, rng.IntN(4))
		}
		fmt.Fprintf(&b, " :as @%s)", e)
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "\n  (soak.task :run $run :step (str \"%s[\" @x%d \"]\") :prev @%s.effect_id :as @%s)", t, j, e, t)
			lists = append(lists, t)
		} else {
			lists = append(lists, e)
		}
		b.WriteString(")\n")
	}
	after := make([]string, len(lists))
	for i, l := range lists {
		after[i] = "@" + l
	}
	fmt.Fprintf(&b, "(soak.effect :run $run :step \"join\" :after [%s] :as @join)\n", strings.Join(after, " "))
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&b, "(soak.effect :run $run :step \"last\" :prev @join.effect_id :when (> (count @%s) 0) :as @last)\n", lists[0])
	}
	return b.String()
}

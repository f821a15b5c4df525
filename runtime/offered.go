package runtime

import (
	"context"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/machine"
)

// offerTo keeps in a view's next_actions only what the token asking may
// do now, and moves the rest to unavailable_actions, each with the reason
// its command would be refused (docs/reference/http-api.md, next_actions):
// an approve of a gate whose step is above the token's max_risk or names
// :approvers of a group the token is not of (machine's DecideRefusal, the
// rule the decision itself applies), a retry that would run a verb
// outside the token's verbs= scope (machine's RetryRefusal). What a token
// may do by its roles is the HTTP API's to say (httpapi's offered.go). A
// context without a scope (the daemon's own work, tests in process) is
// offered everything.
func offerTo(ctx context.Context, v *apitype.RunbookView, steps []*driver.Step, plan *machine.PlanInfo) {
	s, ok := scopeOf(ctx)
	if !ok || s.All || len(v.NextActions) == 0 {
		return
	}
	d := machine.Decider{Ceiling: s.maxRisk(), Groups: s.Groups, AnyGroup: s.All}
	byKey := make(map[string]*driver.Step, len(steps))
	for _, st := range steps {
		byKey[st.Key] = st
	}
	// A retry is judged step by step (what it reopens) only when some
	// step calls a verb outside the token's verbs=: a runbook of many
	// failed steps is not walked once per retry offered.
	retriesFree := true
	for _, st := range steps {
		retriesFree = retriesFree && s.Verbs.Allows(st.Verb)
	}
	kept := v.NextActions[:0]
	for _, a := range v.NextActions {
		why := ""
		switch a.Kind {
		case apitype.ActionApprove:
			if st := byKey[a.Step]; st != nil {
				why = plan.DecideRefusal(st, d)
			}
		case apitype.ActionRetry:
			if !retriesFree {
				why = plan.RetryRefusal(steps, a.Step, s.Verbs)
			}
		}
		if why == "" {
			kept = append(kept, a)
			continue
		}
		a.Reason = why
		v.UnavailableActions = append(v.UnavailableActions, a)
	}
	v.NextActions = kept
}

// restrictsDecisions reports whether ctx's token may be refused a gate's
// decision (a max_risk below high, or groups that a step's :approvers may
// not name): only then does a listing need the plans of the runbooks that
// wait at a gate.
func restrictsDecisions(ctx context.Context) bool {
	s, ok := scopeOf(ctx)
	return ok && !s.All
}

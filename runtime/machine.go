package runtime

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// machine is what the state machine needs of the engine around it, and no
// more: a transition reads these and nothing else of the worker, so that
// it can be built and tested without a database or a running engine.
type machine struct {
	// worker names this worker in leases and events.
	worker string
	// leaseTTL is how long a lease taken now lasts.
	leaseTTL time.Duration
	// keys derives the correlation keys of the waits it starts, under the
	// database's secret key.
	keys *derivation
	// limits bound what a runbook may grow to (limits.go).
	limits Limits
	// callbackURL is where durable handlers tell the outside world to
	// send notifications.
	callbackURL string
	// handler finds the implementation of a handler name.
	handler func(name string) (Handler, bool)
	// inline calls a handler inside the advance's transaction and turns
	// what it returns into an outcome (inline.go); nil runs no step
	// inline.
	inline func(*pendingCall) *outcome
	// observe counts what the metrics show; nil counts nothing.
	observe observer
	// maxFanout bounds the elements of a list known only at run time
	// (--max-fanout; DefaultMaxFanout when zero).
	maxFanout int
	// tracer makes the spans of finished attempts and runbooks; nil (the
	// default) makes none, and the transitions collect nothing for it.
	tracer trace.Tracer
	// policy is the policy in force, whose budgets an attempt is checked
	// against before it starts (budget.go); never nil.
	policy func() *policy.Policy
}

// fanout is the bound on a list's elements.
func (m *machine) fanout() int {
	if m.maxFanout > 0 {
		return m.maxFanout
	}
	return DefaultMaxFanout
}

// observer receives what the state machine sees happen.
type observer interface {
	// resumed: a parked step was resumed this long after its
	// notification arrived.
	resumed(latency time.Duration)
	// leaseReclaimed: a running step's lease was found expired.
	leaseReclaimed()
	// cacheLookup: a step's verb caches, and its result was (hit) or was
	// not in the cache.
	cacheLookup(verb string, hit bool)
	// used: an attempt of a step of verb used this much.
	used(verb string, u driver.Usage)
	// budgetExceeded: a step did not start, a budget of this scope being
	// spent.
	budgetExceeded(scope rbtype.BudgetScope)
}

// noObserver counts nothing.
type noObserver struct{}

func (noObserver) resumed(time.Duration)             {}
func (noObserver) leaseReclaimed()                   {}
func (noObserver) cacheLookup(string, bool)          {}
func (noObserver) used(string, driver.Usage)         {}
func (noObserver) budgetExceeded(rbtype.BudgetScope) {}

package machine

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry/policy"
)

// Machine is what the state machine needs of the engine around it, and no
// more: a transition reads these and nothing else of the worker, so that
// it can be built and tested without a database or a running engine.
type Machine struct {
	// Worker names this worker in leases and events.
	Worker string
	// LeaseTTL is how long a lease taken now lasts.
	LeaseTTL time.Duration
	// Keys derives the correlation keys of the waits it starts, under the
	// database's secret key.
	Keys *Derivation
	// Limits bound what a runbook may grow to (limits.go).
	Limits Limits
	// CallbackURL is where durable handlers tell the outside world to
	// send notifications.
	CallbackURL string
	// Handler finds the implementation of a handler name.
	Handler func(name string) (handler.Handler, bool)
	// Inline calls a handler inside the advance's transaction and turns
	// what it returns into an outcome (inline.go); nil runs no step
	// inline.
	Inline func(*PendingCall) *Outcome
	// Observe counts what the metrics show; nil counts nothing.
	Observe Observer
	// MaxFanout bounds the elements of a list known only at run time
	// (--max-fanout; DefaultMaxFanout when zero).
	MaxFanout int
	// Tracer makes the spans of finished attempts and runbooks; nil (the
	// default) makes none, and the transitions collect nothing for it.
	Tracer trace.Tracer
	// Policy is the policy in force, whose budgets an attempt is checked
	// against before it starts (budget.go); never nil.
	Policy func() *policy.Policy
	// DeferExpansion leaves every run-time list unexpanded for the next
	// round: set for a notification's resume in its own transaction
	// (expand_deferred.go).
	DeferExpansion bool
}

// fanout is the bound on a list's elements.
func (m *Machine) fanout() int {
	if m.MaxFanout > 0 {
		return m.MaxFanout
	}
	return DefaultMaxFanout
}

// Observer receives what the state machine sees happen.
type Observer interface {
	// Resumed: a parked step was resumed this long after its
	// notification arrived.
	Resumed(latency time.Duration)
	// LeaseReclaimed: a running step's lease was found expired.
	LeaseReclaimed()
	// CacheLookup: a step's verb caches, and its result was (hit) or was
	// not in the cache.
	CacheLookup(verb string, hit bool)
	// Used: an attempt of a step of verb used this much.
	Used(verb string, u rbtype.Usage)
	// BudgetExceeded: a step did not start, a budget of this scope being
	// spent.
	BudgetExceeded(scope rbtype.BudgetScope)
}

// NoObserver counts nothing.
type NoObserver struct{}

// Resumed, LeaseReclaimed, CacheLookup, Used and BudgetExceeded count
// nothing.
func (NoObserver) Resumed(time.Duration)             {}
func (NoObserver) LeaseReclaimed()                   {}
func (NoObserver) CacheLookup(string, bool)          {}
func (NoObserver) Used(string, rbtype.Usage)         {}
func (NoObserver) BudgetExceeded(rbtype.BudgetScope) {}

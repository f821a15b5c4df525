// Package refmodel is the reference model of the state machine's
// semantics (docs/design/semantics.md, "The model check"): a generator of
// runbooks that combine the forms, and an interpreter that runs them, the
// rules written a second time, plainly, with no leases, batching, caches
// or rounds. Only tests import it: runtime's model check drives the
// machine and this interpreter through the same inputs and requires the
// same statuses, lists and runbook status after every one.
//
// The interpreter is deliberately naive: after every input it applies its
// rules over and over until nothing changes (Settle), reading every step
// every time. What it covers is what the generator makes: sync and durable
// steps, data references and :after, conditions, for-each with :parallel
// and one level of nesting, the three failure modes, parks that time out
// (fail or escalate), gates, draft_only, and the commands decide, resolve,
// retry and retry --execute, and crashes of the worker.
package refmodel

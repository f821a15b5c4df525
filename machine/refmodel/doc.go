// Package refmodel is the reference model of the state machine's
// semantics (docs/design/semantics.md, "The model check"): a generator of
// runbooks that combine the forms, and an interpreter that runs them, the
// rules written a second time, plainly, with no leases, batching or
// caches. Only tests import it: runtime's model check drives the machine
// and this interpreter through the same inputs and requires the same
// statuses, lists, spend and runbook status after every one.
//
// The interpreter is deliberately naive: after every input it applies its
// rules over and over until nothing changes (Settle), reading every step
// every time, in passes ordered as the machine orders a round (readiness,
// then expansion and templates' ends, then conditions, then starts). What
// it covers is what the generator makes: sync and durable steps, data
// references and :after, conditions on a value, an element or a step's
// status, for-each with :parallel and an inner for-each over the element,
// the three failure modes, parks that time out (fail or escalate), gates,
// draft_only, calls to a provider that ignores keys (in doubt after a
// crash), verbs that declare a cost under a runbook budget, compensations,
// failure hooks, and the commands decide, resolve, retry, retry --execute,
// cancel and a budget's raise, and crashes of the worker.
package refmodel

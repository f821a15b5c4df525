// Package runtime advances frozen plans to finished work, as docs/design/runtime.md
// describes: ready steps are leased and run outside any transaction; their
// outcomes are recorded, with events and receipts, under the runbook's
// advisory lock; durable steps park on an invocation record and resume
// from the inbox; retries, timeouts, gates, cancellation, compensation and
// dry runs are all transitions of the same state machine.
//
// The runtime is the I/O around package machine, the pure state machine:
// it reaches its database only through driver's interfaces, which package
// durable implements for PostgreSQL; it loads the rows, hands them to a
// machine.Round, fetches what the round asks for between its phases,
// writes the round's outbox (advance.go), and calls the handlers the
// round leased once the transaction has committed (engine.go). The
// transitions are tested as functions of rows (machine_test.go and
// package machine's tests). The API's views it builds are apitype's.
//
// Nothing that matters lives only in memory. A worker may die at any
// instruction: its leases expire, another worker reclaims the steps, and
// because handlers receive the same idempotency key on every attempt, and
// receipts are written in the transaction that records a completion, no
// side effect is repeated.
//
// Programs that embed the runtime register their own handlers next to the
// built-in ones (see ExampleHandlers_Register).
package runtime

// Package machine is the one state machine of docs/design/runtime.md: a
// runbook's rows, what arrived (handler outcomes, notifications, the
// clock's time, a person's Command) in; the changed rows, an outbox of
// writes (rbtype.AdvanceWrite) and the handler calls to make out.
//
// It does no I/O: it imports no driver and no network, reads no clock of
// its own (time is an argument) and calls no handler, so every transition
// is a function of rows that a test builds in memory. Package runtime
// loads, calls NewRound and its phases, writes the outbox and calls the
// handlers.
//
// Every status a step or a runbook takes goes through moveStep or
// moveRunbook (moves.go), which refuse a move the state diagrams of
// docs/design/runtime.md do not draw; moves_test.go holds the tables to the
// page.
package machine

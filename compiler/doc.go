// Package compiler checks runbook sources against the verb catalogue and
// freezes them into a Plan: the steps in a stable topological order, their
// arguments as JSON with references and inputs marked, each verb's whole
// execution block, and the dependency edges. The plan is plain, versioned
// data; the daemon executes it without reading verb files again.
//
// Analysis never stops at the first problem. Every pass adds to one
// Diagnostics, so one run reports unknown verbs, bad arguments, undefined
// references and cycles together.
package compiler

// Package rbtype is the one home of the names Runbook's packages share:
// step and runbook statuses, modes, the enumerated fields of a verb's
// execution block, error codes, event types and pg.crud operations. Each
// is a named string type with its constants, so that a status cannot be
// passed where a code is expected and every value has one spelling.
//
// It imports nothing of ours, so that verbs/, compiler/, runtime/,
// durable/ and the commands can all use it (River's rivertype plays the
// same part).
package rbtype

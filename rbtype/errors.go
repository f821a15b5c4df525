package rbtype

import "errors"

// Errors the API reports; callers test with errors.Is.
var (
	// ErrNotFound: no such runbook or step.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request does not fit the runbook's state (approving
	// a step that does not wait for approval, extending a finished
	// runbook).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request itself is wrong (bad inputs, bad mode).
	ErrInvalid = errors.New("invalid request")
	// ErrSchema: a value in a well-formed request does not fit the schema
	// it will be checked against later (an input against the arguments
	// it feeds, a notification's result against the parked verb's
	// output_schema). Refused at the door, nothing stored, so the sender
	// can fix it and send again.
	ErrSchema = errors.New("does not match its schema")
	// ErrForbidden: the caller's token may not do this: a plan naming a
	// verb outside its scope, a gate on a step riskier than it may
	// decide (403 FORBIDDEN; docs/design/semantics.md section 10).
	ErrForbidden = errors.New("forbidden")
	// ErrPolicyDenied: the tenant's policy refuses a step of the plan
	// (403 POLICY_DENIED); nothing is stored.
	ErrPolicyDenied = errors.New("denied by policy")
)

package rbtype

import "slices"

// ErrorCode classifies a step's failure (docs/design/runtime.md, "Errors"); the code
// decides whether the step is retried.
type ErrorCode string

// The error taxonomy.
const (
	CodeNetworkTimeout ErrorCode = "NETWORK_TIMEOUT"
	CodeRateLimit      ErrorCode = "RATE_LIMIT"
	// CodeTempProvider: the provider failed for now (a 502, a 503); it is
	// the contract's name (docs/design/semantics.md section 12), written since v3.
	CodeTempProvider ErrorCode = "TEMP_PROVIDER"
	// CodeTemporaryProviderError is the name of TEMP_PROVIDER before v3.
	// Rows, events and ledgers written then keep it, and external
	// processes and verb files may still send it: it is read as
	// TEMP_PROVIDER everywhere a code decides something (Canonical), and
	// never written by rbd again.
	CodeTemporaryProviderError ErrorCode = "TEMPORARY_PROVIDER_ERROR"
	CodeTransientDBLock        ErrorCode = "TRANSIENT_DB_LOCK"
	CodeDependencyUnavailable  ErrorCode = "DEPENDENCY_UNAVAILABLE"
	CodePolicyDenied           ErrorCode = "POLICY_DENIED"
	CodeInvalidInput           ErrorCode = "INVALID_INPUT"
	CodeSchemaValidationFailed ErrorCode = "SCHEMA_VALIDATION_FAILED"
	CodeMissingRequiredContext ErrorCode = "MISSING_REQUIRED_CONTEXT"
	CodeAuthForbidden          ErrorCode = "AUTH_FORBIDDEN"
	// CodeInternal is anything unclassified: a handler's own bug, say.
	CodeInternal ErrorCode = "INTERNAL"
	// CodeParkTimeout: no notification came before the park timed out.
	CodeParkTimeout ErrorCode = "PARK_TIMEOUT"
	// CodeCancelled: the runbook was cancelled.
	CodeCancelled ErrorCode = "CANCELLED"
	// CodeResolvedFailed: a person resolved an escalated step as failed.
	CodeResolvedFailed ErrorCode = "RESOLVED_FAILED"
	// CodeDraftOnly is a reason, not a failure: a draft_only runbook
	// skipped a step with outside effects.
	CodeDraftOnly ErrorCode = "DRAFT_ONLY"
	// CodeVerifyFailed: a full step's dry run did not pass verification;
	// nothing was committed, and it is not retried.
	CodeVerifyFailed ErrorCode = "VERIFY_FAILED"
	// CodeBudgetExceeded: a budget was spent before the attempt started
	// (docs/design/semantics.md section 11); never retried.
	CodeBudgetExceeded ErrorCode = "BUDGET_EXCEEDED"
)

// Codes lists the taxonomy's codes a handler or a verb file may name, in
// the order of docs/design/runtime.md and docs/design/semantics.md (the legacy spelling of
// TEMP_PROVIDER is left out: it is accepted, never offered).
var Codes = []ErrorCode{
	CodeNetworkTimeout, CodeRateLimit, CodeTempProvider, CodeTransientDBLock, CodeDependencyUnavailable,
	CodePolicyDenied, CodeInvalidInput, CodeSchemaValidationFailed, CodeMissingRequiredContext, CodeAuthForbidden,
	CodeBudgetExceeded, CodeVerifyFailed, CodeInternal, CodeParkTimeout,
}

// Canonical is the code as v3 names it: TEMPORARY_PROVIDER_ERROR, the
// name before v3, is TEMP_PROVIDER; every other code is itself.
func (c ErrorCode) Canonical() ErrorCode {
	if c == CodeTemporaryProviderError {
		return CodeTempProvider
	}
	return c
}

// retryableCodes are the codes that send a step to failed_retryable while
// it has attempts left. Anything else is final.
var retryableCodes = []ErrorCode{
	CodeNetworkTimeout, CodeRateLimit, CodeTempProvider, CodeTransientDBLock, CodeDependencyUnavailable,
}

// Retryable reports whether a failure with this code may be retried.
func (c ErrorCode) Retryable() bool { return slices.Contains(retryableCodes, c.Canonical()) }

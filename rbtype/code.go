package rbtype

import "slices"

// ErrorCode classifies a step's failure (docs/design/runtime.md, "Errors"); the code
// decides whether the step is retried.
type ErrorCode string

// The error taxonomy.
const (
	CodeNetworkTimeout         ErrorCode = "NETWORK_TIMEOUT"
	CodeRateLimit              ErrorCode = "RATE_LIMIT"
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
)

// retryableCodes are the codes that send a step to failed_retryable while
// it has attempts left. Anything else is final.
var retryableCodes = []ErrorCode{
	CodeNetworkTimeout, CodeRateLimit, CodeTemporaryProviderError, CodeTransientDBLock, CodeDependencyUnavailable,
}

// Retryable reports whether a failure with this code may be retried.
func (c ErrorCode) Retryable() bool { return slices.Contains(retryableCodes, c) }

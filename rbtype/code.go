package rbtype

import "slices"

// ErrorCode classifies a step's failure (docs/design/runtime.md, "Errors"); the code
// decides whether the step is retried.
type ErrorCode string

// The error taxonomy.
const (
	CodeNetworkTimeout ErrorCode = "NETWORK_TIMEOUT"
	CodeRateLimit      ErrorCode = "RATE_LIMIT"
	// CodeTemporaryProviderError: the provider failed for now (a 502, a
	// 503). Its name is the one rbd has always written, and
	// docs/design/semantics.md keeps it, so that stored rows, dashboards
	// and the services that send it keep their meaning.
	CodeTemporaryProviderError ErrorCode = "TEMPORARY_PROVIDER_ERROR"
	// CodeTempProvider is the short name seed 000 gives the same code. It
	// is accepted wherever a code comes in (a notification, core.fail's
	// code, a verb's retry.by_code) and read as TEMPORARY_PROVIDER_ERROR
	// (Canonical); rbd never writes it.
	CodeTempProvider           ErrorCode = "TEMP_PROVIDER"
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
	// CodeBudgetExceeded: the step did not start, a budget of its
	// runbook's or its tenant's being spent (docs/design/semantics.md
	// section 11); never retried.
	CodeBudgetExceeded ErrorCode = "BUDGET_EXCEEDED"
	// CodeConditionFalse is a reason, not a failure: the step's :when was
	// false when it would have become ready (docs/design/language.md
	// v1.2).
	CodeConditionFalse ErrorCode = "CONDITION_FALSE"
	// CodeUpstreamSkipped is a reason, not a failure: the step reads the
	// result of a step that was skipped for one of these reasons.
	CodeUpstreamSkipped ErrorCode = "UPSTREAM_SKIPPED"
	// CodeNoFailure is a reason, not a failure: a failure hook of a
	// runbook that completed, which it never runs.
	CodeNoFailure ErrorCode = "NO_FAILURE"
	// CodeFanoutTooLarge: the list a for-each runs over holds more
	// elements than the daemon's --max-fanout, or expanding it would take
	// the runbook past its step limit; nothing was expanded
	// (docs/design/language.md v1.3).
	CodeFanoutTooLarge ErrorCode = "FANOUT_TOO_LARGE"
)

// Codes lists the taxonomy's codes a handler or a verb file may name, in
// the order of docs/design/runtime.md and docs/design/semantics.md (TEMP_PROVIDER, another
// spelling of TEMPORARY_PROVIDER_ERROR, is left out: it is accepted, never offered).
var Codes = []ErrorCode{
	CodeNetworkTimeout, CodeRateLimit, CodeTemporaryProviderError, CodeTransientDBLock, CodeDependencyUnavailable,
	CodePolicyDenied, CodeInvalidInput, CodeSchemaValidationFailed, CodeMissingRequiredContext, CodeAuthForbidden,
	CodeBudgetExceeded, CodeVerifyFailed, CodeInternal, CodeParkTimeout,
}

// Canonical is the code as rbd writes it: TEMP_PROVIDER is
// TEMPORARY_PROVIDER_ERROR; every other code is itself.
func (c ErrorCode) Canonical() ErrorCode {
	if c == CodeTempProvider {
		return CodeTemporaryProviderError
	}
	return c
}

// SkipsQuietly reports whether a skip for this reason leaves the steps
// that only run after the skipped one (:after) free to run: a condition
// that was false, and the skips it causes downstream. A skip because of a
// failure stops them.
func (c ErrorCode) SkipsQuietly() bool { return c == CodeConditionFalse || c == CodeUpstreamSkipped }

// retryableCodes are the codes that send a step to failed_retryable while
// it has attempts left. Anything else is final.
var retryableCodes = []ErrorCode{
	CodeNetworkTimeout, CodeRateLimit, CodeTemporaryProviderError, CodeTransientDBLock, CodeDependencyUnavailable,
}

// Retryable reports whether a failure with this code may be retried.
func (c ErrorCode) Retryable() bool { return slices.Contains(retryableCodes, c.Canonical()) }

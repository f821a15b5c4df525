package lang

// Code is a stable diagnostic code. Codes never change meaning; tools and
// agents match on them.
type Code string

// The codes of docs/design/language.md (E and W series) and docs/design/verbs.md (V series). E070
// to E072 are the daemon's own: they refuse a plan submitted as JSON
// (docs/design/semantics.md section 9), in the same shape as a compile error.
const (
	ESyntax           Code = "E001"
	EBadLiteral       Code = "E002"
	EUnknownVerb      Code = "E010"
	EMissingArg       Code = "E020"
	EUnknownArg       Code = "E021"
	EArgSchema        Code = "E022"
	EDuplicateArg     Code = "E023"
	EUndefinedBinding Code = "E030"
	EDuplicateBinding Code = "E031"
	EUnknownField     Code = "E032"
	ERefType          Code = "E033"
	// EReturnsField: a nested call's verb names in `returns:` a field its
	// output_schema does not have (docs/design/language.md v1.1).
	EReturnsField Code = "E034"
	ECycle        Code = "E040"
	EBadOption    Code = "E041"
	// ETypeConflict: values that must share a type do not: an input used
	// with conflicting types, or a condition comparing values that can
	// never be equal, a string with a number (docs/design/language.md v1.2).
	ETypeConflict Code = "E050"
	// EOrderNotNumber: an ordering operator (< <= > >=) on something that
	// is not a number (docs/design/language.md v1.2).
	EOrderNotNumber Code = "E051"
	// EUnknownOperator: a condition's operator is not one of the
	// language's (docs/design/language.md v1.2).
	EUnknownOperator Code = "E052"
	// EOnFailure: (on-failure ...) misused: a second one in a runbook, a
	// hook referring to a hook, @failure outside a hook, or a step
	// referring to a hook (docs/design/language.md v1.2).
	EOnFailure Code = "E053"
	// EBadList: the list of a for-each is not a list, or holds more
	// elements than --max-fanout, or expands to more steps than a plan
	// may hold (docs/design/language.md v1.3).
	EBadList Code = "E054"
	// EItemOutside: a for-each's element (its :as binding) used outside
	// its body (docs/design/language.md v1.3).
	EItemOutside  Code = "E055"
	EBadOnFailure Code = "E060"
	// EExpectNotFull: `:expect` on a step whose verb's execution level is
	// not full, so nothing would check it (docs/design/semantics.md section 7).
	EExpectNotFull Code = "E061"
	// EUnknownStatus: (status @x) compared with a string that is no
	// status a step settles with (docs/design/language.md v1.4).
	EUnknownStatus Code = "E056"
	// ETimeoutResult: :timeout-result on a step that does not park, or
	// a map its verb's output_schema refuses (docs/design/language.md
	// v1.4).
	ETimeoutResult Code = "E057"
	// ERemindAfter: :remind-after (or timeouts.remind_after) not a
	// duration, on a step that does not park, or not before the park's
	// timeout (docs/design/language.md v1.4).
	ERemindAfter    Code = "E058"
	EPlanUnreadable Code = "E070"
	EPlanHash       Code = "E071"
	EPlanCatalogue  Code = "E072"
	WUnusedBinding  Code = "W001"
	WImpliedAfter   Code = "W002"
	// WPolicyUnmentioned: a step's verb carries a policy tag that no rule
	// of the policy given (rbc lint --policy) mentions: nobody decided
	// whether such a step waits for a person (docs/design/semantics.md
	// section 10).
	WPolicyUnmentioned Code = "W003"
	// WOptionalField: a reference reads an output_schema field that is
	// not required, outside (default ...) and exists: when the result
	// leaves it out, the step fails MISSING_REQUIRED_CONTEXT
	// (docs/design/language.md v1.4).
	WOptionalField   Code = "W004"
	VBadYAML         Code = "V001"
	VUnknownField    Code = "V002"
	VMissingField    Code = "V003"
	VBadValue        Code = "V004"
	VBadSchema       Code = "V005"
	VNoParkTimeout   Code = "V010"
	VUnknownHandler  Code = "V011"
	VDuplicateVerb   Code = "V012"
	VBadKeyField     Code = "V013"
	VBadCompensation Code = "V014"
	// VDaemonTable: a pg.crud verb names a table of rbd's own (in rbd's
	// schema, or one of its tables without a schema) or a system catalog.
	VDaemonTable Code = "V015"
	// VCacheEffects: a cache on a verb whose effects must happen each time
	// (external_call, human_process) or on a durable verb.
	VCacheEffects Code = "V020"
	// VCacheExternal: an external verb's result reused forever.
	VCacheExternal Code = "V021"
	// VCacheTTL: a ttl cache without its duration.
	VCacheTTL Code = "V022"
	// VRetryNever: retry.by_code gives more than one attempt to a code
	// that is never retried (docs/design/semantics.md section 12).
	VRetryNever Code = "V023"
	// VOpaqueHighRisk: a high-risk verb at execution level opaque.
	VOpaqueHighRisk Code = "V030"
	// VNoDryRun: execution level full on a handler that cannot dry-run.
	VNoDryRun Code = "V031"
	// VUntaggedExternal: an external_call verb without policy_tags, a
	// warning of rbc lint: no policy can let it run unattended, so every
	// step of it waits at a gate (docs/design/semantics.md section 17).
	VUntaggedExternal Code = "V032"
)

// CodeInfo describes a code for SARIF rule tables and `rbc` help.
type CodeInfo struct {
	Code     Code
	Severity Severity
	Summary  string
}

// Codes lists every code in order, with its default severity and meaning.
var Codes = []CodeInfo{
	{ESyntax, SeverityError, "syntax error"},
	{EBadLiteral, SeverityError, "bad literal: unknown escape, integer overflow, unterminated string"},
	{EUnknownVerb, SeverityError, "unknown verb"},
	{EMissingArg, SeverityError, "missing required argument"},
	{EUnknownArg, SeverityError, "unknown argument"},
	{EArgSchema, SeverityError, "argument value does not match its schema"},
	{EDuplicateArg, SeverityError, "argument given twice"},
	{EUndefinedBinding, SeverityError, "reference to an undefined binding"},
	{EDuplicateBinding, SeverityError, "binding defined twice"},
	{EUnknownField, SeverityError, "reference to a field the producer's output_schema does not have"},
	{ERefType, SeverityError, "reference whose type does not match the parameter"},
	{EReturnsField, SeverityError, "`returns` field missing from the output"},
	{ECycle, SeverityError, "dependency cycle"},
	{EBadOption, SeverityError, "bad step option"},
	{ETypeConflict, SeverityError, "conflicting types: an input used with two, or a condition comparing a string with a number"},
	{EOrderNotNumber, SeverityError, "an ordering operator (< <= > >=) on something that is not a number"},
	{EUnknownOperator, SeverityError, "unknown operator in a condition"},
	{EOnFailure, SeverityError, "(on-failure ...) misused: a second one, a hook referring to a hook, @failure outside a hook, a step referring to a hook"},
	{EBadList, SeverityError, "the list of a for-each is not a list, or is longer than --max-fanout"},
	{EItemOutside, SeverityError, "a for-each's element used outside its body"},
	{EBadOnFailure, SeverityError, "unknown :on-failure value"},
	{EExpectNotFull, SeverityError, ":expect on a step whose verb is not at execution level full"},
	{EUnknownStatus, SeverityError, "(status @x) compared with a string that is no step status"},
	{ETimeoutResult, SeverityError, ":timeout-result on a step that does not park, or a map its output_schema refuses"},
	{ERemindAfter, SeverityError, ":remind-after not a duration, on a step that does not park, or not before its timeout"},
	{EPlanUnreadable, SeverityError, "a submitted plan that cannot be read: not a plan, an unknown schema_version, or a malformed step or edge"},
	{EPlanHash, SeverityError, "a submitted plan whose plan_hash does not match its content"},
	{EPlanCatalogue, SeverityError, "a submitted plan compiled against another catalogue: a step's execution block, a verb hash or schema differs from this daemon's"},
	{WUnusedBinding, SeverityWarning, "binding never referenced"},
	{WImpliedAfter, SeverityWarning, ":after an already-implied dependency"},
	{WPolicyUnmentioned, SeverityWarning, "a verb's policy tag that no rule of the policy mentions"},
	{WOptionalField, SeverityWarning, "a reference to an output field that is not required, outside default or exists"},
	{VBadYAML, SeverityError, "not valid YAML, or not a list of definitions"},
	{VUnknownField, SeverityError, "unknown field"},
	{VMissingField, SeverityError, "missing required field"},
	{VBadValue, SeverityError, "bad value"},
	{VBadSchema, SeverityError, "invalid input or output schema"},
	{VNoParkTimeout, SeverityError, "durable verb without park_timeout"},
	{VUnknownHandler, SeverityError, "handler not registered"},
	{VDuplicateVerb, SeverityError, "verb defined twice"},
	{VBadKeyField, SeverityError, "idempotency key field not in the input schema"},
	{VBadCompensation, SeverityError, "compensation verb unknown, or its args do not fit it"},
	{VDaemonTable, SeverityError, "pg.crud names one of rbd's own tables or a system catalog"},
	{VCacheEffects, SeverityError, "a cache on a verb with outside effects, or on a durable verb"},
	{VCacheExternal, SeverityError, "an external verb's result reused with no ttl"},
	{VCacheTTL, SeverityError, "cache policy ttl without a ttl"},
	{VRetryNever, SeverityError, "retry.by_code gives attempts to a code that is never retried"},
	{VOpaqueHighRisk, SeverityError, "a high-risk verb at execution level opaque"},
	{VNoDryRun, SeverityError, "execution level full on a handler without a dry run"},
	{VUntaggedExternal, SeverityWarning, "an external_call verb without policy_tags"},
}

package rbtype

// The enumerated fields of a verb's execution block (docs/design/verbs.md). Verb
// files spell them; plans freeze them; the runtime acts on them.

// Kind is how a verb runs.
type Kind string

// The kinds.
const (
	// KindSync verbs run a handler that returns a result.
	KindSync Kind = "sync"
	// KindDurable verbs start external work, park, and resume on a
	// notification.
	KindDurable Kind = "durable"
)

// SideEffects says what a verb's handler does to the world.
type SideEffects string

// The side effects, from none to a person's work.
const (
	SideEffectsNone         SideEffects = "none"
	SideEffectsInternalDB   SideEffects = "internal_db"
	SideEffectsExternalCall SideEffects = "external_call"
	SideEffectsHuman        SideEffects = "human_process"
)

// Risk is how much harm a verb's step could do if it went wrong
// (docs/design/semantics.md section 7). A verb declares it; the default is low.
type Risk string

// The risks.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	// RiskHigh steps always wait at a human_confirm gate.
	RiskHigh Risk = "high"
)

// Rank orders the risks: 1 for low, 2 for medium, 3 for high, and 0 for
// anything else, which no ceiling admits.
func (r Risk) Rank() int {
	switch r {
	case RiskLow:
		return 1
	case RiskMedium:
		return 2
	case RiskHigh:
		return 3
	}
	return 0
}

// Within reports whether a step of risk r is at or below the ceiling: a
// risk that is not one of the three is within none.
func (r Risk) Within(ceiling Risk) bool { return r.Rank() > 0 && r.Rank() <= ceiling.Rank() }

// Level is how a step's call is rehearsed before it commits (docs/design/semantics.md
// section 7).
type Level string

// The execution levels.
const (
	// LevelFull: dry run, verify the dry run's output against the
	// output_schema and the step's :expect, then commit, on every attempt.
	LevelFull Level = "full"
	// LevelGuarded: dry run when the handler can, then commit; the events
	// carry the argument and result hashes.
	LevelGuarded Level = "guarded"
	// LevelOpaque: the call is made as it is (the default).
	LevelOpaque Level = "opaque"
)

// Effective is the level of a verb that may not have declared one.
func (l Level) Effective() Level {
	if l == "" {
		return LevelOpaque
	}
	return l
}

// Scope says what an idempotency key is unique within.
type Scope string

// The idempotency scopes.
const (
	ScopeRunbookStep Scope = "runbook_step"
	ScopeRunbook     Scope = "runbook"
	ScopeGlobal      Scope = "global"
)

// Backoff is how the delay between retries grows.
type Backoff string

// The backoffs.
const (
	BackoffExponential Backoff = "exponential"
	BackoffFixed       Backoff = "fixed"
)

// Gate is what a step waits for before it runs.
type Gate string

// The gates.
const (
	GateNone         Gate = "none"
	GateHumanConfirm Gate = "human_confirm"
)

// OnTimeout is what a park that times out does to its step.
type OnTimeout string

// The on_timeout actions.
const (
	OnTimeoutFail     OnTimeout = "fail"
	OnTimeoutEscalate OnTimeout = "escalate"
)

// OnFailure is what a step's final failure does to its runbook
// (docs/design/semantics.md section 5).
type OnFailure string

// The failure modes.
const (
	// OnFailureAbort stops the runbook: nothing new starts, waiting steps
	// are skipped, active waits cancelled; it ends failed and compensates.
	OnFailureAbort OnFailure = "abort"
	// OnFailureIsolate skips the step's dependents; independent branches
	// go on; the runbook ends failed (v1's behaviour).
	OnFailureIsolate OnFailure = "isolate"
	// OnFailureContinue accepts the failure: dependents joined by :after
	// run, those that read its result are skipped; the runbook ends
	// partial if nothing else fails.
	OnFailureContinue OnFailure = "continue"
)

// Effective is the mode a step frozen with this value runs under. A plan
// frozen before failure modes existed has none, and keeps v1's behaviour.
func (f OnFailure) Effective() OnFailure {
	if f == "" {
		return OnFailureIsolate
	}
	return f
}

// Determinism says how far a verb's output follows from its input
// (docs/design/semantics.md section 4). It decides, with side effects, which steps a
// regeneration runs afresh.
type Determinism string

// The determinisms.
const (
	// DeterminismPure verbs give byte-identical output for identical input.
	DeterminismPure Determinism = "pure"
	// DeterminismStable verbs may vary, but a stored result is acceptable
	// (a model's draft).
	DeterminismStable Determinism = "stable"
	// DeterminismExternal verbs answer from a world that may change: the
	// default.
	DeterminismExternal Determinism = "external"
)

// Effective is the determinism of a verb that may not have declared one.
func (d Determinism) Effective() Determinism {
	if d == "" {
		return DeterminismExternal
	}
	return d
}

// CachePolicy says whether a verb's results are reused (docs/design/semantics.md
// section 4).
type CachePolicy string

// The cache policies.
const (
	// CacheNever: every call runs the handler (the default).
	CacheNever CachePolicy = "never"
	// CacheReuse: a result is reused for equal arguments, forever.
	CacheReuse CachePolicy = "reuse"
	// CacheTTL: a result is reused for equal arguments until its ttl.
	CacheTTL CachePolicy = "ttl"
)

// CRUDOp is the operation of a pg.crud verb.
type CRUDOp string

// The pg.crud operations.
const (
	CRUDInsert CRUDOp = "insert"
	CRUDSelect CRUDOp = "select"
	CRUDUpdate CRUDOp = "update"
	CRUDDelete CRUDOp = "delete"
	CRUDUpsert CRUDOp = "upsert"
)

// The values of each enumeration, in the order docs/design/verbs.md lists them, for
// checking a verb file and for its messages.
var (
	Kinds             = []Kind{KindSync, KindDurable}
	SideEffectsValues = []SideEffects{SideEffectsNone, SideEffectsInternalDB, SideEffectsExternalCall, SideEffectsHuman}
	Risks             = []Risk{RiskLow, RiskMedium, RiskHigh}
	Levels            = []Level{LevelFull, LevelGuarded, LevelOpaque}
	Scopes            = []Scope{ScopeRunbookStep, ScopeRunbook, ScopeGlobal}
	Backoffs          = []Backoff{BackoffExponential, BackoffFixed}
	Gates             = []Gate{GateNone, GateHumanConfirm}
	OnTimeouts        = []OnTimeout{OnTimeoutFail, OnTimeoutEscalate}
	OnFailures        = []OnFailure{OnFailureAbort, OnFailureIsolate, OnFailureContinue}
	Determinisms      = []Determinism{DeterminismPure, DeterminismStable, DeterminismExternal}
	CachePolicies     = []CachePolicy{CacheNever, CacheReuse, CacheTTL}
	CRUDOps           = []CRUDOp{CRUDInsert, CRUDSelect, CRUDUpdate, CRUDDelete, CRUDUpsert}
)

// OutcomeStatus says whether an outcome is a draft for a person to read
// or the final thing (docs/design/semantics.md section 13).
type OutcomeStatus string

// The outcome statuses.
const (
	OutcomeDraft OutcomeStatus = "draft"
	OutcomeFinal OutcomeStatus = "final"
)

// OutcomeStatuses lists the outcome statuses.
var OutcomeStatuses = []OutcomeStatus{OutcomeDraft, OutcomeFinal}

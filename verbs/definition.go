package verbs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// Defaults filled in when a verb file leaves a field out. They are frozen
// into each plan with the rest of the execution block, so changing them in
// a later release does not change running runbooks.
var (
	DefaultRunTimeout = MustDuration("PT30S")
	DefaultBaseDelay  = MustDuration("PT1S")
	DefaultMaxDelay   = MustDuration("PT5M")
)

// Definition is one verb.
type Definition struct {
	Name         string    `json:"name"`
	Domain       string    `json:"domain"`
	Description  string    `json:"description,omitempty"`
	Execution    Execution `json:"execution"`
	InputSchema  *Schema   `json:"input_schema,omitempty"`
	OutputSchema *Schema   `json:"output_schema,omitempty"`
	// Returns names the field of the result that a nested call of the verb
	// stands for (docs/design/language.md v1.1); empty, the whole result. It is left
	// out of the JSON when empty so that the hashes of definitions without
	// it are what they were before it existed.
	Returns string `json:"returns,omitempty"`
	// Risk is the verb's declared risk (docs/design/semantics.md section 7), empty
	// when the file does not say, which means low (see RiskOrDefault). It
	// is left out of the JSON when empty, like Returns, so that existing
	// definitions keep their hashes.
	Risk rbtype.Risk `json:"risk,omitempty"`
	// Outcome is what a success of the verb produces (docs/design/semantics.md
	// section 13); nil, and left out of the JSON, when it declares none.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Cost is what one attempt is declared to cost (cost.go); nil, and
	// left out of the JSON, when the verb declares none.
	Cost *Cost `json:"cost,omitempty"`

	// Hash is "sha256:" and the hex digest of the definition's canonical
	// JSON, defaults included. Plans record it to show which definition
	// they froze.
	Hash string `json:"-"`
	// Range is where the definition starts in its file.
	Range lang.Range `json:"-"`
	// fields maps a dotted field path ("execution.handler") to the range of
	// its value, so later checks can point at it; keys maps it to the range
	// of its key, for a check that refuses the key itself.
	fields map[string]lang.Range
	keys   map[string]lang.Range
}

// RiskOrDefault is the verb's risk: low unless it declares one.
func (d *Definition) RiskOrDefault() rbtype.Risk {
	if d.Risk == "" {
		return rbtype.RiskLow
	}
	return d.Risk
}

// Gate is the gate every step of the verb has at least: the execution
// block's, or human_confirm for a high-risk verb, which no call removes.
func (d *Definition) Gate() rbtype.Gate {
	if d.Risk == rbtype.RiskHigh {
		return rbtype.GateHumanConfirm
	}
	return d.Execution.Gate
}

// FullName is domain.name, the name runbooks call.
func (d *Definition) FullName() string { return d.Domain + "." + d.Name }

// FieldRange returns the range of a field's value by dotted path, or the
// definition's own range when the field was not written.
func (d *Definition) FieldRange(path string) lang.Range {
	if r, ok := d.fields[path]; ok {
		return r
	}
	return d.Range
}

// KeyRange returns the range of a field's key by dotted path, or the
// definition's own range when the field was not written.
func (d *Definition) KeyRange(path string) lang.Range {
	if r, ok := d.keys[path]; ok {
		return r
	}
	return d.Range
}

// HasField reports whether the file wrote the field at a dotted path.
func (d *Definition) HasField(path string) bool {
	_, ok := d.fields[path]
	return ok
}

// Execution is the block the compiler freezes into every step that calls
// the verb. Its JSON form is the plan's.
type Execution struct {
	Kind        rbtype.Kind        `json:"kind"`
	Handler     string             `json:"handler"`
	Params      map[string]any     `json:"params,omitempty"`
	SideEffects rbtype.SideEffects `json:"side_effects"`
	Idempotency Idempotency        `json:"idempotency"`
	Timeouts    Timeouts           `json:"timeouts"`
	Retry       Retry              `json:"retry"`
	Gate        rbtype.Gate        `json:"gate"`
	OnFailure   rbtype.OnFailure   `json:"on_failure"`
	// Determinism is left out of the JSON when the verb does not declare
	// it (external), so that plans frozen before it existed keep their
	// hashes.
	Determinism rbtype.Determinism `json:"determinism,omitempty"`
	// Cache is nil unless the verb declares one (as with Determinism, so
	// that older plans keep their hashes).
	Cache *Cache `json:"cache,omitempty"`
	// Level is how each attempt is rehearsed (docs/design/semantics.md section 7);
	// empty means opaque, and is left out of the JSON so that older plans
	// keep their hashes.
	Level        rbtype.Level  `json:"level,omitempty"`
	Compensation *Compensation `json:"compensation,omitempty"`
	// PolicyTags are the verb's policy_tags (docs/design/semantics.md
	// section 10), which a tenant's policy gates, denies or lets run
	// unattended. They live in the execution block so that they are
	// frozen into every step and a submitted plan is held to the
	// catalogue's (the plan check compares blocks); left out of the JSON
	// when empty, so that plans frozen before tags keep their hashes.
	PolicyTags []string `json:"policy_tags,omitempty"`
	// Approvers is the group whose tokens may decide the gate of the
	// verb's steps (docs/design/language.md v1.4); empty, and left out,
	// for any token that may approve.
	Approvers string `json:"approvers,omitempty"`
}

// Equal reports whether two execution blocks hold the same values, so
// that they encode to the same JSON. It answers what reflect.DeepEqual
// would, except that nil and empty maps and lists are equal (the JSON
// leaves both out), and it is cheap when the blocks share their
// maps and pointers, as every step the compiler freezes from one
// definition does: plans compare each step's block with its neighbour's
// rather than encoding 100k copies. A field added to Execution must be
// compared here; TestExecutionEqualSeesEveryField fails until it is.
func (e *Execution) Equal(o *Execution) bool {
	return e.Kind == o.Kind && e.Handler == o.Handler && e.SideEffects == o.SideEffects && e.Gate == o.Gate &&
		e.OnFailure == o.OnFailure && e.Determinism == o.Determinism && e.Cache.equal(o.Cache) && e.Level == o.Level &&
		sameValues(e.Params, o.Params) &&
		e.Idempotency.Scope == o.Idempotency.Scope && slices.Equal(e.Idempotency.KeyFields, o.Idempotency.KeyFields) &&
		e.Timeouts.equal(&o.Timeouts) && e.Retry.Equal(o.Retry) && e.Compensation.equal(o.Compensation) &&
		slices.Equal(e.PolicyTags, o.PolicyTags) && e.Approvers == o.Approvers
}

// HasTag reports whether the block carries a policy tag.
func (e *Execution) HasTag(tag string) bool { return slices.Contains(e.PolicyTags, tag) }

func (t *Timeouts) equal(o *Timeouts) bool {
	return t.RunTimeout == o.RunTimeout && t.OnTimeout == o.OnTimeout &&
		sameDuration(t.ParkTimeout, o.ParkTimeout) && sameDuration(t.MaxPark, o.MaxPark) && sameDuration(t.RemindAfter, o.RemindAfter) &&
		t.Escalation.equal(o.Escalation)
}

func sameDuration(a, b *Duration) bool {
	return a == b || a != nil && b != nil && *a == *b
}

func (c *Compensation) equal(o *Compensation) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Verb == o.Verb && sameValues(c.Args, o.Args)
}

// sameValues compares two maps of JSON values: the same map (or two empty
// ones) at once, others value by value.
func sameValues(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// Cache is a verb's result cache (docs/design/semantics.md section 4).
type Cache struct {
	Policy rbtype.CachePolicy `json:"policy"`
	// TTL is how long an entry lives, for policy ttl.
	TTL *Duration `json:"ttl,omitempty"`
}

// Reuses reports whether results are reused at all.
func (c *Cache) Reuses() bool { return c != nil && c.Policy != "" && c.Policy != rbtype.CacheNever }

func (c *Cache) equal(o *Cache) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c.Policy == o.Policy && sameDuration(c.TTL, o.TTL)
}

// Idempotency says how a step's idempotency key is derived.
type Idempotency struct {
	Scope     rbtype.Scope `json:"scope"`
	KeyFields []string     `json:"key_fields,omitempty"`
}

// Timeouts bounds handler calls and parked waits.
type Timeouts struct {
	ParkTimeout *Duration `json:"park_timeout,omitempty"`
	// MaxPark bounds how far heartbeats may move a park's timeout: never
	// past parked_at + MaxPark (durable verbs; default 4 × park_timeout).
	MaxPark    *Duration        `json:"max_park,omitempty"`
	RunTimeout Duration         `json:"run_timeout"`
	OnTimeout  rbtype.OnTimeout `json:"on_timeout"`
	// Escalation is the verb run when a park times out and escalates (a
	// page to whoever is on call), with args written as a compensation's:
	// literals and "@args.<path>" (docs/design/semantics.md section 8).
	Escalation *Compensation `json:"escalation,omitempty"`
	// RemindAfter runs Escalation once, that long after the park began,
	// without ending the wait (docs/design/language.md v1.4); nil for no
	// reminder, and left out so that older plans keep their hashes.
	RemindAfter *Duration `json:"remind_after,omitempty"`
}

// MaxParkOrDefault is MaxPark, or 4 × ParkTimeout for a block frozen
// before max_park existed; zero without a park timeout.
func (t *Timeouts) MaxParkOrDefault() time.Duration {
	switch {
	case t.MaxPark != nil:
		return t.MaxPark.D
	case t.ParkTimeout != nil:
		return 4 * t.ParkTimeout.D
	}
	return 0
}

// Retry is the retry policy for retryable failures: MaxAttempts and the
// backoff for every retryable code, and ByCode for the codes with a
// policy of their own (docs/design/semantics.md section 12). The loader resolves it
// completely, so that the frozen block says everything: a verb that
// declares no max_attempts gets DefaultByCode's table in ByCode. A block
// frozen before v3 has no ByCode, and its steps keep the attempts they
// were submitted with.
type Retry struct {
	MaxAttempts int            `json:"max_attempts"`
	Backoff     rbtype.Backoff `json:"backoff"`
	BaseDelay   Duration       `json:"base_delay"`
	MaxDelay    Duration       `json:"max_delay"`
	// ByCode is left out of the JSON when empty, so that plans frozen
	// before it existed keep their hashes.
	ByCode map[rbtype.ErrorCode]CodeRetry `json:"by_code,omitempty"`
}

// CodeRetry is one code's retry policy: its attempts, and an exponential
// backoff from Base capped at Cap.
type CodeRetry struct {
	MaxAttempts int      `json:"max_attempts"`
	Base        Duration `json:"base"`
	Cap         Duration `json:"cap"`
}

// DefaultByCode is the policy of a verb that declares no retry attempts
// (docs/design/semantics.md section 12, from seed 000 section 7.5.2): a rate limit is
// tried 5 times, 2^n seconds apart up to 2 minutes (a provider's longer
// Retry-After wins, capped there too); a network timeout or a provider's
// passing failure 3 times, from 1 second. Every other code is tried once.
// It is frozen into each plan with the block, so a later release that
// changes it does not change running runbooks.
func DefaultByCode() map[rbtype.ErrorCode]CodeRetry {
	return map[rbtype.ErrorCode]CodeRetry{
		rbtype.CodeRateLimit:              {MaxAttempts: 5, Base: MustDuration("PT2S"), Cap: MustDuration("PT2M")},
		rbtype.CodeNetworkTimeout:         {MaxAttempts: 3, Base: MustDuration("PT1S"), Cap: MustDuration("PT1M")},
		rbtype.CodeTemporaryProviderError: {MaxAttempts: 3, Base: MustDuration("PT1S"), Cap: MustDuration("PT1M")},
	}
}

// For is the policy a failure with code gets: its own in ByCode, else
// MaxAttempts with the block's backoff. The code is read as v3 names it
// (rbtype.ErrorCode.Canonical).
func (r Retry) For(code rbtype.ErrorCode) CodeRetry {
	if c, ok := r.ByCode[code.Canonical()]; ok {
		return c
	}
	return CodeRetry{MaxAttempts: r.MaxAttempts, Base: r.BaseDelay, Cap: r.MaxDelay}
}

// DelayFor is the backoff before attempt+1 after attempt failed with
// code, without jitter: the code's own policy (exponential from its base,
// capped) when it has one, else the block's (Delay).
func (r Retry) DelayFor(code rbtype.ErrorCode, attempt int) time.Duration {
	if c, ok := r.ByCode[code.Canonical()]; ok {
		return Retry{Backoff: rbtype.BackoffExponential, BaseDelay: c.Base, MaxDelay: c.Cap}.Delay(attempt)
	}
	return r.Delay(attempt)
}

// Delay is the backoff before attempt+1 after attempt failed, without
// jitter: base * 2^(attempt-1) for exponential, base for fixed, capped at
// MaxDelay.
func (r Retry) Delay(attempt int) time.Duration {
	d := r.BaseDelay.D
	if r.Backoff == rbtype.BackoffExponential {
		for i := 1; i < attempt && d < r.MaxDelay.D; i++ {
			d *= 2
		}
	}
	return min(d, r.MaxDelay.D)
}

// Equal reports whether two retry policies are the same.
func (r Retry) Equal(o Retry) bool {
	return r.MaxAttempts == o.MaxAttempts && r.Backoff == o.Backoff && r.BaseDelay == o.BaseDelay &&
		r.MaxDelay == o.MaxDelay && maps.Equal(r.ByCode, o.ByCode)
}

// Compensation names the verb that undoes a completed step.
type Compensation struct {
	Verb string         `json:"verb"`
	Args map[string]any `json:"args,omitempty"`
}

// computeHash fills Hash from the canonical JSON. encoding/json sorts map
// keys and struct fields have a fixed order, so its output is canonical for
// these types.
func (d *Definition) computeHash() {
	b, err := json.Marshal(d)
	if err != nil {
		panic("verbs: definition does not marshal: " + err.Error()) // only JSON values are stored
	}
	sum := sha256.Sum256(b)
	d.Hash = "sha256:" + hex.EncodeToString(sum[:])
}

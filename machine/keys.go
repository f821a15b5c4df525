package machine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Namespaces of the deterministic ids the runtime derives, so that a
// repeat of the same logical action derives the same id. Each id is a
// keyed hash (derivation) in one of them.
var (
	NamespaceRunbook     = uuid.MustParse("6b1f0c7e-4d1a-5a53-9c2e-7e0a1f3b9d21")
	namespaceInvocation  = uuid.MustParse("0f7d2c4a-93b8-5e61-8a4d-2c9e6b1f7a30")
	namespaceCorrelation = uuid.MustParse("d3a8e5b2-61c4-5f09-b7e2-4a1c8d9f0e63")
)

// MaxKeyLength bounds the keys a caller chooses: correlation keys,
// idempotency keys and step keys, in bytes. Each is part of a database
// index, whose entries PostgreSQL limits to about 2.7 kB; a longer key
// would fail in the database rather than at the door, and no real key
// comes near it.
const MaxKeyLength = 255

// ShortKey quotes the start of a key too long to repeat in full.
func ShortKey(key string) string {
	if len(key) > 32 {
		return strconv.Quote(key[:32]) + "…"
	}
	return strconv.Quote(key)
}

// Derivation derives the ids and keys that someone outside the daemon
// must not be able to work out: a runbook's id from its request key, and
// a wait's invocation id and correlation key from its runbook, step and
// attempt. Derived from public facts (a plan, a tenant's name, inputs),
// they let one tenant notify another's wait before it started, taking its
// key (docs/daemon.md, "Tenants and roles"). Each is an HMAC-SHA256 under
// the database's derivation key (driver.Tx.DerivationKey), written as a
// UUID of version 8, RFC 9562's for ids of one's own making. The same
// inputs and key always give the same id, which is what dedupes repeats
// and keeps a wait's key across reclaims.
type Derivation struct{ Key []byte }

// NewDerivation checks a derivation key.
func NewDerivation(key []byte) (*Derivation, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("the derivation key is %d bytes; 32 are needed (migration 018 makes it)", len(key))
	}
	return &Derivation{Key: key}, nil
}

// id is the keyed hash of material in space.
func (d *Derivation) id(space uuid.UUID, material []byte) uuid.UUID {
	return uuid.NewHash(hmac.New(sha256.New, d.Key), space, material, 8)
}

// RunbookID is the id of the runbook submitted under a request key: the
// same key always names the same runbook, so concurrent duplicate
// submissions meet on one row.
func (d *Derivation) RunbookID(requestKey string) uuid.UUID {
	return d.id(NamespaceRunbook, []byte(requestKey))
}

// InvocationIDs derives a park's invocation id and correlation key from the
// runbook, the step and the attempt that parked.
func (d *Derivation) InvocationIDs(runbookID uuid.UUID, stepKey string, attempt int) (uuid.UUID, string) {
	material := make([]byte, 0, 16+len(stepKey)+12)
	material = append(material, runbookID[:]...)
	material = append(material, stepKey...)
	material = append(material, 0)
	material = strconv.AppendInt(material, int64(attempt), 10)
	return d.id(namespaceInvocation, material), d.id(namespaceCorrelation, material).String()
}

// KeyOrigin is what a step's idempotency key and seed derive from besides
// the step itself (docs/design/semantics.md section 6): the lineage root, never the
// runbook's own id, so that a regenerated runbook's external effects keep
// the root's keys and return its receipts; and, for a step that
// regenerates, the generation, so that it runs afresh.
type KeyOrigin struct {
	Root       uuid.UUID
	generation int    // 0 for the root, and for steps that do not regenerate
	tenant     string // "" for the default tenant, whose keys are as they were
}

// OriginOf is the key origin of a step of rb whose verb has exec.
func OriginOf(rb *rbtype.Runbook, exec *verbs.Execution) KeyOrigin {
	o := KeyOrigin{Root: rb.Lineage.RootOf(rb.ID)}
	if rb.Tenant != rbtype.DefaultTenant {
		// A global-scope key names no runbook: the tenant keeps two
		// tenants' effects apart (docs/design/semantics.md section 1).
		o.tenant = rb.Tenant
	}
	if Regenerates(exec) {
		o.generation = rb.Lineage.Generation
	}
	return o
}

// Regenerates reports whether a regeneration runs a step of this verb
// again under new keys: a verb whose output follows from its input (pure)
// or may be produced again (stable, a model's draft), and that changes
// nothing outside the daemon's own database. Anything else keeps its
// root's key, so an effect that happened is never repeated.
func Regenerates(exec *verbs.Execution) bool {
	switch exec.Determinism.Effective() {
	case rbtype.DeterminismPure, rbtype.DeterminismStable:
		return exec.SideEffects == rbtype.SideEffectsNone || exec.SideEffects == rbtype.SideEffectsInternalDB
	}
	return false
}

// IdempotencyKey derives a step's idempotency key from its verb's scope and
// key fields (all arguments when the verb names none), so that the same
// logical call always gets the same key: across attempts and retries, for
// the global scope across runbooks, and for a step that does not
// regenerate across a lineage. An original runbook's keys are those it
// had before lineages existed: its root is itself, its generation 0.
func IdempotencyKey(o KeyOrigin, stepKey, verb string, idem verbs.Idempotency, args map[string]any) string {
	material := map[string]any{"verb": verb, "scope": idem.Scope}
	switch idem.Scope {
	case rbtype.ScopeRunbookStep:
		material["runbook"], material["step"] = o.Root.String(), stepKey
	case rbtype.ScopeRunbook:
		material["runbook"] = o.Root.String()
	}
	if o.generation > 0 {
		material["generation"] = o.generation
	}
	if o.tenant != "" {
		material["tenant"] = o.tenant
	}
	fields := args
	if len(idem.KeyFields) > 0 {
		fields = make(map[string]any, len(idem.KeyFields))
		for _, f := range idem.KeyFields {
			fields[f] = args[f]
		}
	}
	material["fields"] = fields
	b, err := json.Marshal(material)
	if err != nil {
		panic("runtime: idempotency material does not marshal: " + err.Error()) // arguments are JSON values
	}
	sum := sha256.Sum256(b)
	return "rbk-" + hex.EncodeToString(sum[:16])
}

// compensationKey is the idempotency key of the compensation of a step.
func compensationKey(stepKey string) string { return stepKey + ":compensate" }

// StepSeed is the seed of one attempt of a step, handed to its handler
// (a model's sampling seed, say) and behind its retry jitter. It derives
// from the key origin, the step key and the attempt, never from row ids,
// so a retry or a replay computes the same seed and the same delays. A
// regeneration's steps that regenerate get new seeds with their new keys:
// a model asked to draft again should not be handed the seed of the draft
// it is replacing.
func StepSeed(o KeyOrigin, stepKey string, attempt int) uint64 {
	material := make([]byte, 0, 16+len(stepKey)+24)
	material = append(material, o.Root[:]...)
	material = append(material, stepKey...)
	material = append(material, 0)
	material = binary.BigEndian.AppendUint64(material, uint64(attempt))
	material = binary.BigEndian.AppendUint64(material, uint64(o.generation))
	sum := sha256.Sum256(material)
	return binary.BigEndian.Uint64(sum[:8])
}

// jitterFraction maps a seed to [0, 1).
func jitterFraction(seed uint64) float64 {
	return float64(seed>>11) / float64(1<<53)
}

package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/runtime/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Namespaces of the deterministic (version 5) UUIDs the runtime derives, so
// that a repeat of the same logical action derives the same id.
var (
	namespaceRunbook     = uuid.MustParse("6b1f0c7e-4d1a-5a53-9c2e-7e0a1f3b9d21")
	namespaceInvocation  = uuid.MustParse("0f7d2c4a-93b8-5e61-8a4d-2c9e6b1f7a30")
	namespaceCorrelation = uuid.MustParse("d3a8e5b2-61c4-5f09-b7e2-4a1c8d9f0e63")
)

// MaxKeyLength bounds the keys a caller chooses: correlation keys,
// idempotency keys and step keys, in bytes. Each is part of a database
// index, whose entries PostgreSQL limits to about 2.7 kB; a longer key
// would fail in the database rather than at the door, and no real key
// comes near it.
const MaxKeyLength = 255

// shortKey quotes the start of a key too long to repeat in full.
func shortKey(key string) string {
	if len(key) > 32 {
		return strconv.Quote(key[:32]) + "…"
	}
	return strconv.Quote(key)
}

// RunbookIDFor is the id of the runbook submitted under a request key: the
// same key always names the same runbook, so concurrent duplicate
// submissions meet on one row.
func RunbookIDFor(requestKey string) uuid.UUID {
	return uuid.NewSHA1(namespaceRunbook, []byte(requestKey))
}

// invocationIDs derives a park's invocation id and correlation key from the
// runbook, the step and the attempt that parked.
func invocationIDs(runbookID uuid.UUID, stepKey string, attempt int) (uuid.UUID, string) {
	material := make([]byte, 0, 16+len(stepKey)+12)
	material = append(material, runbookID[:]...)
	material = append(material, stepKey...)
	material = append(material, 0)
	material = strconv.AppendInt(material, int64(attempt), 10)
	return uuid.NewSHA1(namespaceInvocation, material), uuid.NewSHA1(namespaceCorrelation, material).String()
}

// idempotencyKey derives a step's idempotency key from its verb's scope and
// key fields (all arguments when the verb names none), so that the same
// logical call always gets the same key: across attempts, and, for the
// global scope, across runbooks.
func idempotencyKey(runbookID uuid.UUID, stepKey, verb string, idem verbs.Idempotency, args map[string]any) string {
	material := map[string]any{"verb": verb, "scope": idem.Scope}
	switch idem.Scope {
	case rbtype.ScopeRunbookStep:
		material["runbook"], material["step"] = runbookID.String(), stepKey
	case rbtype.ScopeRunbook:
		material["runbook"] = runbookID.String()
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

// jitterFraction is a pure function of the step and attempt in [0, 1), so
// a replay computes the same delays.
func jitterFraction(stepID int64, attempt int) float64 {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(stepID))
	binary.BigEndian.PutUint64(b[8:], uint64(attempt))
	sum := sha256.Sum256(b[:])
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / float64(1<<53)
}

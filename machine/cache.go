package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// The result cache (docs/design/semantics.md section 4). A step whose verb caches
// looks its key up before its handler is called: a live entry completes it
// without a call (and without a receipt: nothing happened); a miss runs the
// handler and stores the result with its completion, in the same
// transaction. A receipt is not a cache: it dedupes one effect under one
// key, where the cache reuses a result across runbooks.

// cacheKey is SHA-256 of the tenant, the policy its runbook was admitted
// under (docs/design/semantics.md section 10: an entry made under another
// policy is never served; a runbook admitted before policies has none,
// and keeps the keys it had), the verb, its definition's hash (execution
// block and schemas: a changed definition never reuses an old result) and
// the resolved arguments, canonically encoded (encoding/json sorts map
// keys, and numbers keep their text).
func cacheKey(tenant, policyHash, verb, definitionHash string, args map[string]any) (string, error) {
	b, err := json.Marshal(struct {
		Tenant     string         `json:"tenant"`
		Policy     string         `json:"policy,omitempty"`
		Verb       string         `json:"verb"`
		Definition string         `json:"definition"`
		Args       map[string]any `json:"args"`
	}{tenant, policyHash, verb, definitionHash, args})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "rbc-" + hex.EncodeToString(sum[:]), nil
}

// prepareCache gives a prepared step its cache key when its verb caches:
// it is looked up unless the runbook is a dry run (whose results are not
// real) or a regeneration of a step that regenerates (docs/design/semantics.md
// section 6: it bypasses the cache, and its new result replaces the old).
func (t *transition) prepareCache(p *prepared) {
	if !p.exec.Cache.Reuses() || t.Rb.Mode == rbtype.ModeDryRun {
		return
	}
	info, ok := t.plan.Plan.Verbs[p.step.Verb]
	if !ok {
		return
	}
	key, err := cacheKey(t.Rb.Tenant, t.Rb.PolicyHash, p.step.Verb, info.Hash, p.args)
	if err != nil {
		return // arguments that do not encode were refused before this
	}
	p.cacheKey, p.definitionHash = key, info.Hash
	p.cacheLookup = !(t.Rb.Lineage.Generation > 0 && Regenerates(&p.exec))
}

// fromCache completes a prepared step from a live cache entry, and reports
// whether it did. Every lookup is counted, hit or miss.
func (t *transition) fromCache(p *prepared, entries map[string]rbtype.CacheEntry) bool {
	if p.cacheKey == "" || !p.cacheLookup {
		return false
	}
	entry, ok := entries[p.cacheKey]
	hit := ok && entry.Live(t.Now)
	t.m.Observe.CacheLookup(p.step.Verb, hit)
	if !hit {
		return false
	}
	t.record(p.step, 0, attemptSucceeded, "", "hit", rbtype.Usage{}) // a hit costs nothing
	t.complete(p.step, entry.Result, false, StepSucceededData{Cache: "hit", Source: &CacheSource{
		RunbookID: entry.RunbookID, Step: entry.StepKey, Attempt: entry.Attempt, CreatedAt: entry.CreatedAt,
		ExpiresAt: entry.ExpiresAt, DefinitionHash: entry.DefinitionHash,
	}})
	return true
}

// storeInCache keeps a step's successful result for reuse, when its call
// was made with a cache key.
func (t *transition) storeInCache(s *rbtype.Step, o *Outcome, exec *verbs.Execution) {
	if o.CacheKey == "" || o.DryRun || o.simulated || !exec.Cache.Reuses() {
		return
	}
	entry := rbtype.CacheEntry{
		Tenant: t.Rb.Tenant, Key: o.CacheKey, Verb: s.Verb, DefinitionHash: o.DefinitionHash, Result: o.Value,
		RunbookID: t.Rb.ID, StepKey: s.Key, Attempt: s.Attempt, CreatedAt: t.Now,
	}
	if exec.Cache.Policy == rbtype.CacheTTL && exec.Cache.TTL != nil {
		expires := t.Now.Add(exec.Cache.TTL.D)
		entry.ExpiresAt = &expires
	}
	t.cacheWrites = append(t.cacheWrites, entry)
}

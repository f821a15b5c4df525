package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path"
	"slices"

	"github.com/runbookdev/runbook/rbtype"
)

// Policy is a policy file as read, or the built-in policy. It never
// changes once made: a reload makes a new one.
type Policy struct {
	// Source names the file it was read from; "" for the built-in policy.
	Source string
	// def is the default block (the built-in's when the file has none),
	// tenants the blocks of the tenants the file lists.
	def     *block
	tenants map[string]*block
	// hash covers every block.
	hash string
	// capsSpend: some block caps a tenant's day or month (CapsTenantSpend).
	capsSpend bool
	// tenantHashes holds each listed tenant's hash, and "" the hash of
	// every tenant the policy does not list: a budget is checked before
	// every attempt, and hashing the rules each time cost the daemon 7 %
	// of its CPU on a chain of no-op steps.
	tenantHashes map[string]string
}

// block is one level of rules: the default, or one tenant's. Each field
// says whether the block sets it: a tenant's block takes from the default
// what it leaves out.
type block struct {
	// where names the block in rules: "default" or "tenants.acme".
	where    string
	gate     patterns
	deny     patterns
	autoExec patterns
	maxRisk  rbtype.Risk // "" when not set
	budget   map[rbtype.BudgetScope]rbtype.Budget
	// trust holds the verbs that earn running unattended, by verb glob
	// (nil when the block does not set trust:); modes the modes a
	// submission may ask for (nil when the block does not set modes:).
	trust []TrustRule
	modes []rbtype.Mode
}

// TrustRule is one entry of a policy's trust: (docs/design/semantics.md
// section 17): a step of a verb the glob matches runs unattended once the
// tenant has approved After attempts of that verb with no rejection, and
// no failed attempt, since.
type TrustRule struct {
	Verb  string `json:"verb"`
	After int    `json:"after"`
}

// patterns is a list of tag patterns, and whether the block set it (an
// empty list set is not the same as none: `deny: []` clears the default's).
type patterns struct {
	set  bool
	list []string
}

// Builtin is the policy without a file: only read_only steps run
// unattended, so every step whose side effects reach outside
// (external_call, human_process) waits for a person, as does every step
// tagged external_send; nothing is denied, any risk and every mode is
// admitted, nothing is budgeted (docs/design/semantics.md section 17).
func Builtin() *Policy {
	p := &Policy{def: &block{where: "default"}, tenants: map[string]*block{}}
	p.seal()
	return p
}

// seal computes the hashes once the policy's blocks are read; a Policy
// is not changed after.
func (p *Policy) seal() {
	p.hash = p.computeHash()
	p.capsSpend = p.def.capsSpend()
	p.tenantHashes = map[string]string{"": (&Tenant{def: p.def}).computeHash()}
	for name, own := range p.tenants {
		p.tenantHashes[name] = (&Tenant{Name: name, def: p.def, own: own}).computeHash()
		p.capsSpend = p.capsSpend || own.capsSpend()
	}
}

// capsSpend reports whether the block caps a day's or a month's spend.
func (b *block) capsSpend() bool {
	return b != nil && (!b.budget[rbtype.BudgetDay].Empty() || !b.budget[rbtype.BudgetMonth].Empty())
}

// Hash identifies the whole policy (every tenant's rules and budgets), for
// the daemon's log: which policy is in force.
func (p *Policy) Hash() string { return p.hash }

// CapsTenantSpend reports whether the policy caps any tenant's day or
// month: only then must an advance read what tenants without a budget
// set by rbd budget set have spent (driver.LoadOptions.AllSpend).
func (p *Policy) CapsTenantSpend() bool { return p.capsSpend }

// Tenants lists the tenants the policy names, sorted.
func (p *Policy) Tenants() []string { return slices.Sorted(maps.Keys(p.tenants)) }

// Tenant is the rules one tenant is held to: its own block's, and the
// default's for what its block leaves out (all of them for a tenant the
// policy does not list).
func (p *Policy) Tenant(name string) *Tenant {
	own := p.tenants[name]
	hash := p.tenantHashes[""]
	if own != nil {
		hash = p.tenantHashes[name]
	}
	return &Tenant{Name: name, def: p.def, own: own, hash: hash}
}

// Tenant is one tenant's rules.
type Tenant struct {
	Name     string
	def, own *block // own is nil for a tenant the policy does not list
	hash     string
}

// Hash is the tenant's policy_hash (docs/design/semantics.md section 10):
// it covers what decides admission (gates, denials, what runs unattended,
// the highest risk, and the rule built in), not budgets, so that raising a
// budget neither renames requests nor empties the cache. Tenants under the
// same rules share it.
func (t *Tenant) Hash() string { return t.hash }

// pick is the block that decides a field: the tenant's own when it sets
// it, else the default.
func (t *Tenant) pick(set func(*block) bool) *block {
	if t.own != nil && set(t.own) {
		return t.own
	}
	return t.def
}

func (t *Tenant) denyBlock() *block { return t.pick(func(b *block) bool { return b.deny.set }) }

// MaxRisk is the highest risk the tenant's steps may have, and the rule
// that says so.
func (t *Tenant) MaxRisk() (rbtype.Risk, string) {
	b := t.pick(func(b *block) bool { return b.maxRisk != "" })
	if b.maxRisk == "" {
		return rbtype.RiskHigh, "default.max_risk"
	}
	return b.maxRisk, b.where + ".max_risk"
}

// Budget is the tenant's budget for a scope (a runbook, a day, a month)
// and the rule it comes from; an empty budget caps nothing.
func (t *Tenant) Budget(scope rbtype.BudgetScope) (rbtype.Budget, string) {
	b := t.pick(func(b *block) bool { _, ok := b.budget[scope]; return ok })
	return b.budget[scope], b.where + ".budget." + string(scope)
}

func (t *Tenant) gateBlock() *block { return t.pick(func(b *block) bool { return b.gate.set }) }
func (t *Tenant) autoBlock() *block { return t.pick(func(b *block) bool { return b.autoExec.set }) }

// builtinAutoExec is what runs unattended when no block sets auto_exec:
// read_only steps only (docs/design/semantics.md section 17).
var builtinAutoExec = []string{TagReadOnly}

// autoExec is the tenant's auto_exec patterns and the block they come
// from; read_only from the built-in rule when no block sets any.
func (t *Tenant) autoExec() ([]string, *block) {
	b := t.autoBlock()
	if !b.autoExec.set {
		return builtinAutoExec, b
	}
	return b.autoExec.list, b
}

// Trust is the tenant's trust rule for a verb, and the rule's name
// ("tenants.acme.trust"): the first entry whose glob matches it, of the
// tenant's own trust: when its block sets one, else the default's.
func (t *Tenant) Trust(verb string) (TrustRule, string, bool) {
	b := t.pick(func(b *block) bool { return b.trust != nil })
	for _, r := range b.trust {
		if ok, err := path.Match(r.Verb, verb); err == nil && ok {
			return r, b.where + ".trust", true
		}
	}
	return TrustRule{}, "", false
}

// Modes is the modes the tenant may submit in, and the rule that says so;
// every mode when no block lists them.
func (t *Tenant) Modes() ([]rbtype.Mode, string) {
	b := t.pick(func(b *block) bool { return b.modes != nil })
	if b.modes == nil {
		return rbtype.Modes, ""
	}
	return b.modes, b.where + ".modes"
}

// AllowsMode reports whether the tenant may submit a runbook in mode m
// (docs/design/semantics.md section 17); when not, the rule that refuses
// it.
func (t *Tenant) AllowsMode(m rbtype.Mode) (bool, string) {
	modes, rule := t.Modes()
	return slices.Contains(modes, m), rule
}

// hashed is what a tenant's hash covers. Where each list comes from is
// part of it: a tenant's own auto_exec overrides a gate it inherits, and
// not one of its own.
type hashed struct {
	Version  int         `json:"version"`
	Builtin  []string    `json:"builtin_gate"`
	Gate     level       `json:"gate"`
	AutoExec level       `json:"auto_exec"`
	Deny     []string    `json:"deny"`
	MaxRisk  rbtype.Risk `json:"max_risk"`
	// Trust and Modes decide admission too: which steps are gated, and
	// which submissions are refused.
	Trust []TrustRule   `json:"trust,omitempty"`
	Modes []rbtype.Mode `json:"modes,omitempty"`
}

// level is one list of patterns and the level it comes from.
type level struct {
	Own  bool     `json:"own"`
	List []string `json:"list"`
}

func (t *Tenant) computeHash() string {
	risk, _ := t.MaxRisk()
	gate := t.gateBlock()
	autoList, auto := t.autoExec()
	trust := t.pick(func(b *block) bool { return b.trust != nil }).trust
	modes, modeRule := t.Modes()
	if modeRule == "" {
		modes = nil
	}
	return sum(hashed{
		Version: 2, Builtin: []string{TagExternalSend, RuleGateByEffect},
		Gate:     level{Own: gate == t.own, List: orEmpty(gate.gate.list)},
		AutoExec: level{Own: auto == t.own, List: orEmpty(autoList)},
		Deny:     orEmpty(t.denyBlock().deny.list), MaxRisk: risk,
		Trust: trust, Modes: modes,
	})
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (p *Policy) computeHash() string {
	all := map[string]any{"default": p.def.export()}
	for name, b := range p.tenants {
		all["tenants."+name] = b.export()
	}
	return sum(all)
}

// export is a block as data, for the policy's hash.
func (b *block) export() map[string]any {
	out := map[string]any{}
	put := func(name string, p patterns) {
		if p.set {
			out[name] = p.list
		}
	}
	put("gate", b.gate)
	put("deny", b.deny)
	put("auto_exec", b.autoExec)
	if b.maxRisk != "" {
		out["max_risk"] = b.maxRisk
	}
	if len(b.budget) > 0 {
		out["budget"] = b.budget
	}
	if b.trust != nil {
		out["trust"] = b.trust
	}
	if b.modes != nil {
		out["modes"] = b.modes
	}
	return out
}

func sum(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("policy: a policy does not encode: " + err.Error()) // strings, numbers and lists only
	}
	s := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Mentions reports whether a rule of the policy speaks of a tag: a
// pattern of any block's gate, deny or auto_exec matches it, or it is
// external_send, which the built-in rule always holds. A tag no rule
// mentions is one nobody decided about (rbc lint's W003).
func (p *Policy) Mentions(tag string) bool {
	if tag == TagExternalSend || tag == TagReadOnly {
		return true // the built-in rules speak of them
	}
	for _, b := range append([]*block{p.def}, mapValues(p.tenants)...) {
		for _, list := range [][]string{b.gate.list, b.deny.list, b.autoExec.list} {
			if matchesAny(list, tag) {
				return true
			}
		}
	}
	return false
}

func mapValues(m map[string]*block) []*block {
	out := make([]*block, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// A token limited to some verbs (verbs= globs) must not learn which other
// verbs exist, nor what they take (docs/daemon.md, "Policy, scope and
// budgets"). So a call of a verb outside its globs is refused 403 naming
// the step and the verb (docs/design/semantics.md section 10) whether the
// verb exists or not, before it is looked up or its arguments checked; and
// the compiler's suggestions for a misspelt verb come only from the verbs
// within the globs. admit's checkScope still refuses, for a verb within
// the globs, a risk above the token's max_risk.

// scopedCatalogues keeps the catalogue as each verb scope sees it, by its
// globs: a handful of distinct scopes per daemon.
type scopedCatalogues struct {
	mu   sync.Mutex
	of   *registry.Catalogue
	seen map[string]*registry.Catalogue
}

// scopedCompile is how a source from ctx is compiled: the options (with
// opts' own), the catalogue to compile against, and, once compiled, the
// refusal of a call outside the scope, if there was one.
func (e *Engine) scopedCompile(ctx context.Context, opts compiler.Options) (compiler.Options, *registry.Catalogue, func() error) {
	cat := e.cfg.Catalogue
	s, ok := scopeOf(ctx)
	if !ok || cat == nil || s.All || s.Verbs == nil {
		return opts, cat, func() error { return nil }
	}
	var outside []compiler.OutsideCall
	opts.OutsideScope = func(verb string) bool { return !s.Verbs.Allows(verb) }
	opts.Outside = &outside
	refusal := func() error {
		if len(outside) == 0 {
			return nil
		}
		return fmt.Errorf("%w: step %q calls verb %s, which this token's scope (verbs=%s) does not allow",
			rbtype.ErrForbidden, outside[0].Step, outside[0].Verb, s.Verbs)
	}
	key := s.Verbs.String()
	e.scoped.mu.Lock()
	defer e.scoped.mu.Unlock()
	if e.scoped.of != cat {
		e.scoped.of, e.scoped.seen = cat, map[string]*registry.Catalogue{}
	}
	within, ok := e.scoped.seen[key]
	if !ok {
		within = cat.Within(func(d *verbs.Definition) bool { return s.Verbs.Allows(d.FullName()) })
		if len(e.scoped.seen) < 256 {
			e.scoped.seen[key] = within
		}
	}
	return opts, within, refusal
}

// planOutsideScope refuses a submitted plan (JSON) naming a verb outside
// ctx's verb scope, before the plan is read against the catalogue: the
// same answer for a verb that exists and one that does not.
func planOutsideScope(ctx context.Context, raw []byte) error {
	s, ok := scopeOf(ctx)
	if !ok || s.All || s.Verbs == nil {
		return nil
	}
	var p struct {
		Steps []struct {
			Key  string `json:"key"`
			Verb string `json:"verb"`
		} `json:"steps"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return nil // ReadPlan says what is wrong with it
	}
	for _, st := range p.Steps {
		if !s.Verbs.Allows(st.Verb) {
			return fmt.Errorf("%w: step %q calls verb %s, which this token's scope (verbs=%s) does not allow",
				rbtype.ErrForbidden, st.Key, st.Verb, s.Verbs)
		}
	}
	return nil
}

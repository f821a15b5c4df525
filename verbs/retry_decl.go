package verbs

import (
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// retryDecl is what a verb file wrote of its retry block, for
// resolveRetry: whether it set max_attempts, and its by_code entries as
// written (a zero field was left out).
type retryDecl struct {
	attempts bool
	byCode   map[rbtype.ErrorCode]CodeRetry
}

func (d *decoder) retry(n *yaml.Node, path string, def *Definition) retryDecl {
	r := &def.Execution.Retry
	var decl retryDecl
	d.mapping(n, path, def, map[string]field{
		"max_attempts": {false, func(p string, v *yaml.Node) {
			if attempts, ok := d.attempts(v, p); ok {
				r.MaxAttempts, decl.attempts = attempts, true
			}
		}},
		"backoff": {false, func(p string, v *yaml.Node) { r.Backoff = enum(d, v, p, "backoff", rbtype.Backoffs) }},
		"base_delay": {false, func(p string, v *yaml.Node) {
			if dur := d.duration(v, p); dur != nil {
				r.BaseDelay = *dur
			}
		}},
		"max_delay": {false, func(p string, v *yaml.Node) {
			if dur := d.duration(v, p); dur != nil {
				r.MaxDelay = *dur
			}
		}},
		"by_code": {false, func(p string, v *yaml.Node) { decl.byCode = d.byCode(v, p, def) }},
	})
	if r.BaseDelay.D > 0 && r.MaxDelay.D > 0 && r.BaseDelay.D > r.MaxDelay.D {
		d.diags.Errorf(lang.VBadValue, def.FieldRange(path+".max_delay"), "retry.max_delay %s is shorter than retry.base_delay %s", r.MaxDelay, r.BaseDelay)
	}
	return decl
}

// attempts reads a number of attempts: 1 to 100.
func (d *decoder) attempts(v *yaml.Node, p string) (int, bool) {
	s, ok := d.scalar(v, p)
	if !ok {
		return 0, false
	}
	attempts, err := strconv.Atoi(s)
	if err != nil || attempts < 1 || attempts > 100 {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s must be a whole number from 1 to 100 (1 means no retry)", p)
		return 0, false
	}
	return attempts, true
}

// byCode reads retry.by_code: error codes of the taxonomy, each with
// max_attempts, base and cap (docs/design/semantics.md section 12). A code that is
// never retried given more than one attempt is V023: the runtime would
// never use them, and the author meant something else.
func (d *decoder) byCode(n *yaml.Node, path string, def *Definition) map[rbtype.ErrorCode]CodeRetry {
	if n.Kind != yaml.MappingNode {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s must be a mapping of error codes to {max_attempts, base, cap}", path)
		return nil
	}
	out := map[rbtype.ErrorCode]CodeRetry{}
	names := make([]string, len(rbtype.Codes))
	for i, c := range rbtype.Codes {
		names[i] = string(c)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], resolveAlias(n.Content[i+1])
		code := rbtype.ErrorCode(key.Value)
		if !slices.Contains(rbtype.Codes, code.Canonical()) {
			d.diags.Errorf(lang.VBadValue, d.src.rangeOf(key), "unknown error code %q in %s (expected one of %s)", key.Value, path, strings.Join(names, ", ")).
				WithReplacements(d.src.rangeOf(key), key.Value, lang.Suggest(key.Value, names), nil)
			continue
		}
		code = code.Canonical()
		if _, dup := out[code]; dup {
			d.diags.Errorf(lang.VBadYAML, d.src.rangeOf(key), "error code %q is given twice in %s", code, path)
			continue
		}
		var c CodeRetry
		var attemptsAt *yaml.Node
		sub := path + "." + key.Value
		d.mapping(value, sub, def, map[string]field{
			"max_attempts": {true, func(p string, v *yaml.Node) {
				attemptsAt = v
				c.MaxAttempts, _ = d.attempts(v, p)
			}},
			"base": {false, func(p string, v *yaml.Node) {
				if dur := d.duration(v, p); dur != nil {
					c.Base = *dur
				}
			}},
			"cap": {false, func(p string, v *yaml.Node) {
				if dur := d.duration(v, p); dur != nil {
					c.Cap = *dur
				}
			}},
		})
		if c.Base.D > 0 && c.Cap.D > 0 && c.Base.D > c.Cap.D {
			d.diags.Errorf(lang.VBadValue, def.FieldRange(sub+".cap"), "%s.cap %s is shorter than its base %s", sub, c.Cap, c.Base)
		}
		if attemptsAt != nil && c.MaxAttempts > 1 && !code.Retryable() {
			d.diags.Errorf(lang.VRetryNever, d.src.rangeOf(attemptsAt),
				"%s is never retried, so %d attempts would never be made; a failure with it is final (retryable: NETWORK_TIMEOUT, RATE_LIMIT, TEMPORARY_PROVIDER_ERROR, TRANSIENT_DB_LOCK, DEPENDENCY_UNAVAILABLE)",
				code, c.MaxAttempts)
		}
		out[code] = c
	}
	return out
}

// resolveRetry completes a retry block after the defaults (docs/design/semantics.md
// section 12). A verb that sets max_attempts gives every retryable code
// those attempts with its backoff, except the codes its by_code names. A
// verb that does not gets the default table (DefaultByCode) with its
// by_code entries laid over it. An entry that leaves out base or cap takes
// the block's base_delay and max_delay, or, over a default entry, that
// entry's.
func resolveRetry(r *Retry, decl retryDecl) {
	table := map[rbtype.ErrorCode]CodeRetry{}
	if !decl.attempts {
		table = DefaultByCode()
	}
	for code, c := range decl.byCode {
		if c.MaxAttempts == 0 {
			continue // its max_attempts was refused
		}
		under, had := table[code]
		switch {
		case c.Base.D == 0 && had:
			c.Base = under.Base
		case c.Base.D == 0:
			c.Base = r.BaseDelay
		}
		switch {
		case c.Cap.D == 0 && had:
			c.Cap = under.Cap
		case c.Cap.D == 0:
			c.Cap = r.MaxDelay
		}
		if c.Cap.D < c.Base.D {
			c.Cap = c.Base
		}
		table[code] = c
	}
	if len(table) > 0 {
		r.ByCode = table
	}
}

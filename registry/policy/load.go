package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// Problem is one mistake in a policy file, where it is and which key.
type Problem struct {
	File string
	Line int
	// Key is the dotted path of the key ("tenants.acme.max_risk",
	// "default.gate[1]"); empty for the file as a whole.
	Key     string
	Message string
}

func (p Problem) String() string {
	if p.Key == "" {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Key, p.Message)
}

// Error is a policy file that cannot be used, with every problem found.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// ReadFile reads and parses a policy file; see Parse.
func ReadFile(filename string, knownTags []string) (*Policy, error) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", filename, err)
	}
	return Parse(filename, src, knownTags)
}

// tenantName is what a tenant may be called, as a token line says it.
var tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Parse reads a policy file strictly: an unknown key, a key given twice,
// an unknown risk, a tag pattern that is malformed or matches none of
// knownTags (KnownTags), a tag both gated and let run unattended by one
// block, a budget that is negative or not a number: each is a Problem,
// and the policy is not made. A file without a default block takes the
// built-in one's rules (only read_only runs unattended, nothing else
// is said).
func Parse(filename string, src []byte, knownTags []string) (*Policy, error) {
	r := &reader{file: filename, known: knownTags}
	p := &Policy{Source: filename, def: &block{where: "default"}, tenants: map[string]*block{}}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		r.problem(1, "", "the file is empty; a policy has a default: block, a tenants: block, or both")
	case err != nil:
		r.problem(yamlLine(err), "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	default:
		var more yaml.Node
		if dec.Decode(&more) == nil {
			line := more.Line
			if len(more.Content) > 0 {
				line = more.Content[0].Line
			}
			r.problem(line, "", "a policy is one YAML document; this is a second")
		}
		root := doc.Content[0]
		if r.noAliases(root); len(r.problems) > 0 {
			break
		}
		r.mapping(root, "", map[string]func(string, *yaml.Node){
			"default": func(key string, v *yaml.Node) { p.def = r.block(v, key, "default") },
			"tenants": func(key string, v *yaml.Node) {
				r.mapping(v, key, nil, func(name string, kn, vn *yaml.Node) {
					where := "tenants." + name
					if !tenantName.MatchString(name) {
						r.problem(kn.Line, where, "tenant %q must be lower-case letters, digits, - and _, at most 64, as a token line names it", name)
						return
					}
					p.tenants[name] = r.block(vn, where, where)
				})
			},
		}, nil)
	}
	if len(r.problems) > 0 {
		return nil, &Error{Problems: r.problems}
	}
	p.seal()
	return p, nil
}

// reader collects the problems of one file.
type reader struct {
	file     string
	known    []string
	problems []Problem
}

func (r *reader) problem(line int, key, format string, args ...any) {
	r.problems = append(r.problems, Problem{File: r.file, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// noAliases refuses anchors and aliases: a policy is short, and an alias
// would make one rule two places' at once.
func (r *reader) noAliases(n *yaml.Node) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		r.problem(n.Line, "", "anchors and aliases are not allowed in a policy; write each rule out")
		return
	}
	for _, c := range n.Content {
		r.noAliases(c)
	}
}

// mapping walks a mapping at key: known names each key to its reader
// (unknown keys are problems, with a did-you-mean), or, with known nil,
// any reads every key. Keys given twice are problems.
func (r *reader) mapping(n *yaml.Node, key string, known map[string]func(string, *yaml.Node), any func(string, *yaml.Node, *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		r.problem(n.Line, key, "must be a mapping (key: value)")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		sub := join(key, kn.Value)
		if seen[kn.Value] {
			r.problem(kn.Line, sub, "given twice")
			continue
		}
		seen[kn.Value] = true
		if known == nil {
			any(kn.Value, kn, vn)
			continue
		}
		read, ok := known[kn.Value]
		if !ok {
			names := make([]string, 0, len(known))
			for name := range known {
				names = append(names, name)
			}
			slices.Sort(names)
			msg := fmt.Sprintf("unknown key (valid keys: %s)", strings.Join(names, ", "))
			if near := lang.Suggest(kn.Value, names); len(near) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", near[0])
			}
			r.problem(kn.Line, sub, "%s", msg)
			continue
		}
		read(sub, vn)
	}
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// block reads one block of rules: the default's, or a tenant's.
func (r *reader) block(n *yaml.Node, key, where string) *block {
	b := &block{where: where}
	r.mapping(n, key, map[string]func(string, *yaml.Node){
		"gate":      func(k string, v *yaml.Node) { b.gate = r.patterns(v, k) },
		"deny":      func(k string, v *yaml.Node) { b.deny = r.patterns(v, k) },
		"auto_exec": func(k string, v *yaml.Node) { b.autoExec = r.patterns(v, k) },
		"max_risk":  func(k string, v *yaml.Node) { b.maxRisk = r.risk(v, k) },
		"budget": func(k string, v *yaml.Node) {
			b.budget = map[rbtype.BudgetScope]rbtype.Budget{}
			known := map[string]func(string, *yaml.Node){}
			for _, scope := range rbtype.BudgetScopes {
				known[string(scope)] = func(k string, v *yaml.Node) { b.budget[scope] = r.budget(v, k) }
			}
			r.mapping(v, k, known, nil)
		},
		"trust": func(k string, v *yaml.Node) { b.trust = r.trust(v, k) },
		"modes": func(k string, v *yaml.Node) { b.modes = r.modes(v, k) },
	}, nil)
	for _, tag := range r.known {
		if gp, ok := firstPattern(b.gate.list, tag); ok {
			if ap, ok := firstPattern(b.autoExec.list, tag); ok {
				r.problem(n.Line, key, "tag %s is both gated (%s) and let run unattended (%s); say which", tag, gp, ap)
			}
		}
	}
	return b
}

func firstPattern(patterns []string, tag string) (string, bool) {
	p, _, ok := firstMatch(patterns, []string{tag})
	return p, ok
}

// patterns reads a list of tag patterns, each a glob that must match one
// of the known tags: a pattern that matches nothing is a typo, and a typo
// in a policy lets through what it meant to stop.
func (r *reader) patterns(n *yaml.Node, key string) patterns {
	out := patterns{set: true, list: []string{}}
	if n.Kind != yaml.SequenceNode {
		r.problem(n.Line, key, "must be a list of tag patterns, as in [external_send, financial]")
		return out
	}
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		if item.Kind != yaml.ScalarNode || item.Tag != "!!str" {
			r.problem(item.Line, k, "must be a tag pattern (text), as in external_send or external_*")
			continue
		}
		p := item.Value
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.Contains(p, "/") {
			r.problem(item.Line, k, "tag pattern %q is malformed (a tag, or a glob with * ? and [...])", p)
			continue
		}
		matched := false
		for _, tag := range r.known {
			if matchTag(p, tag) {
				matched = true
				break
			}
		}
		if !matched {
			msg := fmt.Sprintf("tag pattern %q matches no tag (known tags: %s)", p, strings.Join(r.known, ", "))
			if near := lang.Suggest(p, r.known); len(near) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", near[0])
			}
			r.problem(item.Line, k, "%s", msg)
			continue
		}
		if slices.Contains(out.list, p) {
			r.problem(item.Line, k, "tag pattern %q is given twice", p)
			continue
		}
		out.list = append(out.list, p)
	}
	return out
}

func (r *reader) risk(n *yaml.Node, key string) rbtype.Risk {
	names := make([]string, len(rbtype.Risks))
	for i, risk := range rbtype.Risks {
		names[i] = string(risk)
	}
	if n.Kind != yaml.ScalarNode || !slices.Contains(names, n.Value) {
		msg := fmt.Sprintf("unknown risk %q (expected %s)", n.Value, strings.Join(names, ", "))
		if near := lang.Suggest(n.Value, names); len(near) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", near[0])
		}
		r.problem(n.Line, key, "%s", msg)
		return ""
	}
	return rbtype.Risk(n.Value)
}

// budget reads one budget: cost_usd, tokens and credits, each a number at
// or above zero (tokens a whole one).
func (r *reader) budget(n *yaml.Node, key string) rbtype.Budget {
	var b rbtype.Budget
	r.mapping(n, key, map[string]func(string, *yaml.Node){
		rbtype.MeasureCostUSD: func(k string, v *yaml.Node) { b.CostUSD = r.amount(v, k) },
		rbtype.MeasureCredits: func(k string, v *yaml.Node) { b.Credits = r.amount(v, k) },
		rbtype.MeasureTokens: func(k string, v *yaml.Node) {
			if f := r.amount(v, k); f != nil {
				if *f != math.Trunc(*f) || *f > math.MaxInt64/2 {
					r.problem(v.Line, k, "%s is not a whole number of tokens", v.Value)
					return
				}
				t := int64(*f)
				b.Tokens = &t
			}
		},
	}, nil)
	return b
}

// amount reads a number at or above zero. A quoted number is text, not a
// number: the file says what it means.
func (r *reader) amount(n *yaml.Node, key string) *float64 {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		r.problem(n.Line, key, "%q is not a number", n.Value)
		return nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		var v float64
		if n.Decode(&v) != nil {
			r.problem(n.Line, key, "%q is not a number", n.Value)
			return nil
		}
		f = v
	}
	if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		r.problem(n.Line, key, "%s must be a number at or above zero", n.Value)
		return nil
	}
	return &f
}

var yamlLinePattern = regexp.MustCompile(`line (\d+)`)

func yamlLine(err error) int {
	if m := yamlLinePattern.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

// trust reads a block's trust: a mapping of verb glob to {after: N}, N a
// whole number of at least 1 (docs/design/semantics.md section 17). The
// entries keep the file's order: the first whose glob matches a verb
// decides.
func (r *reader) trust(n *yaml.Node, key string) []TrustRule {
	out := []TrustRule{}
	r.mapping(n, key, nil, func(glob string, kn, vn *yaml.Node) {
		k := key + "." + glob
		if _, err := ParseVerbScope(glob); err != nil || strings.Contains(glob, ",") {
			r.problem(kn.Line, k, "verb pattern %q is malformed (a verb name, or a glob with * ? and [...], as in billing.*)", glob)
			return
		}
		rule := TrustRule{Verb: glob}
		before := len(r.problems)
		r.mapping(vn, k, map[string]func(string, *yaml.Node){
			"after": func(k string, v *yaml.Node) {
				n, err := strconv.Atoi(v.Value)
				if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || err != nil || n < 1 || n > 1_000_000 {
					r.problem(v.Line, k, "%q must be a whole number of approvals from 1 to 1000000", v.Value)
					return
				}
				rule.After = n
			},
		}, nil)
		if len(r.problems) > before {
			return
		}
		if rule.After == 0 {
			r.problem(vn.Line, k, "needs after: N, the approvals that earn running unattended")
			return
		}
		out = append(out, rule)
	})
	return out
}

// modes reads a block's modes: the modes a submission may ask for, a
// list of execute, dry_run and draft_only.
func (r *reader) modes(n *yaml.Node, key string) []rbtype.Mode {
	names := make([]string, len(rbtype.Modes))
	for i, m := range rbtype.Modes {
		names[i] = string(m)
	}
	out := []rbtype.Mode{}
	if n.Kind != yaml.SequenceNode {
		r.problem(n.Line, key, "must be a list of modes, as in [draft_only, dry_run]")
		return out
	}
	for i, item := range n.Content {
		k := fmt.Sprintf("%s[%d]", key, i)
		if item.Kind != yaml.ScalarNode || !slices.Contains(names, item.Value) {
			msg := fmt.Sprintf("unknown mode %q (expected %s)", item.Value, strings.Join(names, ", "))
			if near := lang.Suggest(item.Value, names); len(near) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", near[0])
			}
			r.problem(item.Line, k, "%s", msg)
			continue
		}
		if slices.Contains(out, rbtype.Mode(item.Value)) {
			r.problem(item.Line, k, "mode %s is given twice", item.Value)
			continue
		}
		out = append(out, rbtype.Mode(item.Value))
	}
	return out
}

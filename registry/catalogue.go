package registry

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// Catalogue is the set of verbs a runbook may call.
type Catalogue struct {
	verbs        map[string]*verbs.Definition
	names        []string
	handlers     *Handlers
	daemonSchema string
	// invalid are definitions with errors of their own (verbs.Loaded's
	// Invalid): checked like the rest, so one run shows every error, but
	// not callable.
	invalid map[string]*verbs.Definition
}

// Load reads verb files from paths and builds a catalogue over handlers.
// The sources are returned for rendering diagnostics.
func Load(paths []string, handlers *Handlers, opts ...Option) (*Catalogue, lang.Sources, lang.Diagnostics, error) {
	loaded, diags, err := verbs.LoadPaths(paths)
	if err != nil {
		return nil, nil, nil, err
	}
	cat, more := New(loaded.Definitions, handlers, append(opts, WithInvalid(loaded.Invalid))...)
	diags.Append(more)
	return cat, loaded.Sources, diags.Sorted(), nil
}

// New builds a catalogue and runs the cross-definition checks. Definitions
// with problems stay in the catalogue, so that runbooks calling them are
// not also told the verb does not exist.
func New(defs []*verbs.Definition, handlers *Handlers, opts ...Option) (*Catalogue, lang.Diagnostics) {
	c := &Catalogue{verbs: make(map[string]*verbs.Definition, len(defs)), handlers: handlers, invalid: map[string]*verbs.Definition{}}
	for _, o := range opts {
		o(c)
	}
	for _, d := range defs {
		c.verbs[d.FullName()] = d
		c.names = append(c.names, d.FullName())
	}
	slices.Sort(c.names)
	var diags lang.Diagnostics
	for _, name := range c.names {
		d := c.verbs[name]
		c.checkHandler(d, &diags)
		c.checkCRUDTable(d, &diags)
		c.checkCRUDKey(d, &diags)
		c.checkCompensation(d, &diags)
	}
	// The definitions with errors of their own get the same checks, on
	// what of them decoded: a misspelt field must not hide a bad param.
	for _, name := range slices.Sorted(maps.Keys(c.invalid)) {
		d := c.invalid[name]
		c.checkHandler(d, &diags)
		c.checkCRUDTable(d, &diags)
		c.checkCRUDKey(d, &diags)
		c.checkCompensation(d, &diags)
	}
	return c, diags
}

// Invalid finds a verb that is defined, by its full name, but whose
// definition has errors, so it cannot be called: a runbook calling it is
// told so, pointing at the definition, rather than that it is unknown.
func (c *Catalogue) Invalid(name string) (*verbs.Definition, bool) {
	d, ok := c.invalid[name]
	return d, ok
}

// Lookup finds a verb by its full name, matched exactly.
func (c *Catalogue) Lookup(name string) (*verbs.Definition, bool) {
	d, ok := c.verbs[name]
	return d, ok
}

// Suggest offers verb names close to a misspelt one.
func (c *Catalogue) Suggest(name string) []string { return lang.Suggest(name, c.names) }

// Names lists the verbs' full names, sorted.
func (c *Catalogue) Names() []string { return c.names }

// Definitions lists the verbs, sorted by full name.
func (c *Catalogue) Definitions() []*verbs.Definition {
	out := make([]*verbs.Definition, len(c.names))
	for i, n := range c.names {
		out[i] = c.verbs[n]
	}
	return out
}

// PolicyTags lists the policy tags the verbs carry, sorted, each once:
// what a policy's patterns may match besides the well-known tags.
func (c *Catalogue) PolicyTags() []string {
	var tags []string
	for _, d := range c.verbs {
		tags = append(tags, d.Execution.PolicyTags...)
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// Handlers is the handler table the catalogue was checked against.
func (c *Catalogue) Handlers() *Handlers { return c.handlers }

func (c *Catalogue) checkHandler(d *verbs.Definition, diags *lang.Diagnostics) {
	e := d.Execution
	if e.Handler == "" {
		return // missing or not a value: the definition's own error says so
	}
	spec, ok := c.handlers.Lookup(e.Handler)
	if !ok {
		diags.Errorf(lang.VUnknownHandler, d.FieldRange("execution.handler"), "handler %q is not registered", e.Handler).
			WithSuggestions(lang.Suggest(e.Handler, c.handlers.Names())...)
		return
	}
	if e.Kind != "" && spec.Kind != e.Kind {
		diags.Errorf(lang.VBadValue, d.FieldRange("execution.handler"),
			"%s verb %q names handler %q, which is %s; make the verb %s or pick a %s handler",
			e.Kind, d.FullName(), spec.Name, spec.Kind, spec.Kind, e.Kind)
	}
	if e.Level == rbtype.LevelFull && !spec.DryRun {
		diags.Errorf(lang.VNoDryRun, d.FieldRange("execution.level"),
			"verb %q is at execution level full, but handler %q cannot dry-run, so nothing could be verified before the commit; use level guarded, or a handler with a dry run", d.FullName(), spec.Name)
	}
	if spec.CheckParams != nil && (e.Params != nil || !d.HasField("execution.params")) {
		c.checkParams(d, spec, diags)
	}
	checkFixedQuery(d, diags)
}

// checkParams reports each problem the handler finds with the verb's
// params at the param it is about: an unknown param at its key, a bad
// value at the value, a missing one at params (or, without params, at
// the handler that needs them).
func (c *Catalogue) checkParams(d *verbs.Definition, spec HandlerSpec, diags *lang.Diagnostics) {
	err := spec.CheckParams(d.Execution.Params)
	if err == nil {
		return
	}
	whole := d.FieldRange("execution.handler")
	if d.HasField("execution.params") {
		whole = d.FieldRange("execution.params")
	}
	var probs handler.ParamProblems
	if !errors.As(err, &probs) {
		diags.Errorf(lang.VBadValue, whole, "bad params for handler %q: %v", spec.Name, err)
		return
	}
	for _, p := range probs {
		at, path := whole, "execution.params."+p.Param
		switch {
		case p.Param == "" || !d.HasField(path):
		case p.Key:
			at = d.KeyRange(path)
		default:
			at = d.FieldRange(path)
		}
		diags.Errorf(lang.VBadValue, at, "bad params for handler %q: %s", spec.Name, p.Message)
	}
}

// checkFixedQuery refuses an http.call or http.start verb that sends its
// arguments in the query (GET, DELETE) and names, among its arguments, a
// query parameter its URL fixes: the argument would replace what the
// verb's author fixed (a scope, an account). At run time such an argument
// fails the step; here it is V004.
func checkFixedQuery(d *verbs.Definition, diags *lang.Diagnostics) {
	e := d.Execution
	if e.Handler != "http.call" && e.Handler != "http.start" || d.InputSchema == nil {
		return
	}
	if method, _ := e.Params["method"].(string); method != "GET" && method != "DELETE" {
		return
	}
	raw, _ := e.Params["url"].(string)
	u, err := url.Parse(raw)
	if err != nil {
		return // the params' own check says so
	}
	fixed := u.Query()
	for _, name := range d.InputSchema.Properties() {
		if fixed.Has(name) {
			diags.Errorf(lang.VBadValue, d.FieldRange("execution.params.url"),
				"argument %q would replace the query parameter %q that the URL fixes; rename the argument, or take the parameter out of the URL", name, name)
		}
	}
}

// checkCompensation checks a verb's compensation and its escalation: each
// names a sync verb of the catalogue, with args that fit it.
func (c *Catalogue) checkCompensation(d *verbs.Definition, diags *lang.Diagnostics) {
	c.checkVerbCall(d, d.Execution.Compensation, "compensation", "execution.compensation", diags)
	c.checkVerbCall(d, d.Execution.Timeouts.Escalation, "escalation", "execution.timeouts.escalation", diags)
}

// whySync says why a compensation or an escalation cannot wait.
var whySync = map[string]string{
	"compensation": "a failing runbook can be undone without waiting",
	"escalation":   "the page goes out as soon as the wait times out",
}

// checkVerbCall checks that a compensation's or escalation's verb exists,
// is sync, and that its args fit: every name is an argument of that verb,
// every required argument is given, literals match their schema, and
// @args/@result paths start with a field this verb has.
func (c *Catalogue) checkVerbCall(d *verbs.Definition, comp *verbs.Compensation, what, path string, diags *lang.Diagnostics) {
	if comp == nil {
		return
	}
	at := d.FieldRange(path + ".verb")
	target, ok := c.verbs[comp.Verb]
	if broken, invalid := c.invalid[comp.Verb]; !ok && invalid {
		diags.Errorf(lang.VBadCompensation, at, "%s verb %q is defined but invalid: its definition has errors", what, comp.Verb).
			WithRelated(broken.FieldRange("name"), "%q is defined here", comp.Verb)
		return
	}
	if !ok {
		diags.Errorf(lang.VBadCompensation, at, "%s verb %q is not defined", what, comp.Verb).
			WithSuggestions(c.Suggest(comp.Verb)...)
		return
	}
	if target.Execution.Kind != rbtype.KindSync {
		diags.Errorf(lang.VBadCompensation, at, "%s verb %q is durable; %ss must be sync so %s", what, comp.Verb, what, whySync[what])
	}
	schema := target.InputSchema
	for _, name := range slices.Sorted(maps.Keys(comp.Args)) {
		argAt := d.FieldRange(path + ".args." + name)
		value := comp.Args[name]
		if schema != nil && schema.Closed() && !slices.Contains(schema.Properties(), name) {
			diags.Errorf(lang.VBadCompensation, argAt, "%s verb %q has no argument %q (valid: %s)",
				what, comp.Verb, name, strings.Join(schema.Properties(), ", ")).
				WithSuggestions(lang.Suggest(name, schema.Properties())...)
			continue
		}
		if s, isStr := value.(string); isStr && strings.HasPrefix(s, "@") {
			if err := checkCompensationRef(d, s); err != nil {
				diags.Errorf(lang.VBadCompensation, argAt, "%s arg %q: %v", what, name, err)
			}
			continue
		}
		if schema != nil {
			if err := schema.ValidateProperty(name, value); err != nil {
				diags.Errorf(lang.VBadCompensation, argAt, "%s arg %q does not fit %q: %v", what, name, comp.Verb, err)
			}
		}
	}
	if schema != nil {
		for _, req := range schema.Required() {
			if _, given := comp.Args[req]; !given {
				diags.Errorf(lang.VBadCompensation, at, "%s verb %q needs argument %q", what, comp.Verb, req)
			}
		}
	}
}

// checkCompensationRef checks the first field of "@args.x..." against this
// verb's input schema and of "@result.x..." against its output schema,
// where those schemas list their properties.
func checkCompensationRef(d *verbs.Definition, ref string) error {
	source, rest, _ := strings.Cut(ref[1:], ".")
	field := rest
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		field = rest[:i]
	}
	schema := d.InputSchema
	if source == "result" {
		schema = d.OutputSchema
	}
	if field == "" || schema == nil || !schema.Closed() && len(schema.Properties()) == 0 {
		return nil
	}
	if !slices.Contains(schema.Properties(), field) {
		which := "input_schema"
		if source == "result" {
			which = "output_schema"
		}
		return fmt.Errorf("%q names field %q, which %q's %s does not list", ref, field, d.FullName(), which)
	}
	return nil
}

// Within is the catalogue as a caller limited to the verbs allow accepts
// sees it: the others, valid or not, are not in it, so that a runbook
// naming one is told the verb is unknown, and suggestions never name one
// (docs/daemon.md, "Policy, scope and budgets": a scoped token cannot tell
// a verb outside its scope from a missing one, nor read its schema).
func (c *Catalogue) Within(allow func(*verbs.Definition) bool) *Catalogue {
	out := &Catalogue{verbs: make(map[string]*verbs.Definition, len(c.verbs)), handlers: c.handlers, daemonSchema: c.daemonSchema,
		invalid: map[string]*verbs.Definition{}}
	for _, n := range c.names {
		if d := c.verbs[n]; allow(d) {
			out.verbs[n] = d
			out.names = append(out.names, n)
		}
	}
	for n, d := range c.invalid {
		if allow(d) {
			out.invalid[n] = d
		}
	}
	return out
}

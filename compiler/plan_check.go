package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/verbs"
)

// maxPlanDiagnostics bounds what one check reports. A plan of 100k edited
// steps would otherwise answer with 100k diagnostics; steps with the same
// problem are already folded into one, and the rest are counted.
const maxPlanDiagnostics = 20

// anotherCatalogue is the note of every diagnostic about a difference
// from the catalogue: what happened, and what to do.
const anotherCatalogue = "the plan was compiled against another catalogue; compile it again with this daemon's verbs"

// ReadPlan reads a plan that comes from outside, such as a submission,
// and checks it with CheckPlan. filename names the plan in diagnostics,
// which point into raw. The plan is nil when there are errors.
func ReadPlan(filename string, raw []byte, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	spans := &planSpans{name: filename, raw: raw}
	p, err := DecodePlan(raw)
	if err != nil {
		var diags lang.Diagnostics
		// A plan of another version may fail to decode on a field this
		// build does not know; its version is the better answer.
		var head struct {
			SchemaVersion *int `json:"schema_version"`
		}
		if json.Unmarshal(raw, &head) == nil && head.SchemaVersion != nil && !supportedVersion(*head.SchemaVersion) {
			diags.Errorf(lang.EPlanUnreadable, spans.member("schema_version")(),
				"plan schema_version %d is not supported (this daemon reads %s)", *head.SchemaVersion, readableVersions)
			return nil, diags
		}
		diags.Errorf(lang.EPlanUnreadable, spans.decodeError(err), "not a readable plan: %s",
			strings.TrimPrefix(err.Error(), "error reading plan: "))
		return nil, diags
	}
	c := &planCheck{p: p, cat: cat, spans: spans}
	c.run()
	if c.diags.HasErrors() {
		return nil, c.diags.Sorted()
	}
	// The encoding the hash was checked with is the one to store.
	c.enc.hash = p.PlanHash
	p.sealed = c.enc
	return p, c.diags.Sorted()
}

// CheckPlan checks a plan against the catalogue of the daemon that is to
// run it (docs/design/semantics.md section 9). A plan is data anyone can write, and
// its execution blocks decide which handler runs with which static params,
// side effects and gate, so nothing in it is taken on trust:
//   - its schema_version is one this build reads;
//   - its plan_hash matches its content, every step's own block included;
//   - every verb it names is in the catalogue (E010), every step's
//     execution block and verb_hash, and every verb schema and block of its
//     verbs table, are identical to the catalogue's (E072);
//   - each step keeps the gate its verb declares, and its keys and edges
//     are well formed (E070);
//   - its conditions, hooks and markers are what the runtime can run
//     (checkFlow: E070, E041, E052), and a version 1 plan uses none.
//
// A step's arguments are not checked here: the runtime validates them
// against the verb's input_schema, which this check holds to the
// catalogue's. Diagnostics point into the plan as JSON renders it, named
// plan.json.
func CheckPlan(p *Plan, cat *registry.Catalogue) lang.Diagnostics {
	c := &planCheck{p: p, cat: cat, spans: &planSpans{name: "plan.json", render: p.JSON}}
	c.run()
	return c.diags.Sorted()
}

// planCheck is one run of CheckPlan.
type planCheck struct {
	p      *Plan
	cat    *registry.Catalogue
	spans  *planSpans
	enc    *encodedSteps
	diags  lang.Diagnostics
	hidden int
	// folded holds, by problem, the diagnostic a problem of several steps
	// was reported with, counting the steps beyond the first.
	folded map[string]*foldedDiagnostic
	counts []*foldedDiagnostic
	// catalogue caches the catalogue's encodings by verb.
	catalogue map[string]*catalogueVerb
}

type foldedDiagnostic struct {
	d    *lang.Diagnostic
	more int
}

// catalogueVerb is a catalogue definition in the plan's canonical JSON.
type catalogueVerb struct {
	def               *verbs.Definition
	exec, input, outp []byte
}

func (c *planCheck) run() {
	c.folded = map[string]*foldedDiagnostic{}
	c.catalogue = map[string]*catalogueVerb{}
	p := c.p
	if !supportedVersion(p.SchemaVersion) {
		c.report(lang.EPlanUnreadable, c.spans.member("schema_version"), "", 0,
			"plan schema_version %d is not supported (this daemon reads %s)", p.SchemaVersion, readableVersions)
		return
	}
	for i, s := range p.Steps {
		if s == nil { // a null in the steps: nothing below could look at it
			c.report(lang.EPlanUnreadable, c.spans.step(i), "", 0, "step %d is null, not a step", i+1)
			return
		}
	}
	c.enc = p.encodeSteps()
	if want := p.hash(c.enc); p.PlanHash != want {
		c.report(lang.EPlanHash, c.spans.member("plan_hash"), "", 0,
			"plan_hash %q does not match the plan's content (%s): the plan was edited after it was compiled", p.PlanHash, want)
	}
	c.checkShape()
	c.checkFlow()
	c.checkLoops()
	c.checkBlocks()
	c.checkSteps()
	c.checkVerbs()
	c.checkEffects()
	for _, f := range c.counts {
		if f.more > 0 && f.d != nil {
			f.d.WithNote("%d more steps have the same problem", f.more)
		}
	}
	if c.hidden > 0 {
		// At the end of the steps, so that it reads last.
		c.diags.Errorf(lang.EPlanCatalogue, c.spans.stepsEnd(), "%d more problems are not shown", c.hidden)
	}
}

// report adds a diagnostic about steps steps (0 when it is not about
// steps). A problem with a fold key already reported is counted on that
// diagnostic instead of repeated, so 100k edited steps make one line.
func (c *planCheck) report(code lang.Code, at func() lang.Range, fold string, steps int, format string, args ...any) *lang.Diagnostic {
	if f, ok := c.folded[fold]; ok && fold != "" {
		f.more += steps
		return nil
	}
	if len(c.diags) >= maxPlanDiagnostics {
		c.hidden++
		if fold != "" {
			c.folded[fold] = &foldedDiagnostic{} // counted once, as one problem
		}
		return nil
	}
	d := c.diags.Errorf(code, at(), format, args...)
	f := &foldedDiagnostic{d: d, more: max(steps-1, 0)}
	if steps > 0 {
		c.counts = append(c.counts, f)
	}
	if fold != "" {
		c.folded[fold] = f
	}
	return d
}

// reportDiffers reports a difference from this daemon's catalogue, with
// the note that says what happened and what to do.
func (c *planCheck) reportDiffers(code lang.Code, at func() lang.Range, fold string, steps int, format string, args ...any) {
	if d := c.report(code, at, fold, steps, format, args...); d != nil {
		d.WithNote(anotherCatalogue)
	}
}

// lookup finds a verb in the catalogue, with its encodings.
func (c *planCheck) lookup(name string) (*catalogueVerb, bool) {
	if v, ok := c.catalogue[name]; ok {
		return v, v != nil
	}
	def, ok := c.cat.Lookup(name)
	if !ok {
		c.catalogue[name] = nil
		return nil, false
	}
	v := &catalogueVerb{def: def, exec: mustJSON(def.Execution), input: mustJSON(def.InputSchema), outp: mustJSON(def.OutputSchema)}
	c.catalogue[name] = v
	return v, true
}

// unknownVerb reports a verb the catalogue lacks, once per name.
func (c *planCheck) unknownVerb(name string, at func() lang.Range, steps int, what string) {
	d := c.report(lang.EUnknownVerb, at, "unknown\x00"+name, steps,
		"%s %s, which this daemon's catalogue does not define", what, strconv.Quote(name))
	if d != nil {
		d.WithSuggestions(c.cat.Suggest(name)...).WithNote(anotherCatalogue)
	}
}

// checkShape checks what the runtime relies on the compiler for: step keys
// are unique and edges join steps the plan has.
func (c *planCheck) checkShape() {
	keys := make(map[string]bool, len(c.p.Steps))
	for i, s := range c.p.Steps {
		if keys[s.Key] {
			c.report(lang.EPlanUnreadable, c.spans.step(i), "", 0, "step key %q is used twice", s.Key)
		}
		keys[s.Key] = true
	}
	for i, e := range c.p.Edges {
		if !keys[e.From] || !keys[e.To] {
			c.report(lang.EPlanUnreadable, c.spans.edge(i), "", 0, "edge %q → %q names a step the plan does not have", e.From, e.To)
		}
		if e.Kind != EdgeData && e.Kind != EdgeSequence && e.Kind != EdgeSettle {
			c.report(lang.EPlanUnreadable, c.spans.edge(i), "", 0, "edge %q → %q has kind %q (expected %s, %s or %s)", e.From, e.To, e.Kind, EdgeData, EdgeSequence, EdgeSettle)
		}
	}
}

// checkBlocks compares each distinct execution block the steps carry with
// the catalogue's block for the verb the steps name.
func (c *planCheck) checkBlocks() {
	for _, b := range c.enc.blocks {
		v, ok := c.lookup(b.verb)
		if !ok {
			c.unknownVerb(b.verb, c.spans.step(b.first), b.count, fmt.Sprintf("step %q calls", c.p.Steps[b.first].Key))
			continue
		}
		if !bytes.Equal(b.json, v.exec) {
			c.reportDiffers(lang.EPlanCatalogue, c.spans.step(b.first), "", b.count,
				"step %q calls %s with an execution block that differs from this daemon's catalogue in %s",
				c.p.Steps[b.first].Key, b.verb, strings.Join(differences(b.json, v.exec), ", "))
		}
	}
}

// checkSteps checks what each step carries besides its block: the verb
// hash, the gate and the failure mode.
func (c *planCheck) checkSteps() {
	for i, s := range c.p.Steps {
		v, ok := c.lookup(s.Verb)
		if !ok {
			continue // reported with the step's block
		}
		if s.VerbHash != v.def.Hash {
			c.reportDiffers(lang.EPlanCatalogue, c.spans.step(i), "hash\x00"+s.Verb+"\x00"+s.VerbHash, 1,
				"step %q calls %s with verb_hash %q, but this daemon's definition of %s hashes to %q",
				s.Key, s.Verb, s.VerbHash, s.Verb, v.def.Hash)
		}
		switch {
		case !slices.Contains(rbtype.Gates, s.Gate):
			c.report(lang.EBadOption, c.spans.step(i), "gate\x00"+string(s.Gate), 1,
				"step %q has gate %q (expected %s)", s.Key, s.Gate, joinGates())
		case s.Gate != v.def.Gate() && s.Gate != rbtype.GateHumanConfirm:
			// A call may add a gate (docs/design/language.md), never remove its verb's,
			// nor the one a high-risk verb always has (docs/design/semantics.md
			// section 7).
			c.reportDiffers(lang.EPlanCatalogue, c.spans.step(i), "ungated\x00"+s.Verb, 1,
				"step %q has gate %q, but %s declares gate %q, which no step can remove",
				s.Key, s.Gate, s.Verb, v.def.Gate())
		}
		// Any mode may be chosen by a call (:on-failure); only a known one
		// may be run.
		if !slices.Contains(rbtype.OnFailures, s.OnFailure) {
			c.report(lang.EBadOnFailure, c.spans.step(i), "on_failure\x00"+string(s.OnFailure), 1,
				"step %q has on_failure %q (expected abort, isolate or continue)", s.Key, s.OnFailure)
		}
	}
}

// checkVerbs checks the plan's verbs table: the runtime validates
// arguments and results with its schemas and runs compensations with its
// blocks, so each entry must be the catalogue's, and every verb a step
// calls or compensates with must have one.
func (c *planCheck) checkVerbs() {
	p := c.p
	for _, name := range slices.Sorted(maps.Keys(p.Verbs)) {
		info, at := p.Verbs[name], c.spans.verb(name)
		v, ok := c.lookup(name)
		if !ok {
			if c.folded["unknown\x00"+name] == nil { // else reported with a step that calls it
				c.unknownVerb(name, at, 0, "the plan's verbs table holds")
			}
			continue
		}
		if info == nil {
			c.reportDiffers(lang.EPlanCatalogue, at, "", 0, "the plan's verbs table holds nothing for %s", name)
			continue
		}
		var differ []string
		if info.Hash != v.def.Hash {
			differ = append(differ, "hash")
		}
		if info.Risk != v.def.Risk {
			differ = append(differ, "risk")
		}
		if !bytes.Equal(mustJSON(info.Outcome), mustJSON(v.def.Outcome)) {
			differ = append(differ, "outcome")
		}
		if !bytes.Equal(mustJSON(info.Cost), mustJSON(v.def.Cost)) {
			differ = append(differ, "cost") // a plan may not shed its reservation
		}
		if !bytes.Equal(mustJSON(info.InputSchema), v.input) {
			differ = append(differ, "input_schema")
		}
		if !bytes.Equal(mustJSON(info.OutputSchema), v.outp) {
			differ = append(differ, "output_schema")
		}
		if info.Execution != nil {
			if text := mustJSON(info.Execution); !bytes.Equal(text, v.exec) {
				for _, f := range differences(text, v.exec) {
					differ = append(differ, "execution."+f)
				}
			}
		}
		if len(differ) > 0 {
			c.reportDiffers(lang.EPlanCatalogue, at, "", 0,
				"the plan's verbs table holds a definition of %s that differs from this daemon's catalogue in %s",
				name, strings.Join(differ, ", "))
		}
	}
	for _, b := range c.enc.blocks {
		if _, ok := p.Verbs[b.verb]; !ok {
			c.reportDiffers(lang.EPlanCatalogue, c.spans.step(b.first), "lacks\x00"+b.verb, 0,
				"the plan's verbs table lacks %s, which step %q calls: the runtime checks its arguments and result with the schemas kept there",
				b.verb, p.Steps[b.first].Key)
		}
		if comp := b.exec.Compensation; comp != nil {
			if _, ok := p.Verbs[comp.Verb]; !ok {
				c.reportDiffers(lang.EPlanCatalogue, c.spans.step(b.first), "lacks\x00"+comp.Verb, 0,
					"the plan's verbs table lacks %s, which undoes step %q: without it the step could not be compensated",
					comp.Verb, p.Steps[b.first].Key)
			}
		}
		if esc := b.exec.Timeouts.Escalation; esc != nil {
			if _, ok := p.Verbs[esc.Verb]; !ok {
				c.reportDiffers(lang.EPlanCatalogue, c.spans.step(b.first), "lacks\x00"+esc.Verb, 0,
					"the plan's verbs table lacks %s, which step %q escalates to: without it nobody would be paged",
					esc.Verb, p.Steps[b.first].Key)
			}
		}
	}
}

// checkEffects holds a plan's effects to what its steps, edges and verbs
// table say (Effects). They are not hashed, being derived; but a reviewer
// decides on them, so a list that hides an effect or a missing gate must
// not pass. A plan compiled before effects existed has none, and is read
// as it is. A plan already refused is not checked: its effects follow from
// the edit reported, and would only repeat it.
func (c *planCheck) checkEffects() {
	if c.p.Effects == nil || c.diags.HasErrors() || c.hidden > 0 {
		return
	}
	want := Effects(c.p)
	if slices.Equal(want, c.p.Effects) {
		return
	}
	what := "they differ"
	for i := range max(len(want), len(c.p.Effects)) {
		switch {
		case i >= len(c.p.Effects):
			what = fmt.Sprintf("step %q is missing", want[i].Step)
		case i >= len(want):
			what = fmt.Sprintf("step %q is not an effect", c.p.Effects[i].Step)
		case want[i] != c.p.Effects[i]:
			what = fmt.Sprintf("the entry for step %q differs", c.p.Effects[i].Step)
		default:
			continue
		}
		break
	}
	c.report(lang.EPlanUnreadable, c.spans.member("effects"), "", 0,
		"the plan's effects do not match its steps (%s): the plan was edited after it was compiled", what)
}

func joinGates() string {
	names := make([]string, len(rbtype.Gates))
	for i, g := range rbtype.Gates {
		names[i] = string(g)
	}
	return strings.Join(names, " or ")
}

// differences names the fields in which two canonical JSON objects differ,
// one level into nested objects ("params.url"), sorted. Only names: the
// catalogue's values stay on the daemon.
func differences(a, b []byte) []string {
	var out []string
	var walk func(prefix string, a, b json.RawMessage, depth int)
	walk = func(prefix string, a, b json.RawMessage, depth int) {
		var ma, mb map[string]json.RawMessage
		if depth > 1 || json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil || ma == nil || mb == nil {
			out = append(out, strings.TrimSuffix(prefix, "."))
			return
		}
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !bytes.Equal(ma[k], mb[k]) {
				walk(prefix+k+".", ma[k], mb[k], depth+1)
			}
		}
	}
	walk("", a, b, 0)
	if len(out) == 1 && out[0] == "" {
		return []string{"its whole value"}
	}
	return out
}

// planSpans finds where the parts of a plan's JSON are, for diagnostics.
// It scans the text only once a diagnostic needs a place, so a plan that
// passes costs nothing more.
type planSpans struct {
	name string
	raw  []byte
	// render makes raw when a diagnostic first needs it, for a plan that
	// was not read from text.
	render func() []byte
	built  bool
	top    map[string]span
	steps  []span
	edges  []span
	verbs  map[string]span
}

// span is a value's bytes in the text: [start, end).
type span struct{ start, end int }

func (s *planSpans) build() {
	if s.built {
		return
	}
	s.built = true
	if s.raw == nil && s.render != nil {
		s.raw = s.render()
	}
	s.top, s.verbs = map[string]span{}, map[string]span{}
	b := s.raw
	forMembers(b, skipSpace(b, 0), func(key string, v span) {
		s.top[key] = v
		switch key {
		case "steps":
			s.steps = elements(b, v.start)
		case "edges":
			s.edges = elements(b, v.start)
		case "verbs":
			s.verbs = map[string]span{}
			forMembers(b, v.start, func(name string, v span) { s.verbs[name] = v })
		}
	})
}

// member is the range of a top-level field's value, or of the plan's
// start when it has none.
func (s *planSpans) member(key string) func() lang.Range {
	return func() lang.Range {
		s.build()
		return s.rangeOf(s.top[key])
	}
}

// stepsEnd is the range of the bracket that closes the steps.
func (s *planSpans) stepsEnd() lang.Range {
	s.build()
	end := s.top["steps"].end
	return s.rangeOf(span{max(end-1, 0), end})
}

func (s *planSpans) step(i int) func() lang.Range {
	return func() lang.Range {
		s.build()
		if i < len(s.steps) {
			return s.rangeOf(s.steps[i])
		}
		return s.rangeOf(s.top["steps"])
	}
}

func (s *planSpans) edge(i int) func() lang.Range {
	return func() lang.Range {
		s.build()
		if i < len(s.edges) {
			return s.rangeOf(s.edges[i])
		}
		return s.rangeOf(s.top["edges"])
	}
}

func (s *planSpans) verb(name string) func() lang.Range {
	return func() lang.Range {
		s.build()
		if v, ok := s.verbs[name]; ok {
			return s.rangeOf(v)
		}
		return s.rangeOf(s.top["verbs"])
	}
}

// decodeError points at where decoding failed, when the error says.
func (s *planSpans) decodeError(err error) lang.Range {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	off := 0
	switch {
	case errors.As(err, &syntax):
		off = int(syntax.Offset) - 1 // the offset is after the byte that was wrong
	case errors.As(err, &typ):
		off = int(typ.Offset)
	}
	off = min(max(off, 0), len(s.raw))
	return s.rangeOf(span{off, off})
}

func (s *planSpans) rangeOf(v span) lang.Range {
	return lang.Range{Filename: s.name, Start: s.pos(v.start), End: s.pos(v.end)}
}

// pos turns a byte offset into a line and a column of code points.
func (s *planSpans) pos(off int) lang.Pos {
	off = min(max(off, 0), len(s.raw))
	before := s.raw[:off]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return lang.Pos{
		Line:   bytes.Count(before, []byte{'\n'}) + 1,
		Column: len([]rune(string(before[lineStart:]))) + 1,
		Byte:   off,
	}
}

// The scanner below walks JSON that encoding/json has already accepted,
// so it only has to find where values start and end.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the offset after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !strings.ContainsRune(",:]} \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// forMembers calls fn with each member of the object starting at b[i].
func forMembers(b []byte, i int, fn func(key string, value span)) {
	if i >= len(b) || b[i] != '{' {
		return
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		end := skipString(b, i)
		var key string
		_ = json.Unmarshal(b[i:end], &key)
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		start := skipSpace(b, i+1)
		stop := skipValue(b, start)
		fn(key, span{start, stop})
		i = skipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// elements lists the values of the array starting at b[i].
func elements(b []byte, i int) []span {
	if i >= len(b) || b[i] != '[' {
		return nil
	}
	var out []span
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		stop := skipValue(b, i)
		if stop == i {
			return out
		}
		out = append(out, span{i, stop})
		i = skipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return out
}

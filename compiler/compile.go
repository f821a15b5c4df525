package compiler

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/verbs"
)

// Compile checks parsed sources against the catalogue and freezes them into
// a plan. The files are one runbook; their calls are numbered in order
// across them. The plan is nil when there are errors; warnings come with a
// plan.
func Compile(files []*lang.File, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return Options{}.Compile(files, cat)
}

// Extend compiles more calls for a running runbook against its frozen
// plan: the new calls may reference the existing steps' bindings, and are
// appended after them. Existing steps are never changed: an extension can
// only add steps and edges into them. The result is the whole new plan.
func Extend(base *Plan, files []*lang.File, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return Options{}.Extend(base, files, cat)
}

// DefaultMaxFanout is how many elements a for-each's list may hold when
// Options say nothing (docs/design/language.md v1.3: --max-fanout's default).
const DefaultMaxFanout = 1000

// MaxSteps bounds the steps of a plan once the compiler has expanded the
// lists written out: nested for-each forms multiply, and a runbook of a
// few lines must not make a plan that no daemon can hold.
const MaxSteps = 100_000

// Options tune a compilation. The zero value is the default.
type Options struct {
	// MaxFanout bounds the elements of a for-each's list written out
	// (E054 beyond it); 0 means DefaultMaxFanout. rbc's --max-fanout sets
	// it; the runtime holds lists known only at run time to its own.
	MaxFanout int
	// Policy, when set, is the policy the runbook will be judged by
	// (rbc lint --policy): a verb's tag that no rule of it mentions is
	// W003.
	Policy *policy.Policy
	// MaxPlanBytes bounds the estimated JSON of the plan that the lists
	// written out expand to, refused (E054) before it is made; 0 means
	// DefaultMaxPlanBytes. The daemon passes its --max-plan-bytes, so
	// that a source is refused while it is expanded, not once its plan is
	// in memory (its --max-steps is checked on the plan made, and answers
	// LIMIT_EXCEEDED).
	MaxPlanBytes int
	// OutsideScope, when set, says which verb names lie outside the
	// caller's token scope (verbs= globs). A call of one is not looked
	// up, existing or not, and is added to *Outside (when set) with its
	// step's key; the compilation fails. The daemon answers it 403 naming
	// the step and the verb, the same for a verb that exists and one that
	// does not (docs/daemon.md, "Policy, scope and budgets").
	OutsideScope func(verb string) bool
	Outside      *[]OutsideCall
	// Lint asks for the warnings about the verbs a runbook calls that
	// only rbc lint gives: an external_call verb without policy_tags
	// (V032), which without a policy that auto-executes one of its tags
	// always waits at a gate.
	Lint bool
}

// OutsideCall is a call of a verb outside the caller's scope.
type OutsideCall struct{ Step, Verb string }

func (o Options) maxPlanBytes() int {
	if o.MaxPlanBytes > 0 {
		return o.MaxPlanBytes
	}
	return DefaultMaxPlanBytes
}

func (o Options) maxFanout() int {
	if o.MaxFanout > 0 {
		return o.MaxFanout
	}
	return DefaultMaxFanout
}

// Compile is Compile with these options.
func (o Options) Compile(files []*lang.File, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return compile(nil, files, cat, o)
}

// Extend is Extend with these options.
func (o Options) Extend(base *Plan, files []*lang.File, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return compile(base, files, cat, o)
}

// step is a call under analysis.
type step struct {
	call    *lang.Call
	file    *lang.File // the file the call is in, for its comments (see removal)
	key     string
	binding *lang.Ref // the :as reference, or nil
	def     *verbs.Definition
	info    *VerbInfo // for frozen steps of a base plan
	args    []*lang.Arg
	after   []*lang.Ref
	gate    rbtype.Gate
	// onFailure is the call's :on-failure, empty when it has none.
	onFailure rbtype.OnFailure
	// expect is the call's :expect, nil when it has none.
	expect map[string]any
	// whenArg is the call's :when, nil when it has none; when is its
	// frozen condition, once checked.
	whenArg *lang.Arg
	when    *Cond
	// The options of v1.4 (options_v14.go): gateWhenArg and gateWhen
	// as whenArg and when; the others as frozen.
	gateWhenArg     *lang.Arg
	gateWhen        *Cond
	approvers       string
	timeoutResult   map[string]any
	remindAfter     string
	parallel        int
	onFailureByCode map[string]rbtype.OnFailure
	// hook marks a call of (on-failure ...), or a frozen step of kind
	// hook: a failure hook.
	hook bool
	// loop is the for-each whose body holds the call, nil for none: the
	// step is a template of that loop.
	loop *loop
	// argJSON holds each of args as plan JSON, and literalErrs its schema
	// validation result when it is a literal (see prepareArgs).
	argJSON     []any
	literalErrs []error
	index       int // position in the runbook: base steps first, then calls
	id          int // position in analysis.steps: the step's vertex in the DAG
	// rank orders steps that are ready together (see order): base steps
	// first, then calls in the order they end, so that a nested call comes
	// where its hand-flattened twin would be written, before its parent.
	// For calls without nested calls it is the order of index.
	rank   int
	frozen *Step
}

// outputSchema is the schema references into this step are checked with.
func (s *step) outputSchema() *verbs.Schema {
	if s.def != nil {
		return s.def.OutputSchema
	}
	if s.info != nil {
		return s.info.OutputSchema
	}
	return nil
}

type analysis struct {
	cat      *registry.Catalogue
	base     *Plan
	steps    []*step
	byKey    map[string]*step
	bindings map[string]*step
	used     map[string]bool // bindings referenced by refs or :after
	inputs   *inputTypes
	edges    *edgeSet
	diags    lang.Diagnostics
	// unparsed merges the files' names from calls that did not parse:
	// references to bindings they define, and bindings they use, are not
	// reported, since the syntax error already was.
	unparsed lang.Names
	// nested maps the reference a nested call's value was lowered to onto
	// the nested call's step (see lowerNested).
	nested map[*lang.Ref]*step
	ranked int // ranks given so far
	// loops are the for-each forms, outer ones before those in their
	// bodies; items maps each one's :as name to it; curLoop is the one
	// whose body is being read.
	loops   []*loop
	items   map[string]*loop
	curLoop *loop
	opts    Options
	// firstHooks is the runbook's (on-failure ...), once seen.
	firstHooks *lang.OnFailure
	// settling holds the steps whose status the condition being checked
	// tests: every reference to them in it makes a settle edge, since the
	// condition is decided whatever they settled with
	// (docs/design/semantics.md section 15).
	settling map[*step]bool
	// mayBeMissing counts the (default ...) and exists around the
	// reference being checked: inside them a missing field is expected,
	// and W004 stays quiet.
	mayBeMissing int
	// elems are the elements of the filter, any and all forms around the
	// value being checked, innermost last.
	elems []elemBinding
	// loopList is the loop whose list, a (filter ...), is being checked:
	// its references are read where the loop stands (loopReads).
	loopList *loop
	// slab holds the steps newStep has made and not yet handed out;
	// calls is the files' top-level calls plus the base plan's steps, to
	// size it.
	slab  []step
	calls int
}

func compile(base *Plan, files []*lang.File, cat *registry.Catalogue, opts Options) (*Plan, lang.Diagnostics) {
	a := &analysis{
		opts:     opts,
		items:    map[string]*loop{},
		cat:      cat,
		base:     base,
		byKey:    make(map[string]*step, callCount(files)),
		bindings: make(map[string]*step, callCount(files)),
		used:     make(map[string]bool, callCount(files)),
		inputs:   newInputTypes(),
		edges:    newEdgeSet(2 * callCount(files)),
		unparsed: lang.Names{Bound: map[string]bool{}, Referenced: map[string]bool{}},
		nested:   map[*lang.Ref]*step{},
		calls:    callCount(files),
	}
	if base != nil {
		a.calls += len(base.Steps)
	}
	for _, f := range files {
		maps.Copy(a.unparsed.Bound, f.Unparsed.Bound)
		maps.Copy(a.unparsed.Referenced, f.Unparsed.Referenced)
	}
	a.addBase()
	firstNew := len(a.steps)
	// Unnamed steps are keyed <verb>#<n>, n counting calls across the
	// runbook's files, nested ones included, after any steps it already
	// has.
	offset := len(a.steps)
	for _, f := range files {
		last := 0
		for _, c := range f.Calls {
			a.addCall(f, c, offset)
			last = max(last, lastIndex(c))
		}
		for _, l := range f.ForEach {
			last = max(last, a.addLoop(f, l, nil, offset))
		}
		last = max(last, a.addHooks(f, offset))
		offset += last
	}
	newSteps := a.steps[firstNew:]
	a.checkLoops()
	a.prepareArgs(newSteps)
	for _, s := range newSteps {
		a.checkArgs(s)
		a.addSequenceEdges(s)
	}
	for _, s := range newSteps {
		a.checkWhen(s)
		a.checkGateWhen(s)
	}
	a.checkWrittenLists()
	a.warnUnused(newSteps)
	a.warnUnmentionedTags(newSteps)
	a.warnUntaggedExternal(newSteps)
	order := a.order()
	a.warnImpliedAfter(order)
	if a.diags.HasErrors() {
		return nil, a.diags.Sorted()
	}
	p, err := a.plan(files, order)
	if err != nil {
		a.tooLarge(err)
		return nil, a.diags.Sorted()
	}
	return p, a.diags.Sorted()
}

// addBase registers a base plan's steps: bindings to reference, frozen as
// they are.
func (a *analysis) addBase() {
	if a.base == nil {
		return
	}
	// The base's loops, so that a new call reads a template as the list
	// of its instances' results, and is told (E055) that an item is
	// bound only in a body it cannot join.
	baseLoops := map[string]*loop{}
	for _, fl := range a.base.Loops {
		l := &loop{key: fl.Key, parent: baseLoops[fl.Within]}
		baseLoops[fl.Key] = l
		if _, taken := a.items[fl.Item]; !taken {
			a.items[fl.Item] = l
			a.used[fl.Item] = true
		}
	}
	for i, fs := range a.base.Steps {
		a.ranked++
		s := &step{key: fs.Key, index: i + 1, rank: a.ranked, id: len(a.steps), frozen: fs, info: a.base.Verbs[fs.Verb], hook: fs.Kind == KindHook, loop: baseLoops[fs.Loop]}
		a.steps = append(a.steps, s)
		a.byKey[s.key] = s
		if !strings.Contains(s.key, "#") {
			a.bindings[s.key] = s
			a.used[s.key] = true // no warnings about what is already running
		}
	}
	for _, inp := range a.base.Inputs {
		a.inputs.frozen(inp)
	}
	for _, e := range a.base.Edges {
		from, to := a.byKey[e.From], a.byKey[e.To]
		if from != nil && to != nil {
			a.edges.add(edgeKey{from.id, to.id}, e.Kind, lang.Range{})
		}
	}
}

// addCall reads a call's verb and options and registers its step, then
// the steps of the calls nested in its arguments. offset is the number of
// calls before the call's file.
func (a *analysis) addCall(f *lang.File, c *lang.Call, offset int) *step {
	return a.addStep(f, c, offset, false)
}

// addStep is addCall for a call that is a failure hook or not. A hook's
// arguments hold no nested calls (hookArgs).
func (a *analysis) addStep(f *lang.File, c *lang.Call, offset int, hook bool) *step {
	index := offset + c.Index
	s := a.newStep()
	*s = step{call: c, file: f, index: index, id: len(a.steps), hook: hook, loop: a.curLoop}
	outside := a.opts.OutsideScope != nil && a.opts.OutsideScope(c.Verb)
	if outside {
		// Not looked up: a verb outside the caller's scope is the same
		// whether it exists or not, and its arguments are not checked
		// against what it takes (scope.go).
		a.diags.Errorf(lang.EUnknownVerb, c.VerbRange, "verb %q is outside this caller's scope", c.Verb)
	} else if def, ok := a.cat.Lookup(c.Verb); ok {
		s.def = def
	} else if broken, invalid := a.cat.Invalid(c.Verb); invalid {
		a.diags.Errorf(lang.EUnknownVerb, c.VerbRange, "verb %q is defined but invalid: its definition has errors", c.Verb).
			WithRelated(broken.FieldRange("name"), "%q is defined here", c.Verb)
	} else {
		a.diags.Errorf(lang.EUnknownVerb, c.VerbRange, "unknown verb %q", c.Verb).
			WithReplacements(c.VerbRange, c.Verb, a.cat.Suggest(c.Verb), nil)
	}
	a.readOptions(s)
	if s.binding == nil {
		s.key = c.Verb + "#" + strconv.Itoa(index)
	} else {
		s.key = s.binding.Name
		if item, dup := a.items[s.key]; dup {
			d := a.diags.Errorf(lang.EDuplicateBinding, s.binding.NameRange, "binding @%s is defined twice", s.key)
			if item.item != nil {
				d.WithRelated(item.item.NameRange, "@%s is first defined here, as a for-each's element", s.key)
			}
		} else if prev, dup := a.bindings[s.key]; dup {
			d := a.diags.Errorf(lang.EDuplicateBinding, s.binding.NameRange, "binding @%s is defined twice", s.key)
			if prev.binding != nil {
				d.WithRelated(prev.binding.NameRange, "@%s is first defined here", s.key)
			} else {
				d.WithNote("it names a step the running runbook already has")
			}
		} else {
			a.bindings[s.key] = s
		}
	}
	if outside && a.opts.Outside != nil {
		*a.opts.Outside = append(*a.opts.Outside, OutsideCall{Step: s.key, Verb: c.Verb})
	}
	a.steps = append(a.steps, s)
	if _, taken := a.byKey[s.key]; !taken {
		a.byKey[s.key] = s
	}
	if hook {
		a.hookArgs(s)
	} else {
		a.lowerNested(s, offset)
	}
	a.ranked++
	s.rank = a.ranked
	return s
}

// newStep returns a zero step from a.slab, which it refills with room for
// the calls still to come (as many as the runbook's top-level calls, up to
// 1,024 at a time): one allocation for many steps rather than one a step.
func (a *analysis) newStep() *step {
	if len(a.slab) == 0 {
		a.slab = make([]step, min(max(a.calls-len(a.steps), 16), 1024))
	}
	s := &a.slab[0]
	a.slab = a.slab[1:]
	return s
}

// warnUnused reports bindings nothing refers to (W001). Such a binding is
// harmless but often a sign of a forgotten reference.
func (a *analysis) warnUnused(steps []*step) {
	for _, s := range steps {
		// A hook's :as only names it: nothing can refer to a hook.
		if s.binding != nil && !s.hook && !a.used[s.binding.Name] && !a.unparsed.Referenced[s.binding.Name] && a.bindings[s.binding.Name] == s {
			a.diags.Warnf(lang.WUnusedBinding, s.binding.NameRange, "binding @%s is never referenced", s.binding.Name)
		}
	}
	for _, l := range a.loops {
		if l.item != nil && a.items[l.key] == l && !a.used[l.key] && !a.unparsed.Referenced[l.key] {
			a.diags.Warnf(lang.WUnusedBinding, l.item.NameRange, "binding @%s is never referenced: the body does the same for every element", l.key)
		}
	}
}

// plan freezes the analysed steps, then expands the for-each forms whose
// lists are written out. It fails only when that makes too many steps.
func (a *analysis) plan(files []*lang.File, order []*step) (*Plan, error) {
	p := &Plan{Verbs: map[string]*VerbInfo{}}
	if a.base != nil {
		p.Sources = slices.Clone(a.base.Sources)
		for name, info := range a.base.Verbs {
			p.Verbs[name] = info
		}
	}
	for _, f := range files {
		p.Sources = append(p.Sources, f.Name)
	}
	if p.Sources == nil {
		p.Sources = []string{}
	}
	p.Inputs = a.inputs.list()
	p.Steps = make([]*Step, 0, len(order))
	// Hooks are not part of the DAG: they come last, in the order they
	// are written, the base plan's first.
	order = slices.Concat(
		slices.DeleteFunc(slices.Clone(order), func(s *step) bool { return s.hook }),
		slices.DeleteFunc(slices.Clone(order), func(s *step) bool { return !s.hook }))
	// The new steps and their positions are made in one allocation each,
	// not two a step: at 100k steps those were 200k objects
	// (BENCHMARKS.md, "Compile under 2 s").
	fresh := 0
	for _, s := range order {
		if s.frozen == nil {
			fresh++
		}
	}
	slab, pos := make([]Step, fresh), make([]SourcePos, fresh)
	for _, s := range order {
		if s.frozen != nil {
			p.Steps = append(p.Steps, s.frozen)
			continue
		}
		a.freeze(s, &slab[0], &pos[0])
		verb := slab[0].Verb // s.def.FullName(), made once
		p.Steps = append(p.Steps, &slab[0])
		slab, pos = slab[1:], pos[1:]
		if _, ok := p.Verbs[verb]; !ok {
			p.Verbs[verb] = &VerbInfo{Hash: s.def.Hash, InputSchema: s.def.InputSchema, OutputSchema: s.def.OutputSchema, Risk: s.def.Risk,
				Outcome: s.def.Outcome, Cost: s.def.Cost}
		}
	}
	// Compensation and escalation verbs no step calls are frozen with
	// their execution block, so a failing runbook can be undone, and an
	// escalating wait page someone, from the plan alone.
	for _, s := range order {
		if s.def == nil {
			continue
		}
		for _, call := range []*verbs.Compensation{s.def.Execution.Compensation, s.def.Execution.Timeouts.Escalation} {
			if call == nil {
				continue
			}
			if _, ok := p.Verbs[call.Verb]; ok {
				continue
			}
			if def, ok := a.cat.Lookup(call.Verb); ok {
				exec := def.Execution
				p.Verbs[call.Verb] = &VerbInfo{Hash: def.Hash, InputSchema: def.InputSchema, OutputSchema: def.OutputSchema, Execution: &exec, Risk: def.Risk,
					Outcome: def.Outcome, Cost: def.Cost}
			}
		}
	}
	p.Edges = a.edges.list(order)
	if a.base != nil {
		p.Loops = slices.Clone(a.base.Loops)
	}
	p.Loops = append(p.Loops, a.freezeLoops()...)
	if len(p.Loops) == 0 {
		p.Loops = nil
	}
	var err error
	if p, err = p.expandLiterals(MaxSteps, a.opts.maxPlanBytes()); err != nil {
		return nil, err
	}
	if len(p.Loops) == 0 {
		p.Loops = nil
	}
	p.SchemaVersion = p.versionUsed()
	p.Effects = Effects(p)
	p.seal()
	return p, nil
}

// freeze makes the plan's step of s in *out, its position in *pos.
func (a *analysis) freeze(s *step, out *Step, pos *SourcePos) {
	args := make(map[string]any, len(s.args))
	for i, arg := range s.args {
		args[arg.Name] = s.argJSON[i]
	}
	gate := s.def.Gate() // the block's, or human_confirm for a high-risk verb
	if s.gate != "" {
		gate = s.gate
	}
	if s.gateWhen != nil {
		gate = rbtype.GateHumanConfirm
	}
	// The call's approvers and reminder, else the verb's: the step says
	// what applies, so that the runtime reads one field.
	approvers, remindAfter := s.approvers, s.remindAfter
	if approvers == "" {
		approvers = s.def.Execution.Approvers
	}
	if r := s.def.Execution.Timeouts.RemindAfter; remindAfter == "" && r != nil {
		remindAfter = r.ISO
	}
	onFailure := s.def.Execution.OnFailure
	if s.onFailure != "" {
		onFailure = s.onFailure
	}
	var kind StepKind
	if s.hook {
		kind = KindHook
	}
	c := s.call
	*pos = SourcePos{File: c.Span.Filename, Line: c.Span.Start.Line, Column: c.Span.Start.Column}
	*out = Step{
		Key:       s.key,
		Verb:      s.def.FullName(),
		Pos:       pos,
		Args:      args,
		Gate:      gate,
		OnFailure: onFailure,
		Expect:    s.expect,
		Kind:      kind,
		When:      s.when,
		Loop:      s.loopKey(),
		// v1.4 (docs/design/language.md): a step gated by :gate-when
		// carries the gate, narrowed by its condition, so that a reader
		// that ignores gate_when gates it always.
		GateWhen:        s.gateWhen,
		Approvers:       approvers,
		TimeoutResult:   s.timeoutResult,
		RemindAfter:     remindAfter,
		Parallel:        s.parallel,
		OnFailureByCode: s.onFailureByCode,
		Execution:       s.def.Execution,
		VerbHash:        s.def.Hash,
	}
}

func callCount(files []*lang.File) int {
	n := 0
	for _, f := range files {
		n += len(f.Calls)
	}
	return n
}

// loopKey is the key of the step's loop in the plan, "" for none.
func (s *step) loopKey() string {
	if s.loop == nil {
		return ""
	}
	return s.loop.key
}

// tooLarge reports a runbook whose lists written out expand to more steps
// than a plan may hold (E054), at the list of the loop that tipped it.
func (a *analysis) tooLarge(err error) {
	at := lang.Range{}
	loop := ""
	var big *tooManySteps
	var heavy *tooManyBytes
	switch {
	case errors.As(err, &big):
		loop = big.loop
	case errors.As(err, &heavy):
		loop = heavy.loop
	}
	if loop != "" {
		for _, l := range a.loops {
			if l.key == strings.SplitN(loop, "[", 2)[0] && l.form.List != nil {
				at = l.form.List.Range()
				break
			}
		}
	}
	a.diags.Errorf(lang.EBadList, at, "%v", err)
}

// CompileSource parses and compiles one runbook source: what the daemon
// does with a submitted source.
func CompileSource(filename string, src []byte, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return Options{}.CompileSource(filename, src, cat)
}

// ExtendSource parses more source for a running runbook and compiles it
// against the runbook's frozen plan.
func ExtendSource(base *Plan, filename string, src []byte, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	return Options{}.ExtendSource(base, filename, src, cat)
}

// CompileSource is CompileSource with these options.
func (o Options) CompileSource(filename string, src []byte, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	f, diags := lang.Parse(filename, src)
	plan, more := o.Compile([]*lang.File{f}, cat)
	diags.Append(more)
	return plan, diags.Sorted()
}

// ExtendSource is ExtendSource with these options.
func (o Options) ExtendSource(base *Plan, filename string, src []byte, cat *registry.Catalogue) (*Plan, lang.Diagnostics) {
	f, diags := lang.Parse(filename, src)
	plan, more := o.Extend(base, []*lang.File{f}, cat)
	diags.Append(more)
	return plan, diags.Sorted()
}

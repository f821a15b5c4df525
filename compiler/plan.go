package compiler

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/verbs"
)

// SchemaVersion is the newest version of the plan format, the one this
// package writes for a runbook that uses conditions, (str ...) with parts
// known at run time, or failure hooks (docs/design/language.md v1.2). It reads every
// version from BaseSchemaVersion up to it.
//
// A plan that uses none of those is written as BaseSchemaVersion, byte for
// byte as before they existed, so its plan_hash (which covers the version)
// does not change; a plan that uses one is version 2, so that a daemon
// that does not know them refuses it rather than run a conditional step
// unconditionally.
//
// Version 3 holds what docs/design/language.md v1.4 adds: settle edges,
// the markers of its value forms ($status, $default, $count, $filter,
// $any, $all), @failures, and the call options gate_when, approvers,
// timeout_result, remind_after, parallel and on_failure_by_code. A plan
// that uses none of them is written as version 1 or 2, as before.
const SchemaVersion = 3

// Version2 is the version of a plan that uses what v1.2 and v1.3 add and
// nothing of version 3.
const Version2 = 2

// BaseSchemaVersion is the version of a plan that uses nothing of version
// 2: every plan compiled before v1.2.
const BaseSchemaVersion = 1

// StepKind says what kind of step a plan step is.
type StepKind string

// The kinds of step. An ordinary step has no kind (the field is left out,
// so plans from before kinds hash as they did).
const (
	// KindHook is a failure hook, a call of (on-failure ...)
	// (docs/design/language.md v1.2): it is not part of the DAG (no edge leads into or
	// out of it) and runs once, after compensation, when the runbook ends
	// failed, partial or cancelled. See Step.
	KindHook StepKind = "hook"
)

// Edge kinds.
const (
	EdgeData     = "data"
	EdgeSequence = "sequence"
)

// Plan is a compiled runbook, frozen.
type Plan struct {
	SchemaVersion int    `json:"schema_version"`
	PlanHash      string `json:"plan_hash"`
	// Sources names the files the plan was compiled from, in order; an
	// extended runbook lists its extensions after them.
	Sources []string `json:"sources"`
	Inputs  []Input  `json:"inputs"`
	Steps   []*Step  `json:"steps"`
	Edges   []Edge   `json:"edges"`
	// Loops are the for-each forms whose lists are known only at run
	// time (docs/design/language.md v1.3): templates the runtime expands. Left out
	// when there are none (every plan without for-each, and every one
	// whose lists were all written out, which the compiler expands).
	Loops []*Loop `json:"loops,omitempty"`
	// Effects lists the steps that act on the world, with the gate in
	// front of each (effects.go). Derived from the rest, it is left out of
	// the hash; plans compiled before it existed have none (nil).
	Effects []Effect `json:"effects,omitempty"`
	// Verbs holds, for each verb the steps call, its definition hash and
	// schemas. The runtime validates resolved arguments against them, and an
	// extension checks references into existing steps with them, without
	// the verb files.
	Verbs map[string]*VerbInfo `json:"verbs"`

	// sealed is the step encoding made when the hash was computed, reused
	// by JSON while the hash still matches.
	sealed *encodedSteps
	// loops indexes Loops by key (see loop).
	loops map[string]*Loop
}

// encodedSteps is each step's compact JSON with its position, and where
// the position starts, so the hashed form (without it) is a prefix. It
// also keeps the distinct execution blocks the steps carry, each encoded
// once, so that a plan from outside can be compared with a catalogue
// block by block rather than step by step.
type encodedSteps struct {
	hash  string
	steps [][]byte
	cut   []int
	// blocks are the distinct (verb, execution block) pairs of the steps,
	// in order of first use; block[i] indexes step i's.
	blocks []encodedBlock
	block  []int
}

// encodedBlock is one execution block as a step carries it, with the verb
// the step names and its canonical JSON.
type encodedBlock struct {
	verb  string
	first int // the first step that carries it
	count int // how many steps carry it
	exec  *verbs.Execution
	json  []byte
}

// writeWithoutPos writes step i's JSON without its position.
func (e *encodedSteps) writeWithoutPos(w io.Writer, i int) {
	_, _ = w.Write(e.steps[i][:e.cut[i]])
	_, _ = w.Write([]byte{'}'})
}

// Input is a value supplied when the runbook is submitted.
type Input struct {
	Name string `json:"name"`
	// Type is the JSON type inferred from the parameters the input is passed
	// to, or "any" when they do not say.
	Type   string `json:"type"`
	Format string `json:"format,omitempty"`
}

// Step is one call.
//
// Values in Args and When are JSON: literals as they are, and marker
// objects of one key for what is known only at run time (values.go):
// {"$ref": "case.case_id"}, {"$input": "client_name"},
// {"$str": [part, ...]}, and, in a hook only, {"$failure": "failure.code"}.
// A $ref's step key is the longest prefix of its value, cut before a "."
// or "[", that is a key of the plan, so "screening.run#3.hits[0]" is step
// "screening.run#3", path ".hits[0]".
//
// A hook (Kind "hook") is resolved differently: a $ref to a step that did
// not complete is null rather than an error, since hooks run after a
// failure, and $failure is an object {"code", "message", "step",
// "status"}: the error code and message of the failure that ended the
// runbook, the key of the step that failed (empty for a cancellation), and
// the runbook's final status (failed, partial or cancelled).
type Step struct {
	Key  string `json:"key"`
	Verb string `json:"verb"`
	// Args maps argument names to JSON. A reference is {"$ref": "case.case_id"},
	// an input {"$input": "client_name"}; anything else is a literal.
	Args map[string]any `json:"args"`
	// Gate is the step's effective gate: the verb's, or human_confirm when
	// the call adds one.
	Gate rbtype.Gate `json:"gate"`
	// OnFailure is the step's effective failure mode: the verb's, or the
	// call's :on-failure.
	OnFailure rbtype.OnFailure `json:"on_failure"`
	// Expect maps result fields (dotted paths) to the values a full
	// step's dry run must return before it commits (:expect; docs/design/semantics.md
	// section 7). Left out when the call has none.
	Expect map[string]any `json:"expect,omitempty"`
	// Kind is "hook" for a failure hook; empty (and left out) for an
	// ordinary step.
	Kind StepKind `json:"kind,omitempty"`
	// When is the step's condition (:when, docs/design/language.md v1.2); nil (and
	// left out) when it has none. It is evaluated when the step would
	// become ready, before its gate: false skips the step with reason
	// CONDITION_FALSE. Every $ref in it has a data edge into the step.
	When *Cond `json:"when,omitempty"`
	// Loop is, for a step template (a call in the body of a for-each
	// whose list is known only at run time, docs/design/language.md v1.3), the key of
	// its loop; empty (and left out) for an ordinary step. A template is
	// never run: the runtime expands it (see Loop), and the template
	// stands for the list of its instances' results.
	Loop string `json:"loop,omitempty"`
	// The call options of v1.4 (docs/design/language.md), each left out
	// when the call has none, so that older plans keep their hashes.
	//
	// OnFailureByCode maps error codes to the failure mode a failure with
	// that code takes; OnFailure is the mode of every other code.
	OnFailureByCode map[string]rbtype.OnFailure `json:"on_failure_by_code,omitempty"`
	// GateWhen narrows the step's gate (then human_confirm): the step
	// waits for a decision only when the condition holds, evaluated when
	// the step becomes ready. A reader that ignores it gates always.
	GateWhen *Cond `json:"gate_when,omitempty"`
	// Approvers is the group whose tokens may decide the step's gate
	// (admin always may); empty for any token that may approve.
	Approvers string `json:"approvers,omitempty"`
	// TimeoutResult is the result the step succeeds with when its park
	// times out (event STEP_TIMEOUT_DEFAULTED, provenance "default"),
	// in place of the block's on_timeout.
	TimeoutResult map[string]any `json:"timeout_result,omitempty"`
	// RemindAfter is an ISO 8601 duration after which, while the step is
	// parked, its verb's escalation runs once (event STEP_REMINDED),
	// without ending the wait.
	RemindAfter string `json:"remind_after,omitempty"`
	// Parallel bounds how many instances of this template run at once
	// (a call's :parallel in a for-each body); 0 for no bound of its own.
	Parallel  int             `json:"parallel,omitempty"`
	Execution verbs.Execution `json:"execution"`
	VerbHash  string          `json:"verb_hash"`
	// Pos comes last so the encoder can append it to the hashed form.
	Pos *SourcePos `json:"pos,omitempty"`
}

// SourcePos is where a step's call starts. It is left out of the plan
// hash, so editing comments or layout does not change a plan's identity.
type SourcePos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Edge is a dependency: To runs after From completes.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// VerbInfo is what a plan keeps of a verb besides the execution blocks.
type VerbInfo struct {
	Hash         string        `json:"hash"`
	InputSchema  *verbs.Schema `json:"input_schema,omitempty"`
	OutputSchema *verbs.Schema `json:"output_schema,omitempty"`
	// Execution is frozen here for verbs that only compensate other steps:
	// no step carries their block, and a failing runbook must be undone
	// without reading verb files again.
	Execution *verbs.Execution `json:"execution,omitempty"`
	// Risk is the verb's declared risk, for the plan's effects; empty (and
	// left out) when the verb declares none, which means low.
	Risk rbtype.Risk `json:"risk,omitempty"`
	// Outcome is what a success of the verb's steps records (docs/design/semantics.md
	// section 13); nil, and left out, when the verb declares none, so that
	// plans frozen before outcomes keep their hashes.
	Outcome *verbs.Outcome `json:"outcome,omitempty"`
	// Cost is what an attempt of the verb reserves against budgets as it
	// starts; nil, and left out, when the verb declares none.
	Cost *verbs.Cost `json:"cost,omitempty"`
}

// UnmarshalJSON compiles the schemas as they are read, so a stored plan is
// ready to validate with.
func (v *VerbInfo) UnmarshalJSON(b []byte) error {
	var raw struct {
		Hash         string           `json:"hash"`
		InputSchema  json.RawMessage  `json:"input_schema"`
		OutputSchema json.RawMessage  `json:"output_schema"`
		Execution    *verbs.Execution `json:"execution"`
		Risk         rbtype.Risk      `json:"risk"`
		Outcome      *verbs.Outcome   `json:"outcome"`
		Cost         *verbs.Cost      `json:"cost"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	v.Hash, v.Execution, v.Risk, v.Outcome, v.Cost = raw.Hash, raw.Execution, raw.Risk, raw.Outcome, raw.Cost
	var err error
	if v.InputSchema, err = cachedSchema("input_schema", raw.InputSchema, verbs.InputRole); err != nil {
		return err
	}
	v.OutputSchema, err = cachedSchema("output_schema", raw.OutputSchema, verbs.OutputRole)
	return err
}

// schemaCache holds compiled schemas by their JSON text and role. A daemon
// reads the same few verbs' schemas in every plan it loads; compiling them
// once keeps loading a plan cheap. It is bounded: a plan submitted from
// outside is decoded, schemas included, before it is checked against the
// catalogue, and a stream of refused plans with schemas of their own must
// not grow the daemon's memory without end.
var schemaCache = func() *lru.Cache[schemaCacheKey, *verbs.Schema] {
	c, err := lru.New[schemaCacheKey, *verbs.Schema](maxCachedSchemas)
	if err != nil {
		panic(err) // only for a size below one
	}
	return c
}()

// maxCachedSchemas is far more than the schemas of a catalogue.
const maxCachedSchemas = 1024

type schemaCacheKey struct {
	role verbs.SchemaRole
	text string
}

func cachedSchema(name string, raw json.RawMessage, role verbs.SchemaRole) (*verbs.Schema, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	key := schemaCacheKey{role, string(raw)}
	if s, ok := schemaCache.Get(key); ok {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s, err := verbs.CompileSchema(name, doc, role)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	schemaCache.Add(key, s)
	return s, nil
}

// Step returns the step with key, or nil.
func (p *Plan) Step(key string) *Step {
	for _, s := range p.Steps {
		if s.Key == key {
			return s
		}
	}
	return nil
}

// Hash computes the plan hash: "sha256:" and the hex digest of the
// canonical JSON of the plan without its hash, its source file names and
// its steps' source positions. Those describe where the text was, not what
// the runbook does; leaving them out means a reformatted or re-commented
// runbook keeps its identity, and so its request-level dedupe.
//
// The canonical JSON is exactly what encoding/json.Marshal writes for that
// view of the plan (a test holds the two equal), every step with its own
// execution block; it is built piecewise here because at 100k steps
// reflection over every step dominated compile time.
func (p *Plan) Hash() string {
	return p.hash(p.encodeSteps())
}

// seal computes and records the hash, keeping the step encoding for JSON.
func (p *Plan) seal() {
	enc := p.encodeSteps()
	p.PlanHash = p.hash(enc)
	enc.hash = p.PlanHash
	p.sealed = enc
}

func (p *Plan) hash(enc *encodedSteps) string {
	h := sha256.New()
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"schema_version":%d,"plan_hash":"","sources":null,"inputs":`, p.SchemaVersion)
	b.Write(mustJSON(p.Inputs))
	b.WriteString(`,"steps":`)
	h.Write(b.Bytes())
	if p.Steps == nil {
		h.Write([]byte("null"))
	} else {
		h.Write([]byte("["))
		for i := range enc.steps {
			if i > 0 {
				h.Write([]byte(","))
			}
			enc.writeWithoutPos(h, i)
		}
		h.Write([]byte("]"))
	}
	h.Write([]byte(`,"edges":`))
	writeEdges(h, p.Edges)
	b.Reset()
	if len(p.Loops) > 0 {
		b.WriteString(`,"loops":`)
		b.Write(appendLoops(nil, p.Loops))
	}
	b.WriteString(`,"verbs":`)
	b.Write(mustJSON(p.Verbs))
	b.WriteString("}")
	h.Write(b.Bytes())
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// JSON renders the plan with one step, edge or input a line, so that plans
// diff well and stay compact at 100k steps. The same plan always renders to
// the same bytes, and the output is valid JSON that ParsePlan reads.
//
// A plan made by Compile or Extend renders the steps it was hashed with;
// change a plan's steps and Hash it again before rendering it.
func (p *Plan) JSON() []byte {
	var b bytes.Buffer
	_ = p.WriteJSON(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

// WriteJSON writes what JSON returns, without holding it all in memory.
func (p *Plan) WriteJSON(out io.Writer) error {
	enc := p.sealed
	if enc == nil || enc.hash != p.PlanHash || len(enc.steps) != len(p.Steps) {
		enc = p.encodeSteps()
	}
	steps := enc.steps
	w := bufio.NewWriterSize(out, 1<<16)
	fmt.Fprintf(w, "{\n  \"schema_version\": %d,\n  \"plan_hash\": %s,\n  \"sources\": %s,\n",
		p.SchemaVersion, mustJSON(p.PlanHash), mustJSON(p.Sources))
	writeLines(w, "inputs", len(p.Inputs), func(i int) []byte { return mustJSON(p.Inputs[i]) }, "[", "]")
	w.WriteString(",\n")
	writeLines(w, "steps", len(steps), func(i int) []byte { return steps[i] }, "[", "]")
	w.WriteString(",\n")
	var edge []byte // writeLines writes each item before asking for the next
	writeLines(w, "edges", len(p.Edges), func(i int) []byte {
		edge = appendEdge(edge[:0], p.Edges[i])
		return edge
	}, "[", "]")
	w.WriteString(",\n")
	if len(p.Loops) > 0 {
		writeLines(w, "loops", len(p.Loops), func(i int) []byte { return appendLoop(nil, p.Loops[i]) }, "[", "]")
		w.WriteString(",\n")
	}
	if p.Effects != nil { // a plan compiled before effects existed has none
		writeLines(w, "effects", len(p.Effects), func(i int) []byte { return mustJSON(p.Effects[i]) }, "[", "]")
		w.WriteString(",\n")
	}
	names := slices.Sorted(maps.Keys(p.Verbs))
	writeLines(w, "verbs", len(names), func(i int) []byte {
		return append(append(mustJSON(names[i]), ": "...), mustJSON(p.Verbs[names[i]])...)
	}, "{", "}")
	w.WriteString("\n}\n")
	return w.Flush()
}

// writeLines writes `  "name": [` then one item a line, indented.
func writeLines(b *bufio.Writer, name string, n int, item func(int) []byte, open, closing string) {
	fmt.Fprintf(b, "  %q: %s", name, open)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(item(i))
	}
	if n > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString(closing)
}

// encodeSteps renders each step as compact JSON, in parallel, with its
// own execution block. Encoding one block per step by reflection would
// dominate compile time at 100k steps, so a block is encoded once and
// reused for every later step of the same verb whose block is Equal to
// it. Compiled steps share their verb's maps and pointers, so that
// comparison is a few word compares; a decoded plan's steps compare their
// values. Either way every step is hashed and written with the block it
// actually carries: an edited step never borrows another step's bytes.
func (p *Plan) encodeSteps() *encodedSteps {
	n := len(p.Steps)
	out := &encodedSteps{steps: make([][]byte, n), cut: make([]int, n), block: make([]int, n)}
	// last is the block each verb's previous step carried: generated
	// runbooks call a verb many times with one block, so it is nearly
	// always the one to compare with. byText finds a block again by its
	// encoding, so a plan with many different blocks stays linear.
	last := map[string]int{}
	byText := map[string]int{}
	for i, s := range p.Steps {
		if j, ok := last[s.Verb]; ok && out.blocks[j].exec.Equal(&s.Execution) {
			out.block[i] = j
			out.blocks[j].count++
			continue
		}
		text := mustJSON(s.Execution)
		key := s.Verb + "\x00" + string(text)
		j, seen := byText[key]
		if !seen {
			j = len(out.blocks)
			byText[key] = j
			out.blocks = append(out.blocks, encodedBlock{verb: s.Verb, first: i, exec: &s.Execution, json: text})
		}
		out.blocks[j].count++
		out.block[i] = j
		last[s.Verb] = j
	}
	parallelRanges(n, func(lo, hi int) {
		// Each step is built in a scratch buffer and copied out at its
		// exact size into a chunk shared with the range's next steps: no
		// regrowth, and one allocation per chunk rather than per step.
		// Each step's slice is capped at its end, so appending to one
		// never writes over the next.
		var scratch, chunk []byte
		for i := lo; i < hi; i++ {
			scratch = appendStep(scratch[:0], p.Steps[i], out.blocks[out.block[i]].json, &out.cut[i])
			if cap(chunk)-len(chunk) < len(scratch) {
				// Room for the range's steps left, if they are about this
				// one's size, up to a chunk: a small plan allocates about
				// what its steps take.
				chunk = make([]byte, 0, max(len(scratch), min(stepChunk, len(scratch)*(hi-i))))
			}
			at := len(chunk)
			chunk = append(chunk, scratch...)
			out.steps[i] = chunk[at:len(chunk):len(chunk)]
		}
	})
	return out
}

// stepChunk bounds the chunks encodeSteps copies steps' JSON into: a few
// hundred steps of a typical plan.
const stepChunk = 256 << 10

// appendStep appends a step's compact JSON, position last, and records in
// cut where the position starts.
func appendStep(b []byte, s *Step, exec []byte, cut *int) []byte {
	b = append(b, `{"key":`...)
	b = appendString(b, s.Key)
	b = append(b, `,"verb":`...)
	b = appendString(b, s.Verb)
	b = append(b, `,"args":`...)
	if s.Args == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSON(b, s.Args)
	}
	b = append(b, `,"gate":`...)
	b = appendString(b, string(s.Gate))
	b = append(b, `,"on_failure":`...)
	b = appendString(b, string(s.OnFailure))
	if s.Expect != nil {
		b = append(b, `,"expect":`...)
		b = appendJSON(b, s.Expect)
	}
	if s.Kind != "" {
		b = append(b, `,"kind":`...)
		b = appendString(b, string(s.Kind))
	}
	if s.When != nil {
		b = append(b, `,"when":`...)
		b = appendCond(b, s.When)
	}
	if s.Loop != "" {
		b = append(b, `,"loop":`...)
		b = appendString(b, s.Loop)
	}
	if s.OnFailureByCode != nil {
		b = append(b, `,"on_failure_by_code":`...)
		b = append(b, mustJSON(s.OnFailureByCode)...)
	}
	if s.GateWhen != nil {
		b = append(b, `,"gate_when":`...)
		b = appendCond(b, s.GateWhen)
	}
	if s.Approvers != "" {
		b = append(b, `,"approvers":`...)
		b = appendString(b, s.Approvers)
	}
	if s.TimeoutResult != nil {
		b = append(b, `,"timeout_result":`...)
		b = appendJSON(b, s.TimeoutResult)
	}
	if s.RemindAfter != "" {
		b = append(b, `,"remind_after":`...)
		b = appendString(b, s.RemindAfter)
	}
	if s.Parallel != 0 {
		b = append(b, `,"parallel":`...)
		b = strconv.AppendInt(b, int64(s.Parallel), 10)
	}
	b = append(b, `,"execution":`...)
	b = append(b, exec...)
	b = append(b, `,"verb_hash":`...)
	b = appendString(b, s.VerbHash)
	*cut = len(b)
	if s.Pos != nil {
		b = append(b, `,"pos":{"file":`...)
		b = appendString(b, s.Pos.File)
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(s.Pos.Line), 10)
		b = append(b, `,"column":`...)
		b = strconv.AppendInt(b, int64(s.Pos.Column), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// mustJSON marshals plan data, which holds only JSON values.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("compiler: plan does not marshal: " + err.Error())
	}
	return b
}

// ParsePlan reads a plan written by JSON, checking its version and hash.
// The hash only shows the plan is whole, not who wrote it: anyone can
// recompute it. A daemon reads a submitted plan with ReadPlan, which also
// holds the plan to its catalogue.
func ParsePlan(b []byte) (*Plan, error) {
	p, err := DecodePlan(b)
	if err != nil {
		return nil, err
	}
	if want := p.Hash(); p.PlanHash != want {
		return nil, fmt.Errorf("plan_hash %q does not match the plan's content (%s); the plan was edited after compiling", p.PlanHash, want)
	}
	return p, nil
}

// DecodePlan reads a plan without checking its hash: for plans the daemon
// stored itself, which were checked (ReadPlan) or compiled when they came
// in.
func DecodePlan(b []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("error reading plan: %w", err)
	}
	if !supportedVersion(p.SchemaVersion) {
		return nil, fmt.Errorf("plan schema_version %d is not supported (this build reads %s)", p.SchemaVersion, readableVersions)
	}
	return &p, nil
}

// supportedVersion reports whether this build reads plans of version v.
func supportedVersion(v int) bool { return v >= BaseSchemaVersion && v <= SchemaVersion }

// readableVersions says which versions this build reads, for messages.
var readableVersions = fmt.Sprintf("%d to %d", BaseSchemaVersion, SchemaVersion)

// usesVersion2 reports whether the plan uses anything of version 2: a
// condition, a hook, a loop or a step of one, or a marker other than
// $ref and $input, or an $input with a path.
func (p *Plan) usesVersion2() bool {
	if len(p.Loops) > 0 {
		return true
	}
	for _, s := range p.Steps {
		if s.Kind != "" || s.When != nil || s.Loop != "" || strings.Contains(s.Key, "[") || hasNewMarker(s.Args) {
			return true
		}
	}
	return false
}

// usesVersion3 reports whether the plan uses anything of version 3
// (docs/design/language.md v1.4): a settle edge, a call option of v1.4,
// or a marker of its value forms, in arguments, conditions or a loop's
// list.
func (p *Plan) usesVersion3() bool {
	for _, e := range p.Edges {
		if e.Kind == EdgeSettle {
			return true
		}
	}
	for _, l := range p.Loops {
		if hasV3Marker(l.List) {
			return true
		}
	}
	for _, s := range p.Steps {
		if s.GateWhen != nil || s.Approvers != "" || s.TimeoutResult != nil || s.RemindAfter != "" || s.Parallel != 0 || s.OnFailureByCode != nil {
			return true
		}
		if hasV3Marker(s.Args) || s.When != nil && hasV3Marker(s.When) {
			return true
		}
	}
	return false
}

// condValue is a condition's operands as one plan value, for walks.
func condValue(c *Cond) any {
	out := make([]any, len(c.Args))
	for i, arg := range c.Args {
		if sub, ok := arg.(*Cond); ok {
			out[i] = condValue(sub)
		} else {
			out[i] = arg
		}
	}
	return out
}

// isV3Marker reports whether k is a marker version 3 adds.
func isV3Marker(k string) bool {
	switch k {
	case StatusKey, DefaultKey, CountKey, FilterKey, AnyKey, AllKey, ElemKey, IndexKey:
		return true
	}
	return false
}

// hasV3Marker reports whether a plan value holds a marker of version 3,
// or reads @failures. A marker is a one-key object, so a one-key map's
// single key is compared, rather than every marker looked up in it: the
// compiler walks every argument of every step with this.
func hasV3Marker(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if len(v) == 1 {
				if isV3Marker(k) {
					return true
				}
				if f, ok := item.(string); ok && k == FailureKey && strings.HasPrefix(f, failuresBinding) {
					return true
				}
			}
			if hasV3Marker(item) {
				return true
			}
		}
	case []any:
		for _, item := range v {
			if hasV3Marker(item) {
				return true
			}
		}
	case *Cond:
		return hasV3Marker(condValue(v))
	}
	return false
}

// hasNewMarker reports whether a plan value holds a marker of version 2:
// $str, $failure, $item, or an $input with a path. Like hasV3Marker, it
// compares a one-key map's single key.
func hasNewMarker(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if len(v) == 1 {
				switch k {
				case StrKey, FailureKey, ItemKey:
					return true
				case InputKey:
					if in, ok := item.(string); ok && strings.ContainsAny(in, ".[") {
						return true
					}
				}
			}
			if hasNewMarker(item) {
				return true
			}
		}
	case []any:
		for _, item := range v {
			if hasNewMarker(item) {
				return true
			}
		}
	}
	return false
}

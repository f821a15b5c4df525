package verbs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// Catalogue files are read recursively from each directory, in this order
// of preference.
var verbFileExts = []string{".yaml", ".yml"}

// Loaded is what LoadPaths read: the definitions, sorted by full name, and
// the files' contents for rendering diagnostics.
type Loaded struct {
	Definitions []*Definition
	// Invalid are the definitions with errors whose name no valid
	// definition has, sorted by full name, holding what did decode. They
	// are not callable; they let later checks go on (a handler's params
	// are checked though a field beside them is misspelt, so one run
	// shows every error) and let a runbook calling one be told that its
	// verb is defined but invalid rather than unknown.
	Invalid []*Definition
	Sources lang.Sources
}

// LoadPaths reads every verb file under each path: a directory is walked
// recursively for *.yaml and *.yml, a file is read as it is. Problems in the
// files are diagnostics; an unreadable path is an error.
func LoadPaths(paths []string) (*Loaded, lang.Diagnostics, error) {
	return LoadPathsWith(paths, os.ReadFile)
}

// LoadPathsWith is LoadPaths reading each verb file's contents with read.
// The language server passes the text of the files open in the editor,
// so that a definition being edited is checked before it is saved.
func LoadPathsWith(paths []string, read func(path string) ([]byte, error)) (*Loaded, lang.Diagnostics, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading verbs %q: %w", p, err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() && slices.Contains(verbFileExts, filepath.Ext(path)) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("error reading verbs directory %q: %w", p, err)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)

	out := &Loaded{Sources: lang.Sources{}}
	var all []parsed
	var diags lang.Diagnostics
	for _, f := range files {
		src, err := read(f)
		if err != nil {
			return nil, nil, fmt.Errorf("error reading verb file %q: %w", f, err)
		}
		out.Sources[f] = src
		defs, ds := parse(f, src)
		all = append(all, defs...)
		diags.Append(ds)
	}
	out.Definitions, out.Invalid, diags = dedupe(all, diags)
	return out, diags.Sorted(), nil
}

// parsed is a definition as read. One with errors is kept, marked broken,
// so that a second definition of its name is still reported (V012).
type parsed struct {
	def    *Definition
	broken bool
}

// dedupe reports every verb defined more than once (V012), pointing at
// the first definition, whether that one has errors of its own or not. It
// keeps the first definition of each name without errors, so that
// runbooks calling the verb are not also told it does not exist, and
// returns apart the first broken definition of each name that has no
// valid one.
func dedupe(all []parsed, diags lang.Diagnostics) (defs, invalid []*Definition, _ lang.Diagnostics) {
	first := map[string]*Definition{}
	kept := map[string]bool{}
	broken := map[string]*Definition{}
	for _, p := range all {
		name := p.def.FullName()
		if prev, dup := first[name]; dup {
			diags.Errorf(lang.VDuplicateVerb, p.def.FieldRange("name"), "verb %q is defined twice", name).
				WithRelated(prev.FieldRange("name"), "first defined here")
		} else {
			first[name] = p.def
		}
		if !p.broken && !kept[name] {
			kept[name] = true
			defs = append(defs, p.def)
		}
		if p.broken && broken[name] == nil {
			broken[name] = p.def
		}
	}
	for name, def := range broken {
		if !kept[name] {
			invalid = append(invalid, def)
		}
	}
	byName := func(a, b *Definition) int { return strings.Compare(a.FullName(), b.FullName()) }
	slices.SortFunc(defs, byName)
	slices.SortFunc(invalid, byName)
	return defs, invalid, diags
}

// Parse reads one verb file: a YAML list of definitions, or several YAML
// documents each holding such a list. Definitions with errors are left out.
func Parse(filename string, src []byte) ([]*Definition, lang.Diagnostics) {
	all, diags := parse(filename, src)
	var defs []*Definition
	for _, p := range all {
		if !p.broken {
			defs = append(defs, p.def)
		}
	}
	return defs, diags
}

// parse reads one verb file, keeping the definitions with errors whose
// domain and name could be read, marked broken.
func parse(filename string, src []byte) ([]parsed, lang.Diagnostics) {
	d := &decoder{src: newSource(filename, src)}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var defs []parsed
	docs := 0
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.diags.Errorf(lang.VBadYAML, d.src.lineRange(yamlErrorLine(err)), "not valid YAML: %s", yamlErrorText(err))
			return nil, d.diags
		}
		docs++
		if !d.checkAliases(&doc) {
			continue
		}
		root := doc.Content[0]
		if root.Kind != yaml.SequenceNode {
			d.diags.Errorf(lang.VBadYAML, d.src.rangeOf(root), "a verb file must be a YAML list of definitions (each item starting with \"- name:\")")
			continue
		}
		for _, item := range root.Content {
			if def, ok := d.definition(item); def != nil {
				defs = append(defs, parsed{def: def, broken: !ok})
			}
		}
	}
	if docs == 0 {
		d.diags.Errorf(lang.VBadYAML, d.src.lineRange(1), "the file is empty; a verb file is a YAML list of definitions")
	}
	return defs, d.diags
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

// yamlErrorText is yaml.v3's message without its "yaml: line N:" prefix,
// which the diagnostic's position already says.
func yamlErrorText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	return yamlLinePrefix.ReplaceAllString(msg, "")
}

var yamlLinePrefix = regexp.MustCompile(`^line \d+: `)

// decoder walks one file's nodes, reporting as it goes.
type decoder struct {
	src   *source
	diags lang.Diagnostics
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// domainName is a verb's domain: one or more identifiers joined by dots
// (docs/design/language.md v1.2: in capital.share-class.create the domain is
// capital.share-class and the verb create).
var domainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$`)

// field handles one key of a mapping; path is its dotted path.
type field struct {
	required bool
	decode   func(path string, value *yaml.Node)
}

// mapping walks a mapping node: unknown keys are V002 with suggestions,
// repeated keys V001, missing required keys V003. It records each value's
// range under its dotted path.
func (d *decoder) mapping(n *yaml.Node, path string, def *Definition, fields map[string]field) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s must be a mapping", describePath(path))
		return false
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if prev, dup := seen[key.Value]; dup {
			d.diags.Errorf(lang.VBadYAML, d.src.rangeOf(key), "field %q is given twice", key.Value).
				WithRelated(d.src.rangeOf(prev), "first given here")
			continue
		}
		seen[key.Value] = key
		f, ok := fields[key.Value]
		if !ok {
			names := slices.Sorted(maps.Keys(fields))
			d.diags.Errorf(lang.VUnknownField, d.src.rangeOf(key), "unknown field %q in %s (valid fields: %s)",
				key.Value, describePath(path), strings.Join(names, ", ")).
				WithReplacements(d.src.rangeOf(key), key.Value, lang.Suggest(key.Value, names), nil)
			continue
		}
		sub := joinPath(path, key.Value)
		def.fields[sub] = d.src.rangeOf(value)
		def.keys[sub] = d.src.rangeOf(key)
		f.decode(sub, resolveAlias(value))
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if fields[name].required && seen[name] == nil {
			d.diags.Errorf(lang.VMissingField, d.src.rangeOf(n), "missing required field %q in %s", name, describePath(path))
		}
	}
	return true
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describePath(path string) string {
	if path == "" {
		return "the definition"
	}
	return path
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// scalar returns a scalar's text, reporting anything else.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s must be a single value", path)
		return "", false
	}
	return n.Value, true
}

// domain reads a verb's domain: identifiers joined by dots.
func (d *decoder) domain(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path)
	if ok && !domainName.MatchString(s) {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s %q is not one or more identifiers joined by dots ([A-Za-z_][A-Za-z0-9_-]*, as in kyc or capital.share-class)", path, s)
	}
	return s
}

func (d *decoder) identifier(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path)
	if ok && !identifier.MatchString(s) {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s %q is not an identifier ([A-Za-z_][A-Za-z0-9_-]*)", path, s)
	}
	return s
}

// enum reads one of allowed; what names the kind of value in the message.
// enum reads one of the allowed values of an enumeration. (A function,
// not a method: methods cannot have type parameters.)
func enum[T ~string](d *decoder, n *yaml.Node, path, what string, allowed []T) T {
	s, ok := d.scalar(n, path)
	if !ok {
		return ""
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if !slices.Contains(names, s) {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "unknown %s %q (expected %s)", what, s, strings.Join(names, ", ")).
			WithSuggestions(lang.Suggest(s, names)...)
		return ""
	}
	return T(s)
}

func (d *decoder) duration(n *yaml.Node, path string) *Duration {
	s, ok := d.scalar(n, path)
	if !ok {
		return nil
	}
	dur, err := ParseDuration(s)
	if err != nil {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "bad duration for %s: %v", path, err)
		return nil
	}
	return &dur
}

// definition reads one definition. It returns it with ok when it has no
// errors. With errors it returns it, not ok, when its domain and name
// could be read, so that the duplicate check still sees it; else nil.
func (d *decoder) definition(item *yaml.Node) (def *Definition, ok bool) {
	def = &Definition{Range: d.src.rangeOf(item), fields: map[string]lang.Range{}, keys: map[string]lang.Range{}}
	before := len(d.diags)
	var inputNode, outputNode *yaml.Node
	var exec *yaml.Node
	var tags []string
	isMapping := d.mapping(item, "", def, map[string]field{
		"name":          {true, func(p string, v *yaml.Node) { def.Name = d.identifier(v, p) }},
		"domain":        {true, func(p string, v *yaml.Node) { def.Domain = d.domain(v, p) }},
		"description":   {false, func(p string, v *yaml.Node) { def.Description, _ = d.scalar(v, p) }},
		"execution":     {true, func(p string, v *yaml.Node) { exec = v }},
		"input_schema":  {false, func(p string, v *yaml.Node) { inputNode = v }},
		"output_schema": {false, func(p string, v *yaml.Node) { outputNode = v }},
		// A field name of the result, so an identifier; whether the
		// output_schema has it is checked where a nested call uses it
		// (E034), since a verb never called nested never needs it.
		"returns": {false, func(p string, v *yaml.Node) { def.Returns = d.identifier(v, p) }},
		"risk":    {false, func(p string, v *yaml.Node) { def.Risk = enum(d, v, p, "risk", rbtype.Risks) }},
		"outcome": {false, func(p string, v *yaml.Node) { def.Outcome = d.outcome(v, p, def) }},
		"cost":    {false, func(p string, v *yaml.Node) { def.Cost = d.cost(v, p, def) }},
		// Frozen in the execution block (Execution.PolicyTags), so that a
		// submitted plan cannot shed them.
		"policy_tags": {false, func(p string, v *yaml.Node) { tags = d.policyTags(v, p) }},
	})
	if !isMapping {
		return nil, false
	}
	// Schemas first: the execution block's key fields are checked against
	// the input schema.
	if inputNode != nil {
		def.InputSchema = d.schema(inputNode, def, "input_schema", InputRole)
	}
	if outputNode != nil {
		def.OutputSchema = d.schema(outputNode, def, "output_schema", OutputRole)
	}
	if exec != nil {
		d.execution(exec, def)
	}
	def.Execution.PolicyTags = tags
	d.highRiskGate(def)
	if def.Risk == rbtype.RiskHigh && def.Execution.Level.Effective() == rbtype.LevelOpaque {
		d.diags.Errorf(lang.VOpaqueHighRisk, def.FieldRange("risk"),
			"verb %q is risk high at execution level opaque: a high-risk call must be rehearsed; declare execution.level full (dry run, verify, commit) or guarded", def.FullName())
	}
	if len(d.diags) > before {
		if domainName.MatchString(def.Domain) && identifier.MatchString(def.Name) {
			return def, false
		}
		return nil, false
	}
	def.computeHash()
	return def, true
}

// highRiskGate freezes the gate a high-risk verb always has into its
// execution block (docs/design/semantics.md section 7: no call option removes it), so
// that the block every plan, `rbc verbs`, the language server's hover and
// the console show says the gate that will apply, not "none". A file
// that writes gate: none on a high-risk verb contradicts itself: V004.
func (d *decoder) highRiskGate(def *Definition) {
	if def.Risk != rbtype.RiskHigh {
		return
	}
	if def.HasField("execution.gate") && def.Execution.Gate == rbtype.GateNone {
		d.diags.Errorf(lang.VBadValue, def.FieldRange("execution.gate"),
			"verb %q is risk high, and a high-risk step always waits at a human_confirm gate; remove gate: none (or lower the risk)", def.FullName())
		return
	}
	def.Execution.Gate = rbtype.GateHumanConfirm
}

func (d *decoder) execution(n *yaml.Node, def *Definition) {
	e := &def.Execution
	var parkTimeout, maxPark, escalation, cachePolicy, remindAfter, approvers *yaml.Node
	var keyFields []*yaml.Node
	var retry retryDecl
	d.mapping(n, "execution", def, map[string]field{
		"kind":         {true, func(p string, v *yaml.Node) { e.Kind = enum(d, v, p, "kind", rbtype.Kinds) }},
		"handler":      {true, func(p string, v *yaml.Node) { e.Handler, _ = d.scalar(v, p) }},
		"side_effects": {true, func(p string, v *yaml.Node) { e.SideEffects = enum(d, v, p, "side effect", rbtype.SideEffectsValues) }},
		"gate":         {false, func(p string, v *yaml.Node) { e.Gate = enum(d, v, p, "gate", rbtype.Gates) }},
		"on_failure":   {false, func(p string, v *yaml.Node) { e.OnFailure = enum(d, v, p, "on_failure mode", rbtype.OnFailures) }},
		"determinism":  {false, func(p string, v *yaml.Node) { e.Determinism = enum(d, v, p, "determinism", rbtype.Determinisms) }},
		"level":        {false, func(p string, v *yaml.Node) { e.Level = enum(d, v, p, "execution level", rbtype.Levels) }},
		"cache": {false, func(p string, v *yaml.Node) {
			c := &Cache{}
			if d.mapping(v, p, def, map[string]field{
				"policy": {true, func(p string, v *yaml.Node) {
					cachePolicy = v
					c.Policy = enum(d, v, p, "cache policy", rbtype.CachePolicies)
				}},
				"ttl": {false, func(p string, v *yaml.Node) { c.TTL = d.duration(v, p) }},
			}) {
				e.Cache = c
			}
		}},
		"params": {false, func(p string, v *yaml.Node) {
			if params, ok := d.jsonObject(v, p, nil); ok {
				e.Params = params
				// Each param's own range, so that a handler's check can
				// point at the value it refuses.
				for i := 0; i+1 < len(v.Content); i += 2 {
					def.fields[p+"."+v.Content[i].Value] = d.src.rangeOf(v.Content[i+1])
					def.keys[p+"."+v.Content[i].Value] = d.src.rangeOf(v.Content[i])
				}
			}
		}},
		"idempotency": {false, func(p string, v *yaml.Node) {
			d.mapping(v, p, def, map[string]field{
				"scope": {false, func(p string, v *yaml.Node) { e.Idempotency.Scope = enum(d, v, p, "idempotency scope", rbtype.Scopes) }},
				"key_fields": {false, func(p string, v *yaml.Node) {
					if v.Kind != yaml.SequenceNode {
						d.diags.Errorf(lang.VBadValue, d.src.rangeOf(v), "%s must be a list of argument names", p)
						return
					}
					for _, f := range v.Content {
						if s, ok := d.scalar(f, p); ok {
							e.Idempotency.KeyFields = append(e.Idempotency.KeyFields, s)
							keyFields = append(keyFields, f)
						}
					}
				}},
			})
		}},
		"timeouts": {false, func(p string, v *yaml.Node) {
			d.mapping(v, p, def, map[string]field{
				"park_timeout": {false, func(p string, v *yaml.Node) { parkTimeout = v; e.Timeouts.ParkTimeout = d.duration(v, p) }},
				"max_park":     {false, func(p string, v *yaml.Node) { maxPark = v; e.Timeouts.MaxPark = d.duration(v, p) }},
				"run_timeout": {false, func(p string, v *yaml.Node) {
					if dur := d.duration(v, p); dur != nil {
						e.Timeouts.RunTimeout = *dur
					}
				}},
				"on_timeout": {false, func(p string, v *yaml.Node) {
					e.Timeouts.OnTimeout = enum(d, v, p, "on_timeout action", rbtype.OnTimeouts)
				}},
				"escalation":   {false, func(p string, v *yaml.Node) { escalation = v; e.Timeouts.Escalation = d.verbCall(v, p, def) }},
				"remind_after": {false, func(p string, v *yaml.Node) { remindAfter = v; e.Timeouts.RemindAfter = d.duration(v, p) }},
			})
		}},
		"approvers": {false, func(p string, v *yaml.Node) {
			approvers = v
			e.Approvers, _ = d.scalar(v, p)
		}},
		"retry":        {false, func(p string, v *yaml.Node) { retry = d.retry(v, p, def) }},
		"compensation": {false, func(p string, v *yaml.Node) { e.Compensation = d.verbCall(v, p, def) }},
	})

	if e.Kind == rbtype.KindDurable && parkTimeout == nil {
		d.diags.Errorf(lang.VNoParkTimeout, def.FieldRange("execution.kind"),
			"durable verb %q has no timeouts.park_timeout; nothing may wait forever", def.FullName())
	}
	if maxPark != nil && e.Kind != rbtype.KindDurable {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(maxPark), "max_park applies only to durable verbs; %q is sync", def.FullName())
	} else if maxPark != nil && e.Timeouts.MaxPark != nil && e.Timeouts.ParkTimeout != nil && e.Timeouts.MaxPark.D < e.Timeouts.ParkTimeout.D {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(maxPark), "timeouts.max_park %s is shorter than timeouts.park_timeout %s", e.Timeouts.MaxPark, e.Timeouts.ParkTimeout)
	}
	d.checkReminder(def, remindAfter, approvers)
	if escalation != nil && e.Timeouts.OnTimeout != rbtype.OnTimeoutEscalate && remindAfter == nil {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(escalation),
			"timeouts.escalation runs only when a park escalates; %q needs timeouts.on_timeout: escalate", def.FullName())
	}
	if esc := e.Timeouts.Escalation; esc != nil {
		// An escalation runs because nothing came back: there is no
		// result to refer to.
		for name, v := range esc.Args {
			if s, ok := v.(string); ok && strings.HasPrefix(s, "@result") {
				d.diags.Errorf(lang.VBadCompensation, def.FieldRange("execution.timeouts.escalation.args."+name),
					"escalation arg %q: %q refers to a result, and a step that escalates has none; use \"@args.<path>\" or a literal", name, s)
			}
		}
	}
	d.checkCache(e, cachePolicy, def)
	if e.Kind == rbtype.KindSync && parkTimeout != nil {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(parkTimeout), "park_timeout applies only to durable verbs; %q is sync", def.FullName())
	}
	for _, f := range keyFields {
		if def.InputSchema == nil || !slices.Contains(def.InputSchema.Properties(), f.Value) {
			var valid []string
			if def.InputSchema != nil {
				valid = def.InputSchema.Properties()
			}
			d.diags.Errorf(lang.VBadKeyField, d.src.rangeOf(f), "idempotency key field %q is not an argument in input_schema", f.Value).
				WithSuggestions(lang.Suggest(f.Value, valid)...)
		}
	}
	applyDefaults(e)
	resolveRetry(&e.Retry, retry)
}

// policyTag is what a policy tag may be: a lower-case identifier
// (read_only, external_send), the vocabulary a policy file's rules match.
var policyTag = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// policyTags reads a verb's policy_tags: a list of distinct lower-case
// identifiers (docs/design/semantics.md section 10).
func (d *decoder) policyTags(n *yaml.Node, path string) []string {
	if n.Kind != yaml.SequenceNode {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(n), "%s must be a list of tags, as in [external_send, pii]", path)
		return nil
	}
	var tags []string
	for _, item := range n.Content {
		s, ok := d.scalar(item, path)
		switch {
		case !ok:
		case !policyTag.MatchString(s):
			d.diags.Errorf(lang.VBadValue, d.src.rangeOf(item), "policy tag %q is not a lower-case identifier ([a-z][a-z0-9_]*, as in external_send)", s)
		case slices.Contains(tags, s):
			d.diags.Errorf(lang.VBadValue, d.src.rangeOf(item), "policy tag %q is given twice", s)
		default:
			tags = append(tags, s)
		}
	}
	return tags
}

// applyDefaults fills what the file left out, so the frozen block is
// complete and the runtime never guesses.
func applyDefaults(e *Execution) {
	if e.Idempotency.Scope == "" {
		e.Idempotency.Scope = rbtype.ScopeRunbookStep
	}
	if e.Timeouts.RunTimeout.D == 0 {
		e.Timeouts.RunTimeout = DefaultRunTimeout
	}
	if e.Timeouts.OnTimeout == "" {
		e.Timeouts.OnTimeout = rbtype.OnTimeoutFail
	}
	if e.Retry.MaxAttempts == 0 {
		e.Retry.MaxAttempts = 1
	}
	if e.Retry.Backoff == "" {
		e.Retry.Backoff = rbtype.BackoffExponential
	}
	if e.Retry.BaseDelay.D == 0 {
		e.Retry.BaseDelay = DefaultBaseDelay
	}
	if e.Retry.MaxDelay.D == 0 {
		e.Retry.MaxDelay = DefaultMaxDelay
		if e.Retry.BaseDelay.D > DefaultMaxDelay.D {
			e.Retry.MaxDelay = e.Retry.BaseDelay
		}
	}
	if e.Gate == "" {
		e.Gate = rbtype.GateNone
	}
	if e.OnFailure == "" {
		e.OnFailure = rbtype.OnFailureAbort
	}
	if e.Kind == rbtype.KindDurable && e.Timeouts.ParkTimeout != nil && e.Timeouts.MaxPark == nil {
		maxPark := DurationOf(4 * e.Timeouts.ParkTimeout.D)
		e.Timeouts.MaxPark = &maxPark
	}
}

// compensationRef matches the two kinds of references compensation args may
// hold.
var compensationRef = regexp.MustCompile(`^@(args|result)(\.[A-Za-z_][A-Za-z0-9_-]*|\[[0-9]+\])*$`)

// verbCall reads a compensation or an escalation: a verb and its args,
// each a literal or a reference to the step's arguments or result. It
// returns nil when the block is malformed (the diagnostics say why).
func (d *decoder) verbCall(n *yaml.Node, path string, def *Definition) *Compensation {
	c := &Compensation{}
	ok := d.mapping(n, path, def, map[string]field{
		"verb": {true, func(p string, v *yaml.Node) { c.Verb, _ = d.scalar(v, p) }},
		"args": {false, func(p string, v *yaml.Node) {
			args, ok := d.jsonObject(v, p, nil)
			if !ok {
				return
			}
			c.Args = args
			for i := 0; i+1 < len(v.Content); i += 2 {
				val := v.Content[i+1]
				def.fields[p+"."+v.Content[i].Value] = d.src.rangeOf(val)
				if s, isStr := args[v.Content[i].Value].(string); isStr && strings.HasPrefix(s, "@") && !compensationRef.MatchString(s) {
					d.diags.Errorf(lang.VBadCompensation, d.src.rangeOf(val),
						"%s arg %q must be a literal, \"@args.<path>\" or \"@result.<path>\"", path[strings.LastIndex(path, ".")+1:], s)
				}
			}
		}},
	})
	if !ok {
		return nil
	}
	return c
}

// checkCache applies docs/design/semantics.md section 4's load-time rules to a verb's
// cache: a result is reused only where running the handler again would
// change nothing outside (V020), an external verb's result never forever
// (V021), and a ttl policy needs its ttl (V022). at is the policy's node.
func (d *decoder) checkCache(e *Execution, at *yaml.Node, def *Definition) {
	c := e.Cache
	if c == nil || at == nil {
		return
	}
	where := d.src.rangeOf(at)
	if c.Reuses() {
		switch {
		case e.Kind == rbtype.KindDurable:
			d.diags.Errorf(lang.VCacheEffects, where,
				"cache policy %q on durable verb %q: a wait's answer comes from the outside world each time; use policy never", c.Policy, def.FullName())
		case e.SideEffects == rbtype.SideEffectsExternalCall || e.SideEffects == rbtype.SideEffectsHuman:
			d.diags.Errorf(lang.VCacheEffects, where,
				"cache policy %q on verb %q, whose side_effects are %s: a cache hit would skip the effect; use policy never, or the global idempotency scope for an effect that must happen once ever",
				c.Policy, def.FullName(), e.SideEffects)
		}
	}
	if c.Policy == rbtype.CacheReuse && e.Determinism.Effective() == rbtype.DeterminismExternal {
		d.diags.Errorf(lang.VCacheExternal, where,
			"cache policy reuse on verb %q, whose determinism is external: the world it reads may change, so its results may only be reused for a while; use policy ttl with a ttl, or declare determinism pure or stable", def.FullName())
	}
	if c.Policy == rbtype.CacheTTL && c.TTL == nil {
		d.diags.Errorf(lang.VCacheTTL, where, "cache policy ttl on verb %q needs a ttl (an ISO 8601 duration such as PT6H)", def.FullName())
	}
}

// groupName is what a group of tokens may be called.
var groupName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// checkReminder checks timeouts.remind_after and approvers
// (docs/design/language.md v1.4): a reminder is sent by a durable verb's
// escalation, before its park times out; approvers names a group.
func (d *decoder) checkReminder(def *Definition, remindAfter, approvers *yaml.Node) {
	e := &def.Execution
	if approvers != nil && e.Approvers != "" && !groupName.MatchString(e.Approvers) {
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(approvers), "approvers %q is not a group's name, such as compliance", e.Approvers)
		e.Approvers = ""
	}
	r := e.Timeouts.RemindAfter
	if remindAfter == nil || r == nil {
		return
	}
	switch {
	case e.Kind != rbtype.KindDurable:
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(remindAfter), "timeouts.remind_after applies only to durable verbs; %q is %s", def.FullName(), e.Kind)
	case e.Timeouts.ParkTimeout != nil && r.D >= e.Timeouts.ParkTimeout.D:
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(remindAfter), "timeouts.remind_after %s is not before timeouts.park_timeout %s: the reminder would never be sent", r, e.Timeouts.ParkTimeout)
	case e.Timeouts.Escalation == nil:
		d.diags.Errorf(lang.VBadValue, d.src.rangeOf(remindAfter), "timeouts.remind_after runs timeouts.escalation, which %q does not declare", def.FullName())
	default:
		return
	}
	e.Timeouts.RemindAfter = nil
}

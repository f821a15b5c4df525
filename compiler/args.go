package compiler

import (
	"slices"
	"strings"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/verbs"
)

// checkArgs checks a call's arguments against its verb's input_schema:
// unknown (E021), missing (E020), literal values (E022), and, through
// checkValue, the references and inputs inside them.
func (a *analysis) checkArgs(s *step) {
	var schema *verbs.Schema
	if s.def != nil {
		schema = s.def.InputSchema
	}
	given := map[string]bool{}
	for i, arg := range s.args {
		given[arg.Name] = true
		var sub map[string]any
		if schema != nil {
			if p, ok := schema.Property(arg.Name); ok {
				sub = p
			} else if schema.Closed() {
				valid := schema.Properties()
				a.diags.Errorf(lang.EUnknownArg, arg.NameRange, "verb %q has no argument :%s (valid: %s)",
					s.def.FullName(), arg.Name, joinArgs(valid)).
					WithReplacements(arg.NameRange, ":"+arg.Name, prefixAll(":", lang.Suggest(arg.Name, valid)), nil)
			}
		}
		if schema != nil && sub != nil && isLiteral(arg.Value) {
			if err := s.literalErrs[i]; err != nil {
				a.diags.Errorf(lang.EArgSchema, arg.Value.Range(), "argument :%s does not match its schema: %v", arg.Name, err)
			}
			a.checkMapKeys(s, arg.Value)
			continue
		}
		a.checkValue(s, arg.Name, arg.Value, sub)
	}
	if schema == nil {
		return
	}
	var missing []string
	for _, req := range schema.Required() {
		if !given[req] {
			missing = append(missing, req)
		}
	}
	if len(missing) > 0 {
		noun := "argument"
		if len(missing) > 1 {
			noun = "arguments"
		}
		a.diags.Errorf(lang.EMissingArg, s.call.VerbRange, "verb %q is missing required %s %s",
			s.def.FullName(), noun, joinArgs(missing))
	}
}

// prepareArgs converts every argument to its plan JSON and validates the
// literal ones against their parameter's schema, in parallel: schema
// validation is the costliest check per step, and it needs nothing but the
// value and the schema. Each chunk of steps remembers the lists and maps
// it has validated (literalChecks): generated runbooks pass the same
// literal to the same verb again and again.
func (a *analysis) prepareArgs(steps []*step) {
	parallelRanges(len(steps), func(lo, hi int) {
		checks := literalChecks{}
		for _, s := range steps[lo:hi] {
			s.argJSON = make([]any, len(s.args))
			for j, arg := range s.args {
				s.argJSON[j] = a.freezeValue(arg.Value)
			}
			if s.def == nil || s.def.InputSchema == nil {
				continue
			}
			s.literalErrs = make([]error, len(s.args))
			for j, arg := range s.args {
				if isLiteral(arg.Value) {
					s.literalErrs[j] = checks.validate(s.def.InputSchema, arg.Name, s.argJSON[j])
				}
			}
		}
	})
}

// literalChecks remembers the results of validating literal lists and maps
// against a parameter's schema, by the literal's canonical JSON: a literal
// is plan JSON (nil, bool, string, json.Number, []any, map[string]any), so
// two with the same canonical JSON are the same value and validate alike.
// At 100k steps the benchmark runbook passes the same list 25,000 times
// (BENCHMARKS.md, "Compile under 2 s"). Scalars are not remembered: a
// property declared by its type alone checks them without the library.
type literalChecks struct {
	results map[literalParam]map[string]error
	scratch []byte
	held    int
}

// literalParam is one parameter of one verb's input schema.
type literalParam struct {
	schema *verbs.Schema
	name   string
}

// maxLiteralChecks bounds what a chunk of steps remembers, so that a
// runbook of many different literals costs little more memory.
const maxLiteralChecks = 4096

func (c *literalChecks) validate(schema *verbs.Schema, name string, v any) error {
	switch v.(type) {
	case []any, map[string]any:
	default:
		return schema.ValidateProperty(name, v)
	}
	c.scratch = appendJSON(c.scratch[:0], v)
	param := literalParam{schema, name}
	if err, ok := c.results[param][string(c.scratch)]; ok {
		return err
	}
	err := schema.ValidateProperty(name, v)
	if c.held < maxLiteralChecks {
		if c.results == nil {
			c.results = map[literalParam]map[string]error{}
		}
		if c.results[param] == nil {
			c.results[param] = map[string]error{}
		}
		c.results[param][string(c.scratch)] = err
		c.held++
	}
	return err
}

// checkValue walks a value that holds references or inputs alongside the
// schema of the parameter it is passed to (nil when unknown). Literal parts
// are checked for their JSON type; the whole value is validated against the
// schema at run time, once it is known.
func (a *analysis) checkValue(s *step, param string, v lang.Value, sub map[string]any) {
	switch v := v.(type) {
	case *lang.Ref:
		a.checkRef(s, param, v, sub)
	case *lang.Input:
		a.inputs.use(&a.diags, v, sub, ":"+param)
	case *lang.List:
		a.checkType(param, v, "array", sub)
		for i, item := range v.Items {
			a.checkValue(s, param, item, verbs.Items(sub, i))
		}
	case *lang.Map:
		a.checkType(param, v, "object", sub)
		a.checkMapKeys(s, v)
		for _, e := range v.Entries {
			field, ok := verbs.Field(sub, e.Name)
			if !ok && sub != nil && verbs.IsClosed(sub) {
				props := propertyNames(sub)
				a.diags.Errorf(lang.EArgSchema, e.NameRange, "argument :%s has no field :%s (valid: %s)", param, e.Name, joinArgs(props)).
					WithReplacements(e.NameRange, ":"+e.Name, prefixAll(":", lang.Suggest(e.Name, props)), nil)
			}
			a.checkValue(s, param, e.Value, field)
		}
	case *lang.Str:
		// A part of any type becomes text; the whole is a string.
		a.checkType(param, v, "string", sub)
		for _, part := range v.Parts {
			a.checkValue(s, param, part, nil)
		}
	case *lang.Func:
		op := a.funcOperand(s, v, false)
		if op.ok && op.types != nil {
			want := verbs.Types(sub)
			admits := want == nil
			for _, t := range op.types {
				admits = admits || verbs.TypeAdmits(want, t)
			}
			if !admits {
				a.diags.Errorf(lang.EArgSchema, v.Range(), "argument :%s does not match its schema: (%s ...) is %s, want %s", param, v.Name, strings.Join(op.types, " or "), strings.Join(want, " or "))
			}
		}
	case *lang.Cond:
		if lang.IsOperator(v.Op) {
			a.diags.Errorf(lang.EBadOption, v.Span, "(%s ...) is a condition, which stands only after :when; text is made with (str ...)", v.Op)
		} else {
			a.diags.Errorf(lang.EBadOption, v.Span, "(%s ...) is not a value: a value may be (str ...), which makes text, or a call (domain.verb ...)", v.Op)
		}
	case *lang.Bad:
	default:
		a.checkType(param, v, verbs.JSONType(jsonValue(v)), sub)
	}
}

func (a *analysis) checkType(param string, v lang.Value, have string, sub map[string]any) {
	if want := verbs.Types(sub); !verbs.TypeAdmits(want, have) {
		a.diags.Errorf(lang.EArgSchema, v.Range(), "argument :%s does not match its schema: got %s, want %s", param, have, strings.Join(want, " or "))
	}
}

// checkMapKeys reports a key given twice in a map literal (E023), anywhere
// inside v.
func (a *analysis) checkMapKeys(s *step, v lang.Value) {
	lang.Walk(v, func(v lang.Value) {
		m, ok := v.(*lang.Map)
		if !ok {
			return
		}
		seen := map[string]*lang.Arg{}
		for i, e := range m.Entries {
			if prev, dup := seen[e.Name]; dup {
				d := a.diags.Errorf(lang.EDuplicateArg, e.NameRange, "key :%s is given twice", e.Name).
					WithRelated(prev.NameRange, "first given here")
				// "{" is one byte and one column.
				open := m.Span.Start
				open.Byte++
				open.Column++
				removeArgFix(d, s.file, open, m.Entries, i, "key :"+e.Name)
				continue
			}
			seen[e.Name] = e
		}
	})
}

func propertyNames(sub map[string]any) []string {
	props, _ := sub["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func joinArgs(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(prefixAll(":", names), ", ")
}

func prefixAll(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

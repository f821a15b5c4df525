package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/rbtype"
)

// binder resolves a step's frozen arguments: references against the
// results of completed steps, inputs against the submission's inputs.
type binder struct {
	results map[string]json.RawMessage // step key → result, for completed steps
	inputs  map[string]any
	decoded map[string]any
}

// resolve returns v with every {"$ref": ...} and {"$input": ...} replaced
// by its value. A reference to a step without a result, or to a field its
// result does not have, is MISSING_REQUIRED_CONTEXT.
func (b *binder) resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			if ref, ok := v[compiler.RefKey].(string); ok {
				return b.ref(ref)
			}
			if name, ok := v[compiler.InputKey].(string); ok {
				val, ok := b.inputs[name]
				if !ok {
					return nil, Errorf(rbtype.CodeMissingRequiredContext, "input $%s was not supplied", name)
				}
				return val, nil
			}
		}
		out := make(map[string]any, len(v))
		for k, item := range v {
			r, err := b.resolve(item)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			r, err := b.resolve(item)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// ref follows a reference path such as "docs.files[0].url".
func (b *binder) ref(path string) (any, error) {
	name, rest := splitRef(path)
	cur, err := b.result(name)
	if err != nil {
		return nil, err
	}
	walked := "@" + name
	for rest != "" {
		var step string
		if rest[0] == '.' {
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				step, rest = rest[1:], ""
			} else {
				step, rest = rest[1:end+1], rest[end+1:]
			}
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, Errorf(rbtype.CodeMissingRequiredContext, "%s is not an object, so it has no field %q", walked, step)
			}
			if cur, ok = obj[step]; !ok {
				return nil, Errorf(rbtype.CodeMissingRequiredContext, "%s has no field %q", walked, step)
			}
			walked += "." + step
			continue
		}
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return nil, Errorf(rbtype.CodeMissingRequiredContext, "bad reference path %q", path)
		}
		i, err := strconv.Atoi(rest[1:end])
		if err != nil {
			return nil, Errorf(rbtype.CodeMissingRequiredContext, "bad index in reference %q", path)
		}
		rest = rest[end+1:]
		list, ok := cur.([]any)
		if !ok || i >= len(list) {
			return nil, Errorf(rbtype.CodeMissingRequiredContext, "%s has no element [%d]", walked, i)
		}
		cur = list[i]
		walked += fmt.Sprintf("[%d]", i)
	}
	return cur, nil
}

// splitRef splits a reference into the step key and the path after it. A
// key is a binding name, which holds no "." or "[", or, for a reference to
// an unnamed nested call (docs/design/language.md v1.1), "<verb>#<n>", whose verb holds
// one dot: there the key ends after the "#" and its digits.
func splitRef(path string) (name, rest string) {
	from := 0
	if hash := strings.IndexByte(path, '#'); hash >= 0 {
		from = hash
	}
	if i := strings.IndexAny(path[from:], ".["); i >= 0 {
		return path[:from+i], path[from+i:]
	}
	return path, ""
}

func (b *binder) result(name string) (any, error) {
	if v, ok := b.decoded[name]; ok {
		return v, nil
	}
	raw, ok := b.results[name]
	if !ok {
		return nil, Errorf(rbtype.CodeMissingRequiredContext, "step @%s has no result", name)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, Errorf(rbtype.CodeMissingRequiredContext, "step @%s's result is not JSON: %v", name, err)
	}
	if b.decoded == nil {
		b.decoded = map[string]any{}
	}
	b.decoded[name] = v
	return v, nil
}

// decodeJSON decodes JSON the way plans and schemas expect: numbers as
// json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

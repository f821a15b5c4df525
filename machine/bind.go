package machine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Binder resolves a step's frozen arguments and condition: references
// against the results of completed steps, inputs against the submission's
// inputs, text by joining its parts, and, in a failure hook, @failure
// (docs/language.md, "The plan format").
type Binder struct {
	Results map[string]json.RawMessage // step key → result, for completed steps
	Inputs  map[string]any
	decoded map[string]any
	// IsKey says whether a string is a step key of the plan: a reference
	// names the step whose key is its longest prefix (compiler.SplitRef).
	// Nil takes the keys of results.
	IsKey func(string) bool
	// hook resolves a failure hook's values: a reference to a step that
	// did not complete, or to a path its result lacks, is null rather
	// than an error.
	hook bool
	// failure is @failure, what a hook's {"$failure": ...} reads; nil
	// outside hooks.
	failure map[string]any
	// failures is @failures, every failure in the order they happened
	// (docs/design/language.md v1.4); nil reads as [failure].
	failures []any
	// status gives the status a step settled with, for (status @x)
	// (bind_forms.go); nil where statuses are not known.
	status func(key string) (string, bool)
}

// Resolve returns v with every marker replaced by its value. A reference
// to a step without a result, or to a field its result does not have, is
// MISSING_REQUIRED_CONTEXT (null in a hook); a value that holds a marker
// of a loop's element ($item), which only templates hold, is INTERNAL.
func (b *Binder) Resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			if out, ok, err := b.marker(v); ok {
				return out, err
			}
		}
		out := make(map[string]any, len(v))
		for k, item := range v {
			r, err := b.Resolve(item)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			r, err := b.Resolve(item)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// marker resolves a one-key object that is a marker; ok is false for a
// literal map.
func (b *Binder) marker(v map[string]any) (out any, ok bool, err error) {
	if ref, ok := v[compiler.RefKey].(string); ok {
		out, err := b.ref(ref)
		if err != nil && b.hook && isMissing(err) {
			return nil, true, nil
		}
		return out, true, err
	}
	if in, ok := v[compiler.InputKey].(string); ok {
		out, err := b.Input(in)
		return out, true, err
	}
	if parts, ok := v[compiler.StrKey].([]any); ok {
		resolved := make([]any, len(parts))
		for i, p := range parts {
			if resolved[i], err = b.Resolve(p); err != nil {
				return nil, true, err
			}
		}
		return compiler.Text(resolved), true, nil
	}
	if ref, ok := v[compiler.FailureKey].(string); ok {
		out, err := b.failureAt(ref)
		return out, true, err
	}
	if ref, ok := v[compiler.ItemKey].(string); ok {
		return nil, true, handler.Errorf(rbtype.CodeInternal, "@%s is the element of a for-each, which only a step template reads", ref)
	}
	return b.form(v)
}

// isMissing reports whether err says a reference found nothing.
func isMissing(err error) bool {
	e, ok := err.(*handler.Error)
	return ok && e.Code == rbtype.CodeMissingRequiredContext
}

// ref follows a reference such as "docs.files[0].url". Its step is the
// longest prefix that is a step key with a result: an instance's key
// ("upload[2]") names the same value as element 2 of its template's list
// of results ("upload" then "[2]"), so either is read when the other has
// not been fetched.
func (b *Binder) ref(path string) (any, error) {
	name, rest := b.SplitRef(path)
	cur, err := b.result(name)
	if err != nil {
		return nil, err
	}
	return walk(cur, "@"+name, rest, path)
}

// SplitRef splits a reference into the step key and the path after it:
// the longest prefix, cut before a "." or "[" or at the end, that is a
// key with a result, else the longest that is a key, else the whole
// reference (which then has no result).
func (b *Binder) SplitRef(path string) (name, rest string) {
	isKey := b.IsKey
	if isKey == nil {
		isKey = func(k string) bool { _, ok := b.Results[k]; return ok }
	}
	longest := -1
	for end := len(path); end > 0; end-- {
		if end < len(path) && path[end] != '.' && path[end] != '[' {
			continue
		}
		if !isKey(path[:end]) {
			continue
		}
		if _, has := b.Results[path[:end]]; has {
			return path[:end], path[end:]
		}
		if longest < 0 {
			longest = end
		}
	}
	if longest < 0 {
		return path, ""
	}
	return path[:longest], path[longest:]
}

// Input resolves an input, with a path when it has one
// ("hosts[2].name"). An input's name holds no "." or "[".
func (b *Binder) Input(ref string) (any, error) {
	name, rest := ref, ""
	if i := strings.IndexAny(ref, ".["); i >= 0 {
		name, rest = ref[:i], ref[i:]
	}
	val, ok := b.Inputs[name]
	if !ok {
		return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "input $%s was not supplied", name)
	}
	return walk(val, "$"+name, rest, ref)
}

// failureAt resolves @failure or one of its fields, in a hook.
func (b *Binder) failureAt(ref string) (any, error) {
	if b.failure == nil {
		return nil, handler.Errorf(rbtype.CodeInternal, "@%s is read only by a failure hook", ref)
	}
	var v any
	var err error
	if rest, ok := strings.CutPrefix(ref, "failures"); ok {
		list := b.failures
		if list == nil {
			list = []any{map[string]any(b.failure)}
		}
		v, err = walk(list, "@failures", rest, ref)
	} else {
		v, err = walk(map[string]any(b.failure), "@failure", strings.TrimPrefix(ref, "failure"), ref)
	}
	if err != nil && isMissing(err) {
		return nil, nil
	}
	return v, err
}

// walk follows a path such as ".files[0].url" into a value; walked names
// the value so far, for messages, and whole is the reference as written.
func walk(cur any, walked, rest, whole string) (any, error) {
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
				return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "%s is not an object, so it has no field %q", walked, step)
			}
			if cur, ok = obj[step]; !ok {
				return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "%s has no field %q", walked, step)
			}
			walked += "." + step
			continue
		}
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "bad reference path %q", whole)
		}
		i, err := strconv.Atoi(rest[1:end])
		if err != nil || i < 0 {
			return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "bad index in reference %q", whole)
		}
		rest = rest[end+1:]
		list, ok := cur.([]any)
		if !ok || i >= len(list) {
			return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "%s has no element [%d]", walked, i)
		}
		cur = list[i]
		walked += fmt.Sprintf("[%d]", i)
	}
	return cur, nil
}

func (b *Binder) result(name string) (any, error) {
	if v, ok := b.decoded[name]; ok {
		return v, nil
	}
	raw, ok := b.Results[name]
	if !ok {
		return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "step @%s has no result", name)
	}
	v, err := rbtype.DecodeJSON(raw)
	if err != nil {
		return nil, handler.Errorf(rbtype.CodeMissingRequiredContext, "step @%s's result is not JSON: %v", name, err)
	}
	if b.decoded == nil {
		b.decoded = map[string]any{}
	}
	b.decoded[name] = v
	return v, nil
}

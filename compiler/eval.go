package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/rbtype"
)

// LitKey marks a value EvalForm put in place of an element's $elem: it
// stands for itself, and nothing inside it is read as a marker, since an
// element comes from a result, which anyone outside may have shaped
// (a result holding {"$ref": ...} must never read another step).
const LitKey = "$lit"

// missingKey marks an element's path that the element lacks; reading it
// is MISSING_REQUIRED_CONTEXT, except under exists and default.
const missingKey = "$missing"

// FormEnv is what EvalForm needs of the runtime that resolves a step's
// values: the runtime's binder (docs/reference/values.md).
type FormEnv interface {
	// Resolve resolves a plan value: its markers replaced by their values.
	Resolve(v any) (any, error)
	// Status is the status step key settled with (one of
	// lang.StepStatuses); an error when it has not settled.
	Status(key string) (string, error)
	// Decide decides a frozen condition.
	Decide(c *Cond) (bool, error)
	// IsMissing reports whether err says a reference found nothing.
	IsMissing(err error) bool
}

// FormError is an error of a v1.4 form at run time, with the error code
// the step fails with.
type FormError struct {
	Code    rbtype.ErrorCode
	Message string
}

func (e *FormError) Error() string { return e.Message }

// IsFormMarker reports whether a one-key object is a marker EvalForm
// resolves.
func IsFormMarker(m map[string]any) bool {
	if len(m) != 1 {
		return false
	}
	for k := range m {
		switch k {
		case StatusKey, DefaultKey, CountKey, FilterKey, AnyKey, AllKey, ElemKey, LitKey, missingKey, IndexKey:
			return true
		}
	}
	return false
}

// EvalForm resolves a marker of v1.4's value forms (see StatusKey): ok is
// false when m is none. It is pure: everything it reads comes through env,
// so the runtime and tests share it.
//
//   - $status is env.Status of its step.
//   - $default is its reference's value when that is present and not null,
//     else its fallback's; only a missing reference is replaced, any other
//     error stands.
//   - $count is the length of its list; anything but a list fails
//     SCHEMA_VALIDATION_FAILED.
//   - $filter, $any and $all decide their condition once per element, in
//     order, with the element in place of each $elem naming it; any and
//     all stop at the first element that decides.
//   - $lit is its value; $elem outside its form is INTERNAL (a plan the
//     compiler did not write).
func EvalForm(m map[string]any, env FormEnv) (out any, ok bool, err error) {
	if !IsFormMarker(m) {
		return nil, false, nil
	}
	for k, v := range m {
		switch k {
		case LitKey:
			return v, true, nil
		case missingKey:
			p, _ := v.(string)
			return nil, true, &FormError{Code: rbtype.CodeMissingRequiredContext, Message: "the element has no " + p}
		case ElemKey:
			return nil, true, &FormError{Code: rbtype.CodeInternal, Message: fmt.Sprintf("@%v is the element of filter, any or all, read outside its condition", v)}
		case StatusKey:
			key, _ := v.(string)
			st, err := env.Status(key)
			return st, true, err
		case DefaultKey:
			out, err := evalDefault(v, env)
			return out, true, err
		case IndexKey:
			spec, _ := v.(map[string]any)
			path, _ := spec["path"].(string)
			list, err := resolveList(spec["list"], env, "for-each")
			if err != nil {
				return nil, true, err
			}
			got, found := walkPath(list, path)
			if !found {
				return nil, true, &FormError{Code: rbtype.CodeMissingRequiredContext, Message: "the list has no " + path}
			}
			return got, true, nil
		case CountKey:
			list, err := resolveList(v, env, "count")
			if err != nil {
				return nil, true, err
			}
			return json.Number(strconv.Itoa(len(list))), true, nil
		default:
			out, err := evalElements(k, v, env)
			return out, true, err
		}
	}
	return nil, false, nil
}

func evalDefault(v any, env FormEnv) (any, error) {
	pair, ok := v.([]any)
	if !ok || len(pair) != 2 {
		return nil, &FormError{Code: rbtype.CodeInternal, Message: "$default holds a reference and a value"}
	}
	got, err := env.Resolve(pair[0])
	if err != nil && !isMissing(err, env) {
		return nil, err
	}
	if err == nil && got != nil {
		return got, nil
	}
	return env.Resolve(pair[1])
}

func isMissing(err error, env FormEnv) bool {
	var fe *FormError
	if errors.As(err, &fe) {
		return fe.Code == rbtype.CodeMissingRequiredContext
	}
	return env.IsMissing(err)
}

func resolveList(v any, env FormEnv, form string) ([]any, error) {
	got, err := env.Resolve(v)
	if err != nil {
		return nil, err
	}
	list, ok := got.([]any)
	if !ok {
		return nil, &FormError{Code: rbtype.CodeSchemaValidationFailed, Message: fmt.Sprintf("(%s ...) goes through a list, and %s is not one", form, Text([]any{got}))}
	}
	return list, nil
}

// evalElements evaluates $filter, $any or $all.
func evalElements(key string, v any, env FormEnv) (any, error) {
	form := strings.TrimPrefix(key, "$")
	spec, ok := v.(map[string]any)
	name, _ := spec["as"].(string)
	if !ok || name == "" || spec["where"] == nil {
		return nil, &FormError{Code: rbtype.CodeInternal, Message: key + " holds a list, as and where"}
	}
	where, err := condOf(spec["where"])
	if err != nil {
		return nil, &FormError{Code: rbtype.CodeInternal, Message: key + ": " + err.Error()}
	}
	list, err := resolveList(spec["list"], env, form)
	if err != nil {
		return nil, err
	}
	kept := []any{}
	for _, elem := range list {
		holds, err := env.Decide(SubstituteElem(where, name, elem))
		if err != nil {
			return nil, err
		}
		switch {
		case key == AnyKey && holds:
			return true, nil
		case key == AllKey && !holds:
			return false, nil
		case key == FilterKey && holds:
			kept = append(kept, elem)
		}
	}
	switch key {
	case AnyKey:
		return false, nil
	case AllKey:
		return true, nil
	}
	return kept, nil
}

// condOf reads a frozen condition held in a plan value: a *Cond as the
// compiler builds it, or its JSON as a plan read back holds it.
func condOf(v any) (*Cond, error) {
	if c, ok := v.(*Cond); ok {
		return c, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	c := &Cond{}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, err
	}
	return c, nil
}

// SubstituteElem returns c with every {"$elem": "name..."} replaced by
// what the element holds at that path, as a $lit, or a $missing marker
// when the element lacks the path. Markers of other elements (an inner
// form's) are left for their own form.
func SubstituteElem(c *Cond, name string, elem any) *Cond {
	out := &Cond{Op: c.Op, Args: make([]any, len(c.Args))}
	for i, arg := range c.Args {
		if sub, ok := arg.(*Cond); ok {
			out.Args[i] = SubstituteElem(sub, name, elem)
			continue
		}
		out.Args[i] = substituteValue(arg, name, elem)
	}
	return out
}

func substituteValue(v any, name string, elem any) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			if _, lit := v[LitKey]; lit {
				return v // a value already put in place: never looked into
			}
			if ref, ok := v[ElemKey].(string); ok {
				if ref != name && !strings.HasPrefix(ref, name+".") && !strings.HasPrefix(ref, name+"[") {
					return v
				}
				got, ok := walkPath(elem, ref[len(name):])
				if !ok {
					return map[string]any{missingKey: "@" + ref}
				}
				return map[string]any{LitKey: got}
			}
		}
		out := make(map[string]any, len(v))
		for k, item := range v {
			out[k] = substituteValue(item, name, elem)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = substituteValue(item, name, elem)
		}
		return out
	case *Cond:
		return SubstituteElem(v, name, elem)
	}
	return v
}

// walkPath follows ".field" and "[i]" steps into a JSON value.
func walkPath(cur any, rest string) (any, bool) {
	for rest != "" {
		if rest[0] == '.' {
			end := strings.IndexAny(rest[1:], ".[")
			var field string
			if end < 0 {
				field, rest = rest[1:], ""
			} else {
				field, rest = rest[1:end+1], rest[end+1:]
			}
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = obj[field]; !ok {
				return nil, false
			}
			continue
		}
		end := strings.IndexByte(rest, ']')
		if rest[0] != '[' || end < 0 {
			return nil, false
		}
		i, err := strconv.Atoi(rest[1:end])
		rest = rest[end+1:]
		list, ok := cur.([]any)
		if err != nil || i < 0 || !ok || i >= len(list) {
			return nil, false
		}
		cur = list[i]
	}
	return cur, true
}

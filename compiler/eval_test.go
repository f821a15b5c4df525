package compiler

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runbookdev/runbook/lang"
	"github.com/runbookdev/runbook/rbtype"
)

// evalEnv is a plain FormEnv over results and statuses, with a condition
// decider for = != and or not exists: enough to run EvalForm as the
// runtime's binder does.
type evalEnv struct {
	results  map[string]any
	statuses map[string]string
}

var errNoResult = errors.New("missing")

func (e *evalEnv) Resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if out, ok, err := EvalForm(v, e); ok {
			return out, err
		}
		if ref, ok := v[RefKey].(string); ok && len(v) == 1 {
			name, rest := ref, ""
			if i := strings.IndexAny(ref, ".["); i >= 0 {
				name, rest = ref[:i], ref[i:]
			}
			got, ok := walkPath(e.results[name], rest)
			if !ok || e.results[name] == nil {
				return nil, errNoResult
			}
			return got, nil
		}
		out := map[string]any{}
		for k, item := range v {
			r, err := e.Resolve(item)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			r, err := e.Resolve(item)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (e *evalEnv) Status(key string) (string, error) {
	if st, ok := e.statuses[key]; ok {
		return st, nil
	}
	return "", errors.New("not settled")
}

func (e *evalEnv) IsMissing(err error) bool { return errors.Is(err, errNoResult) }

func (e *evalEnv) Decide(c *Cond) (bool, error) {
	switch c.Op {
	case lang.OpAnd, lang.OpOr:
		for _, a := range c.Args {
			v, err := e.Decide(a.(*Cond))
			if err != nil || v == (c.Op == lang.OpOr) {
				return v, err
			}
		}
		return c.Op == lang.OpAnd, nil
	case lang.OpNot:
		v, err := e.Decide(c.Args[0].(*Cond))
		return !v, err
	case lang.OpExists:
		v, err := e.Resolve(c.Args[0])
		return err == nil && v != nil, nil
	}
	x, err := e.Resolve(c.Args[0])
	if err != nil {
		return false, err
	}
	y, err := e.Resolve(c.Args[1])
	if err != nil {
		return false, err
	}
	eq := string(appendJSON(nil, x)) == string(appendJSON(nil, y))
	return eq == (c.Op == lang.OpEq), nil
}

// decodeValue reads a plan value as a plan read back holds it.
func decodeValue(t *testing.T, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEvalForm(t *testing.T) {
	env := &evalEnv{
		results: map[string]any{
			"users":  decodeValue(t, `{"items":[{"id":"ann","env":"prod","keep":true},{"id":"bob","env":"dev"},{"id":"cy","env":"prod","keep":false,"ref":{"$ref":"secret.token"}}]}`),
			"review": decodeValue(t, `{"decision":null}`),
			"secret": decodeValue(t, `{"token":"s3cret"}`),
		},
		statuses: map[string]string{"review": "failed"},
	}
	cases := []struct {
		name, value, want string
		code              rbtype.ErrorCode
	}{
		{"status", `{"$status":"review"}`, `"failed"`, ""},
		{"default of null", `{"$default":[{"$ref":"review.decision"},"revoke"]}`, `"revoke"`, ""},
		{"default of missing", `{"$default":[{"$ref":"review.reason"},"none"]}`, `"none"`, ""},
		{"default of present", `{"$default":[{"$ref":"users.items[0].id"},"x"]}`, `"ann"`, ""},
		{"count", `{"$count":{"$ref":"users.items"}}`, `3`, ""},
		{"count of no list", `{"$count":{"$ref":"users.items[0].id"}}`, ``, rbtype.CodeSchemaValidationFailed},
		{"filter", `{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.env"},"prod"]}}}`,
			`[{"env":"prod","id":"ann","keep":true},{"env":"prod","id":"cy","keep":false,"ref":{"$ref":"secret.token"}}]`, ""},
		{"any", `{"$any":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.id"},"bob"]}}}`, `true`, ""},
		{"all", `{"$all":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.env"},"prod"]}}}`, `false`, ""},
		{"all of empty", `{"$all":{"list":[],"as":"u","where":{"op":"=","args":[{"$elem":"u"},1]}}}`, `true`, ""},
		{"exists of a missing element field", `{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"exists","args":[{"$elem":"u.keep"}]}}}`,
			`[{"env":"prod","id":"ann","keep":true},{"env":"prod","id":"cy","keep":false,"ref":{"$ref":"secret.token"}}]`, ""},
		{"missing element field", `{"$any":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.keep"},true]}}}`, `true`, ""},
		{"missing element field fails all", `{"$all":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.keep"},true]}}}`, ``, rbtype.CodeMissingRequiredContext},
		{"missing field fails", `{"$any":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.keep"},"x"]}}}`, ``, rbtype.CodeMissingRequiredContext},
		{"default of an element field", `{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$default":[{"$elem":"u.keep"},true]},true]}}}`,
			`[{"env":"prod","id":"ann","keep":true},{"env":"dev","id":"bob"}]`, ""},
		// An element's value that looks like a marker is data: it never
		// reads another step's result.
		{"element is data", `{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$default":[{"$elem":"u.ref"},""]},"s3cret"]}}}`, `[]`, ""},
		{"an element of a filtered list", `{"$index":{"list":{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.env"},"prod"]}}},"path":"[1].id"}}`, `"cy"`, ""},
		{"past a filtered list", `{"$index":{"list":{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$elem":"u.env"},"prod"]}}},"path":"[2]"}}`, ``, rbtype.CodeMissingRequiredContext},
		{"nested", `{"$count":{"$filter":{"list":{"$ref":"users.items"},"as":"u","where":{"op":"=","args":[{"$any":{"list":["prod","stage"],"as":"e","where":{"op":"=","args":[{"$elem":"e"},{"$elem":"u.env"}]}}},true]}}}}`, `2`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := env.Resolve(decodeValue(t, c.value))
			if c.code != "" {
				var fe *FormError
				if !errors.As(err, &fe) || fe.Code != c.code {
					t.Fatalf("got %v, %v; want error %s", got, err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if text := string(appendJSON(nil, got)); text != c.want {
				t.Errorf("got %s, want %s", text, c.want)
			}
		})
	}
}

func TestEvalFormIgnoresOtherMarkers(t *testing.T) {
	for _, m := range []map[string]any{{RefKey: "a"}, {"$status": "a", "x": 1}, {}} {
		if _, ok, _ := EvalForm(m, &evalEnv{}); ok {
			t.Errorf("EvalForm took %v", m)
		}
	}
}

func TestSubstituteElemLeavesOtherElements(t *testing.T) {
	c := &Cond{Op: "=", Args: []any{map[string]any{ElemKey: "other.x"}, map[string]any{ElemKey: "u.x"}}}
	got := SubstituteElem(c, "u", map[string]any{"x": "v"})
	want := []any{map[string]any{ElemKey: "other.x"}, map[string]any{LitKey: "v"}}
	if !reflect.DeepEqual(got.Args, want) {
		t.Errorf("got %v, want %v", got.Args, want)
	}
}

package verbs

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/rbtype"
)

// fullExecution sets every field of a block, each call with fresh maps.
func fullExecution() Execution {
	park, maxPark, remind := MustDuration("PT1H"), MustDuration("PT4H"), MustDuration("PT30M")
	return Execution{
		Kind: rbtype.KindDurable, Handler: "http.start", Params: map[string]any{"url": "https://a.example/x"},
		SideEffects: rbtype.SideEffectsExternalCall,
		Idempotency: Idempotency{Scope: rbtype.ScopeRunbook, KeyFields: []string{"id"}, ProviderDedupes: new(bool)},
		Timeouts: Timeouts{ParkTimeout: &park, MaxPark: &maxPark, RunTimeout: MustDuration("PT30S"), OnTimeout: rbtype.OnTimeoutEscalate,
			Escalation: &Compensation{Verb: "t.page", Args: map[string]any{"who": "@args.id"}}, RemindAfter: &remind},
		Retry: Retry{MaxAttempts: 3, Backoff: rbtype.BackoffFixed, BaseDelay: MustDuration("PT1S"), MaxDelay: MustDuration("PT5M"),
			ByCode: map[rbtype.ErrorCode]CodeRetry{rbtype.CodeRateLimit: {MaxAttempts: 5, Base: MustDuration("PT2S"), Cap: MustDuration("PT2M")}}},
		Gate:         rbtype.GateHumanConfirm,
		OnFailure:    rbtype.OnFailureContinue,
		Determinism:  rbtype.DeterminismStable,
		Level:        rbtype.LevelFull,
		Cache:        &Cache{Policy: rbtype.CacheTTL, TTL: &maxPark},
		Compensation: &Compensation{Verb: "t.undo", Args: map[string]any{"id": "@args.id"}},
		PolicyTags:   []string{"external_send"},
		Approvers:    "compliance",
	}
}

// TestExecutionEqualSeesEveryField changes each field of a block in turn,
// found by reflection, and requires Equal to see it. Plans hash a step's
// block by comparing it with its neighbour's; a field Equal missed would
// let an edited block hide behind another step's bytes.
func TestExecutionEqualSeesEveryField(t *testing.T) {
	base := fullExecution()
	same := fullExecution()
	require.True(t, base.Equal(&base))
	require.True(t, base.Equal(&same), "equal values in different maps")

	var walk func(typ reflect.Type, path []int, name string)
	checked := 0
	walk = func(typ reflect.Type, path []int, name string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() == reflect.Struct {
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(f.Type, append(clonePath(path), i), name+"."+f.Name)
				if f.Type.Kind() == reflect.Pointer {
					edited := fullExecution()
					fieldAt(&edited, append(clonePath(path), i)).SetZero()
					require.False(t, base.Equal(&edited), "%s.%s set to nil", name, f.Name)
				}
			}
			return
		}
		edited := fullExecution()
		v := fieldAt(&edited, path)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Pointer:
			if v.Elem().Kind() != reflect.Bool {
				t.Fatalf("%s is a pointer to %s: teach this test (and Execution.Equal) about it", name, v.Elem().Kind())
			}
			v.Elem().SetBool(!v.Elem().Bool())
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Map:
			// A key and a value of the map's own types: the value's zero
			// (an empty policy, say) still differs from a missing entry.
			v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf("x")))
		default:
			t.Fatalf("%s is a %s: teach this test (and Execution.Equal) about it", name, v.Kind())
		}
		require.False(t, base.Equal(&edited), "%s changed", name)
		require.False(t, edited.Equal(&base), "%s changed", name)
		checked++
	}
	walk(reflect.TypeFor[Execution](), nil, "Execution")
	require.Greater(t, checked, 15)

	// Nil and empty are the same JSON, so Equal may call them equal.
	a, b := fullExecution(), fullExecution()
	a.Params, b.Params = nil, map[string]any{}
	require.True(t, a.Equal(&b))
	for _, e := range []Execution{a, b} {
		text, err := json.Marshal(e)
		require.NoError(t, err)
		require.NotContains(t, string(text), "params")
	}
}

func clonePath(path []int) []int { return append([]int(nil), path...) }

// fieldAt finds the field at path in e, following pointers.
func fieldAt(e *Execution, path []int) reflect.Value {
	v := reflect.ValueOf(e).Elem()
	for _, i := range path {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

package machine

import (
	"errors"

	"github.com/runbookdev/runbook/compiler"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// The binder resolves v1.4's value forms (status, default, count, filter,
// any, all; docs/reference/values.md) through compiler.EvalForm, which
// holds their meaning; these methods are what it reads through.

// form resolves a marker of a v1.4 form; ok is false for any other value.
func (b *Binder) form(v map[string]any) (out any, ok bool, err error) {
	out, ok, err = compiler.EvalForm(v, formEnv{b})
	if err != nil {
		var fe *compiler.FormError
		if errors.As(err, &fe) {
			err = handler.Errorf(fe.Code, "%s", fe.Message)
		}
	}
	return out, ok, err
}

// formEnv is the binder seen by compiler.EvalForm.
type formEnv struct{ b *Binder }

func (e formEnv) Resolve(v any) (any, error) { return e.b.Resolve(v) }

// Status is the status a step settled with. A binder made without
// statuses (b.status nil) cannot say, and the step fails INTERNAL rather
// than decide a status test on a guess.
func (e formEnv) Status(key string) (string, error) {
	if e.b.status == nil {
		return "", handler.Errorf(rbtype.CodeInternal, "(status @%s) is read where step statuses are not known", key)
	}
	st, ok := e.b.status(key)
	if !ok {
		return "", handler.Errorf(rbtype.CodeInternal, "(status @%s) is read before @%s settled", key, key)
	}
	return st, nil
}

func (e formEnv) Decide(c *compiler.Cond) (bool, error) {
	v, err := evalCond(c, e.b)
	if err != nil {
		return false, err
	}
	return v, nil
}

func (e formEnv) IsMissing(err error) bool { return isMissing(err) }

package handler

import "github.com/runbookdev/runbook/rbtype"

// Spec describes a handler to the compiler: its name, its kind, and
// how to check the static params a verb gives it. The Go code that runs it
// is a Handler registered under the same name (builtin's, or a program's
// own through runtime.Handlers.Register).
type Spec struct {
	Name    string
	Kind    rbtype.Kind
	Summary string
	// CheckParams validates a verb's execution.params when the verb is
	// loaded, so a bad table name or URL is found by `rbc lint`, not at
	// three in the morning. Nil accepts any params.
	CheckParams func(params map[string]any) error
	// DryRun says the handler can say what it would do without doing it,
	// which execution level full requires (V031).
	DryRun bool
}

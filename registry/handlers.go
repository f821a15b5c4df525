package registry

import (
	"fmt"
	"maps"
	"slices"

	"github.com/runbookdev/runbook/rbtype"
)

// HandlerSpec describes a handler to the compiler: its name, its kind, and
// how to check the static params a verb gives it. The Go code that runs it
// lives in package runtime, registered under the same name.
type HandlerSpec struct {
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

// Handlers is the set of handler names a build knows.
type Handlers struct {
	specs map[string]HandlerSpec
}

// NewHandlers returns a set holding the built-in handlers of docs/design/verbs.md.
func NewHandlers() *Handlers {
	h := &Handlers{specs: map[string]HandlerSpec{}}
	for _, s := range builtinSpecs() {
		h.specs[s.Name] = s
	}
	return h
}

// Register adds a handler, as a program embedding the runtime does for its
// own. A name may be registered once.
func (h *Handlers) Register(spec HandlerSpec) error {
	if spec.Name == "" {
		return fmt.Errorf("handler has no name")
	}
	if spec.Kind != rbtype.KindSync && spec.Kind != rbtype.KindDurable {
		return fmt.Errorf("handler %q: kind must be sync or durable, not %q", spec.Name, spec.Kind)
	}
	if _, dup := h.specs[spec.Name]; dup {
		return fmt.Errorf("handler %q is already registered", spec.Name)
	}
	h.specs[spec.Name] = spec
	return nil
}

// Lookup finds a handler by name.
func (h *Handlers) Lookup(name string) (HandlerSpec, bool) {
	s, ok := h.specs[name]
	return s, ok
}

// Names lists the handler names, sorted.
func (h *Handlers) Names() []string { return slices.Sorted(maps.Keys(h.specs)) }

package registry

import (
	"fmt"
	"maps"
	"slices"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// HandlerSpec describes a handler to the compiler (handler.Spec): the
// built-ins' are package builtin's, beside their code.
type HandlerSpec = handler.Spec

// Handlers is the set of handler names a build knows.
type Handlers struct {
	specs map[string]HandlerSpec
}

// NewHandlers returns a set holding the built-in handlers of docs/design/verbs.md.
func NewHandlers() *Handlers {
	h := &Handlers{specs: map[string]HandlerSpec{}}
	for _, s := range builtin.Specs() {
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

package runtime

import (
	"fmt"
	"maps"
	"slices"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/registry"
)

// Handlers is the set of handlers a runtime can call, each with the spec
// the compiler checks verbs against.
type Handlers struct {
	specs *registry.Handlers
	impls map[string]Handler
}

// NewHandlers returns the built-in handlers of docs/design/verbs.md. deps gives the
// ones that need the outside world what they need.
func NewHandlers(deps builtin.Deps) *Handlers {
	h := &Handlers{specs: registry.NewHandlers(), impls: map[string]Handler{}}
	for name, impl := range builtin.Handlers(deps) {
		h.impls[name] = impl
	}
	return h
}

// Register adds a program's own handler under its own name. The spec's
// kind and params check are what `rbc` and submissions check verbs with.
func (h *Handlers) Register(spec registry.HandlerSpec, impl Handler) error {
	if impl == nil {
		return fmt.Errorf("handler %q has no implementation", spec.Name)
	}
	if err := h.specs.Register(spec); err != nil {
		return err
	}
	h.impls[spec.Name] = impl
	return nil
}

// Specs is the handler table for building catalogues.
func (h *Handlers) Specs() *registry.Handlers { return h.specs }

// Names lists the handlers, sorted.
func (h *Handlers) Names() []string { return slices.Sorted(maps.Keys(h.impls)) }

func (h *Handlers) lookup(name string) (Handler, bool) {
	impl, ok := h.impls[name]
	return impl, ok
}

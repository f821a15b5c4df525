package runtime

// BuiltinHandler exposes a registered handler to tests.
func BuiltinHandler(h *Handlers, name string) Handler {
	impl, _ := h.lookup(name)
	return impl
}

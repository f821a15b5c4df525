package builtin

import (
	"net/http"
	"os"
	"regexp"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/handler"
	"github.com/runbookdev/runbook/rbtype"
)

// Deps gives the built-in handlers what they need of the outside
// world.
type Deps struct {
	// HTTP sends http.call and http.start requests; nil means a client
	// with no timeout of its own (each call is bounded by its verb's
	// run_timeout).
	HTTP *http.Client
	// CRUD runs pg.crud; nil makes pg.crud fail with
	// DEPENDENCY_UNAVAILABLE.
	CRUD driver.CRUDExecutor
	// DaemonSchema is the schema of rbd's own tables, which pg.crud
	// refuses to touch; empty means migrations.DefaultSchema.
	DaemonSchema string
	// LookupEnv resolves ${env:NAME} in handler params, so that secrets
	// live in the daemon's environment, never in verb files, plans or
	// events. Nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// builtinHandler is one built-in handler: its declaration and its code,
// defined together in the handler's own file.
type builtinHandler struct {
	spec handler.Spec
	impl func(Deps) handler.Handler
}

// builtins are the built-in handlers of docs/design/verbs.md.
var builtins = []builtinHandler{echoBuiltin, failBuiltin, httpCallBuiltin, httpStartBuiltin, awaitBuiltin, sleepBuiltin, crudBuiltin}

// Specs are the built-in handlers' declarations, with the params each
// accepts: what rbc and the registry check verbs against.
func Specs() []handler.Spec {
	out := make([]handler.Spec, len(builtins))
	for i, b := range builtins {
		out[i] = b.spec
	}
	return out
}

// Handlers are the built-in handlers' implementations by name, given what
// they need of the outside world.
func Handlers(deps Deps) map[string]handler.Handler {
	if deps.HTTP == nil {
		deps.HTTP = &http.Client{}
	}
	deps.HTTP = withRedirectCheck(deps.HTTP)
	if deps.LookupEnv == nil {
		deps.LookupEnv = os.LookupEnv
	}
	out := make(map[string]handler.Handler, len(builtins))
	for _, b := range builtins {
		out[b.spec.Name] = b.impl(deps)
	}
	return out
}

// envReference is ${env:NAME} in a handler param.
var envReference = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${env:NAME} with the variable's value. A missing
// variable fails the call: sending a literal placeholder as a credential
// would only fail later, less clearly.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var missing string
	out := envReference.ReplaceAllStringFunc(s, func(m string) string {
		name := envReference.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		if !ok && missing == "" {
			missing = name
		}
		rememberSecret(name, v)
		return v
	})
	if missing != "" {
		return "", handler.Errorf(rbtype.CodeDependencyUnavailable, "environment variable %s, named in the verb's params, is not set", missing)
	}
	return out, nil
}

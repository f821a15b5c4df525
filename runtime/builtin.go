package runtime

import (
	"net/http"
	"os"
	"regexp"

	"github.com/runbookdev/runbook/driver"
	"github.com/runbookdev/runbook/rbtype"
)

// BuiltinDeps gives the built-in handlers what they need of the outside
// world.
type BuiltinDeps struct {
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

func builtinHandlers(deps BuiltinDeps) map[string]Handler {
	if deps.HTTP == nil {
		deps.HTTP = &http.Client{}
	}
	deps.HTTP = withRedirectCheck(deps.HTTP)
	if deps.LookupEnv == nil {
		deps.LookupEnv = os.LookupEnv
	}
	return map[string]Handler{
		"core.echo":          echoHandler{},
		"core.fail":          HandlerFunc(fail),
		"http.call":          &httpCall{deps: deps},
		"http.start":         &httpStart{deps: deps},
		"await.notification": HandlerFunc(awaitNotification),
		"timer.sleep":        HandlerFunc(sleep),
		"pg.crud":            &crud{exec: deps.CRUD, daemonSchema: deps.DaemonSchema},
	}
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
		return "", Errorf(rbtype.CodeDependencyUnavailable, "environment variable %s, named in the verb's params, is not set", missing)
	}
	return out, nil
}

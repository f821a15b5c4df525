package builtin

import (
	"net/url"
	"strings"
	"sync"
)

// urlSecrets are the values ${env:NAME} references have been replaced by
// in the built-in handlers' params, by name: redactURL puts the reference
// back wherever one appears in a URL shown in a step's error, an event, a
// dry run's result or the log (docs/verbs.md). A secret may sit in a URL's
// path (https://hooks.example/${env:HOOK_TOKEN}/send) as well as its
// query, which redactURL drops; a URL a service redirects to may carry it
// too. The values are the daemon's own environment's, known to the
// process already: keeping them here reveals nothing more.
var urlSecrets sync.Map // name → value

// minSecretLength is the shortest value redacted: replacing a one- or
// two-character value everywhere would garble every URL and hide nothing
// worth hiding.
const minSecretLength = 3

// rememberSecret notes that ${env:name} was replaced by value.
func rememberSecret(name, value string) {
	if len(value) >= minSecretLength {
		urlSecrets.Store(name, value)
	}
}

// redactSecrets puts back ${env:NAME} for each secret value in s, as it
// is and as a URL escapes it.
func redactSecrets(s string) string {
	urlSecrets.Range(func(k, v any) bool {
		name, value := k.(string), v.(string)
		ref := "${env:" + name + "}"
		s = strings.ReplaceAll(s, value, ref)
		if esc := url.PathEscape(value); esc != value {
			s = strings.ReplaceAll(s, esc, ref)
		}
		if esc := url.QueryEscape(value); esc != value {
			s = strings.ReplaceAll(s, esc, ref)
		}
		return true
	})
	return s
}

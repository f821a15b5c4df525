package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runbookdev/runbook/apitype"
)

// Under attack (docs/reliability.md), round 4, row 13: a token limited to some verbs could tell a verb
// outside its scope from a missing one (403 against an unknown verb, and
// another message when it asked for the verb), and probe its schema (a
// wrong argument was answered with what the verb takes). Now a verb
// outside the scope is, to that token, exactly a missing verb: the same
// answer, word for word but the name, to every question (403 for a
// runbook that calls either, before any argument is looked at).
func TestAVerbOutsideTheScopeIsAMissingVerb(t *testing.T) {
	t.Parallel()
	e := newDaemonEnv(t)
	verbs := e.file(t, "verbs/t.yaml", scheduleVerbs)
	tokens := e.file(t, "tokens", scheduleTokens)
	d := e.start(t, "--verbs", verbs, "--api-token-file", tokens)

	same := func(what string, ask func(verb string) (int, string)) {
		t.Helper()
		// t.wire exists, outside bob's scope; t.nope does not exist. The
		// names have the same length, so positions in answers match.
		outside, outsideBody := ask("t.wire")
		missing, missingBody := ask("t.nope")
		require.Equal(t, missing, outside, "%s: %s against %s", what, outsideBody, missingBody)
		require.Equal(t, missingBody, strings.ReplaceAll(outsideBody, "t.wire", "t.nope"), what)
	}
	same("GET /v1/verbs?name=", func(verb string) (int, string) {
		return send(t, "GET", d.server+"/v1/verbs?name="+verb, "", "Authorization", "Bearer tok-bob")
	})
	same("a submission", func(verb string) (int, string) {
		status, _, out := submitRaw(t, d, "tok-bob", apitype.SubmitRequest{Source: "(" + verb + " :v \"x\")"})
		return status, out
	})
	same("a submission with a wrong argument", func(verb string) (int, string) {
		status, _, out := submitRaw(t, d, "tok-bob", apitype.SubmitRequest{Source: "(" + verb + " :bogus 1)"})
		return status, out
	})
	// Both are what docs/design/semantics.md section 10 says of a verb
	// outside the scope: 403, naming the step and the verb.
	status, _, out := submitRaw(t, d, "tok-bob", apitype.SubmitRequest{Source: `(t.nope :v "x" :as @n)`})
	require.Equal(t, http.StatusForbidden, status, out)
	require.Contains(t, out, `step \"n\" calls verb t.nope, which this token's scope (verbs=t.echo) does not allow`)
	// A token that may use it still does.
	status, _, out = submitRaw(t, d, "tok-ann", apitype.SubmitRequest{Source: `(t.wire :v "x")`})
	require.Less(t, status, 300, out)
}

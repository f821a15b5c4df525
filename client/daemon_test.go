package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/httpapi"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// The daemon the tests and the examples talk to: a real engine on
// PostgreSQL behind the real API, with a token and a webhook secret.
const (
	testToken  = "client-test-token tenant=acme actor=agent-7 roles=read,submit,approve,notify"
	testSecret = "whsec-client-test"
)

// exampleVerbs are the verbs the examples call: an onboarding that asks
// the client for documents and waits for them, then records them.
const exampleVerbs = `
- name: request-documents
  domain: kyc
  description: Asks the client for their documents; the portal notifies when they arrive.
  policy_tags: [client_request]
  execution:
    kind: durable
    handler: await.notification
    side_effects: human_process
    timeouts: {park_timeout: P7D}
  input_schema:
    required: [client]
    properties:
      client: {type: string}
  output_schema:
    properties:
      documents: {type: array, items: {type: string}}
- name: record
  domain: kyc
  execution: {kind: sync, handler: core.echo, side_effects: internal_db}
  input_schema:
    properties:
      documents: {type: array, items: {type: string}}
- name: sign-off
  domain: kyc
  execution: {kind: sync, handler: core.echo, side_effects: external_call, gate: human_confirm}
`

// TestMain runs the tests and examples against a daemon of their own, whose
// address and token are in RBD_SERVER and RBD_TOKEN and whose webhook
// secret is in the file RBD_WEBHOOK_SECRET_FILE names, as for rbd's own
// commands.
func TestMain(m *testing.M) { os.Exit(pgtest.Wrap(daemon{m}).Run()) }

type daemon struct{ m *testing.M }

func (d daemon) Run() int {
	stop, err := startDaemon()
	if err != nil {
		fmt.Fprintf(os.Stderr, "client tests: %v\n", err)
		return 1
	}
	defer stop()
	return d.m.Run()
}

func startDaemon() (stop func(), err error) {
	store, dropStore := pgtest.ExampleStore()
	handlers := runtime.NewHandlers(builtin.Deps{})
	defs, diags := verbs.Parse("kyc.yaml", []byte(exampleVerbs))
	if diags.HasErrors() {
		dropStore()
		return nil, diags
	}
	cat, diags := registry.New(defs, handlers.Specs())
	if diags.HasErrors() {
		dropStore()
		return nil, diags
	}
	// The request for documents reaches a person (human_process): the
	// operator lets it go out unattended by its tag (docs/reference/policy.md).
	pol, err := policy.Parse("policy.yaml", []byte("default:\n  auto_exec: [read_only, client_request]\n"), policy.KnownTags(cat.PolicyTags()))
	if err != nil {
		dropStore()
		return nil, err
	}
	engine := runtime.New(store, handlers, runtime.Config{Catalogue: cat, PollInterval: 20 * time.Millisecond, SweepInterval: 100 * time.Millisecond,
		Policy: func() *policy.Policy { return pol }})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- engine.Run(ctx) }()
	api := httpapi.New(httpapi.Config{
		Engine: engine, Catalogue: cat, Tokens: []string{testToken}, WebhookSecrets: [][]byte{[]byte(testSecret)},
		EventPoll: 20 * time.Millisecond, Version: "test",
	})
	srv := httptest.NewServer(api)
	dir, err := os.MkdirTemp("", "client-test")
	if err != nil {
		srv.Close()
		cancel()
		<-stopped
		dropStore()
		return nil, err
	}
	secretFile := filepath.Join(dir, "webhook-secret")
	err = os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600)
	for k, v := range map[string]string{"RBD_SERVER": srv.URL, "RBD_TOKEN": "client-test-token", "RBD_WEBHOOK_SECRET_FILE": secretFile} {
		if err == nil {
			err = os.Setenv(k, v)
		}
	}
	return func() {
		api.CloseStreams()
		srv.Close()
		cancel()
		<-stopped
		dropStore()
		_ = os.RemoveAll(dir)
	}, err
}

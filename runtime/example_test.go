package runtime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/builtin"
	"github.com/runbookdev/runbook/durable/pgtest"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/runtime"
	"github.com/runbookdev/runbook/verbs"
)

// A program that embeds the runtime registers its own handlers beside the
// built-in ones, the way a River client registers workers, and names them
// in its verb files.
func ExampleHandlers_Register() {
	store, done := pgtest.ExampleStore() // a migrated database of the example's own
	defer done()

	handlers := runtime.NewHandlers(builtin.Deps{})
	err := handlers.Register(
		registry.HandlerSpec{Name: "acme.greet", Kind: rbtype.KindSync, Summary: "greets someone"},
		runtime.HandlerFunc(func(_ context.Context, c *runtime.Call) (runtime.Result, error) {
			name, _ := c.Args["name"].(string)
			return runtime.Complete(map[string]any{"greeting": "hello, " + name}), nil
		}))
	if err != nil {
		panic(err)
	}

	defs, _ := verbs.Parse("acme.yaml", []byte(`
- name: greet
  domain: acme
  execution: {kind: sync, handler: acme.greet, side_effects: none}
  input_schema:
    required: [name]
    properties:
      name: {type: string}
`))
	catalogue, diags := registry.New(defs, handlers.Specs())
	if diags.HasErrors() {
		panic(diags)
	}

	engine := runtime.New(store, handlers, runtime.Config{Catalogue: catalogue, PollInterval: 10 * time.Millisecond})
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- engine.Run(ctx) }()

	sub, err := engine.SubmitSource(ctx, "hello.rbk", []byte(`(acme.greet :name "world" :as @hi)`), runtime.Submission{})
	if err != nil {
		panic(err)
	}
	for {
		view, err := engine.Get(ctx, sub.ID)
		if err != nil {
			panic(err)
		}
		if view.Status == rbtype.RunbookComplete {
			fmt.Println(view.Status, string(view.Outcomes["hi"]))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-stopped
	// Output: complete {"greeting": "hello, world"}
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// A program submits a runbook, waits until it needs the outside world,
// delivers the notification a parked step waits for, and waits for the
// runbook to complete.
func Example() {
	ctx := context.Background()
	c := client.FromEnv() // RBD_SERVER and RBD_TOKEN
	secret, err := os.ReadFile(os.Getenv("RBD_WEBHOOK_SECRET_FILE"))
	if err != nil {
		panic(err)
	}
	c.WebhookSecret = []byte(strings.TrimSpace(string(secret)))

	// Submit: the daemon compiles the source with its verbs and starts it.
	sub, err := c.Submit(ctx, apitype.SubmitRequest{
		Filename:       "onboarding.rbk",
		Source:         "(kyc.request-documents :client $client :as @docs)\n(kyc.record :documents @docs.documents :as @file)\n",
		Inputs:         map[string]any{"client": "Acme Holdings SA"},
		IdempotencyKey: "onboarding-acme-" + client.NewIdempotencyKey(),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("created:", sub.Created)

	// Wait: it settles as soon as the documents step parks.
	view, err := c.Wait(ctx, sub.ID.String())
	if err != nil {
		panic(err)
	}
	fmt.Println("state:", view.State)
	for _, a := range view.NextActions {
		fmt.Println("next:", a.Kind, a.Step)
	}

	// Notify: what the client portal does when the documents arrive.
	ack, err := c.Notify(ctx, apitype.NotificationRequest{
		CorrelationKey: view.BlockedOn[0].CorrelationKey,
		Status:         rbtype.OutcomeCompleted,
		Result:         []byte(`{"documents": ["passport.pdf", "register.pdf"]}`),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("notification:", ack.Status)

	// The step resumes and the rest runs; wait for the end.
	view, err = c.WaitUntil(ctx, sub.ID.String(), client.Finished)
	if err != nil {
		panic(err)
	}
	fmt.Println("status:", view.Status)
	fmt.Println("recorded:", string(view.Outcomes["file"]))
	// Output:
	// created: true
	// state: parked
	// next: notify docs
	// notification: accepted
	// status: complete
	// recorded: {"documents":["passport.pdf","register.pdf"]}
}

// The same Idempotency-Key answers the runbook the first request made,
// whatever became of it: a retry after a lost answer starts nothing new.
func ExampleClient_Submit_idempotencyKey() {
	ctx := context.Background()
	c := client.FromEnv()
	req := apitype.SubmitRequest{
		Source:         "(kyc.record :documents [\"passport.pdf\"])\n",
		IdempotencyKey: client.NewIdempotencyKey(),
	}
	first, err := c.Submit(ctx, req)
	if err != nil {
		panic(err)
	}
	again, err := c.Submit(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Created, again.Created, first.ID == again.ID)
	// Output: true false true
}

// A refusal is an *Error; its code says which, and a source that does not
// compile carries its diagnostics, with their fixes.
func ExampleError() {
	ctx := context.Background()
	c := client.FromEnv()
	_, err := c.Submit(ctx, apitype.SubmitRequest{Filename: "typo.rbk", Source: "(kyc.recrod :documents [])\n"})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && errors.Is(err, client.CodeCompileFailed) {
		for _, d := range apiErr.Diagnostics {
			fmt.Println(d)
			for _, f := range d.Fixes {
				fmt.Println("fix:", f.Message)
			}
		}
	}
	// Output:
	// typo.rbk:1:2: error[E010]: unknown verb "kyc.recrod" (did you mean "kyc.record"?)
	// fix: replace "kyc.recrod" with "kyc.record"
}

// A gate waits for a person; Approve decides it as the token's actor.
func ExampleClient_Approve() {
	ctx := context.Background()
	c := client.FromEnv()
	sub, err := c.Submit(ctx, apitype.SubmitRequest{Source: "(kyc.sign-off :as @sign)\n", IdempotencyKey: client.NewIdempotencyKey()})
	if err != nil {
		panic(err)
	}
	view, err := c.Wait(ctx, sub.ID.String())
	if err != nil {
		panic(err)
	}
	fmt.Println("state:", view.State, view.BlockedOn[0].Reason)
	decided, err := c.Approve(ctx, sub.ID.String(), "sign", apitype.DecisionRequest{By: "alice", Comment: "checked the register"})
	if err != nil {
		panic(err)
	}
	fmt.Println("decision:", decided.Decision)
	view, err = c.WaitUntil(ctx, sub.ID.String(), client.Finished)
	if err != nil {
		panic(err)
	}
	step, _ := view.Step("sign")
	fmt.Println("status:", view.Status, "by", step.GateDecision.By)
	// Output:
	// state: awaiting_approval REQUIRES_APPROVAL
	// decision: approved
	// status: complete by agent-7
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/rbtype"
)

const notifyUsage = `Usage: rbd notify KEY [flags]

Delivers a notification for a correlation key, as an external process
would through the webhook: completed with --result, failed with --failed
CODE, or, with --extend DURATION, a heartbeat that moves the wait's timeout
(the work goes on). It is signed when a webhook secret is given.
`

func runNotify(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("notify", notifyUsage, stdout, stderr)
	result := c.fs.String("result", "", "the result, a JSON value (an object, usually)")
	failedCode := c.fs.String("failed", "", "report a failure with this error code (a retryable code lets the step retry)")
	message := c.fs.String("message", "", "the failure's message, with --failed")
	extend := c.fs.String("extend", "", "a heartbeat: move the wait's timeout to now plus this ISO 8601 duration (P3D), within the verb's max_park")
	secretFile := c.fs.String("webhook-secret-file", "", "sign with the first secret in this file, as rbd serve's --webhook-secret-file")
	c.fs.Env("webhook-secret-file", "RBD_WEBHOOK_SECRET_FILE")
	keys, status, ok := c.parse(args, 1, "one correlation KEY")
	if !ok {
		return status
	}
	req := apitype.NotificationRequest{CorrelationKey: keys[0], Status: rbtype.OutcomeCompleted}
	switch {
	case *extend != "" && (*failedCode != "" || *result != ""):
		return cantRun(stderr, "--extend is a heartbeat: give it without --result or --failed")
	case *extend != "":
		req.Status, req.Extend = rbtype.OutcomeHeartbeat, *extend
	case *failedCode != "" && *result != "":
		return cantRun(stderr, "give --result or --failed, not both")
	case *failedCode != "":
		req.Status = rbtype.OutcomeFailed
		req.Error = &apitype.ErrorView{Code: rbtype.ErrorCode(*failedCode), Message: *message}
	case *message != "":
		return cantRun(stderr, "--message goes with --failed")
	case *result != "":
		if !json.Valid([]byte(*result)) {
			return cantRun(stderr, "--result %q is not JSON", *result)
		}
		req.Result = json.RawMessage(*result)
	}
	cl := c.client()
	c.signs, c.secretGiven = true, *secretFile != ""
	if *secretFile != "" {
		secrets, err := readLines(*secretFile, "--webhook-secret-file")
		if err != nil {
			return cantRun(stderr, "%v", err)
		}
		cl.WebhookSecret = []byte(secrets[0])
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := cl.Notify(ctx, req)
	if err != nil {
		return c.failed(err, nil)
	}
	switch {
	case c.json():
		_ = writeJSON(stdout, res)
	case res.TimeoutAt != nil:
		fmt.Fprintf(stdout, "%s %s: the wait now times out at %s\n", keys[0], res.Status, stamp(*res.TimeoutAt))
	default:
		fmt.Fprintf(stdout, "%s %s\n", keys[0], res.Status)
	}
	return exitOK
}

const decideUsage = `Usage: rbd %s ID STEP [flags]

%s a step waiting at a gate (human_confirm), as --by.
`

func runDecide(verb string, args []string, stdout, stderr io.Writer) int {
	title := "Approves"
	if verb == "reject" {
		title = "Rejects"
	}
	c := newClientCommand(verb, fmt.Sprintf(decideUsage, verb, title), stdout, stderr)
	by := c.fs.String("by", whoAmI(), "who decides (RBD_USER or USER by default)")
	comment := c.fs.String("comment", "", "why, for the ledger")
	pos, status, ok := c.parse(args, 2, "a runbook ID and a STEP")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	decide := c.client().Reject
	if verb == "approve" {
		decide = c.client().Approve
	}
	res, err := decide(ctx, pos[0], pos[1], apitype.DecisionRequest{By: *by, Comment: *comment})
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		// Who the daemon recorded, which for a token that names its actor
		// is that actor, whatever --by said.
		who := res.By
		if who == "" {
			who = *by
		}
		fmt.Fprintf(stdout, "%s: step %s %s by %s\n", res.ID, res.Step, res.Decision, who)
	}
	return exitOK
}

const cancelUsage = `Usage: rbd cancel ID [flags]

Cancels a runbook and undoes what it did: the compensations of its
completed steps run, newest first, unless --no-compensate. Completed work
stays visible; later notifications for it are kept and ignored.
`

func runCancel(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("cancel", cancelUsage, stdout, stderr)
	by := c.fs.String("by", whoAmI(), "who cancels")
	keep := c.fs.Bool("no-compensate", false, "leave what the completed steps did as it is: run no compensation")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	req := apitype.CancelRequest{By: *by}
	if *keep {
		no := false
		req.Compensate = &no
	}
	res, err := c.client().Cancel(ctx, ids[0], req)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s %s\n", res.ID, res.Status)
	}
	return exitOK
}

const resolveUsage = `Usage: rbd resolve ID STEP --action complete|retry|fail [flags]

Settles a step that escalated to a person, or one in doubt (its call
may have reached a provider that ignores idempotency keys): complete it
with --result (for a step in doubt: it happened, and the result is kept
as its receipt), run it again (a durable step parks again), or fail it.
What its escalation skipped runs again.
`

func runResolve(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("resolve", resolveUsage, stdout, stderr)
	action := c.fs.String("action", "", "complete, retry or fail")
	result := c.fs.String("result", "", "the step's result, a JSON value, with --action complete")
	by := c.fs.String("by", whoAmI(), "who resolves")
	pos, status, ok := c.parse(args, 2, "a runbook ID and a STEP")
	if !ok {
		return status
	}
	req := apitype.ResolveRequest{Action: *action, By: *by}
	if *result != "" {
		if !json.Valid([]byte(*result)) {
			return cantRun(stderr, "--result %q is not JSON", *result)
		}
		req.Result = json.RawMessage(*result)
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Resolve(ctx, pos[0], pos[1], req)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s: step %s resolved: %s\n", res.ID, res.Step, res.Action)
	}
	return exitOK
}

const closeUsage = `Usage: rbd close ID [flags]

Lets a runbook submitted with --hold-open finish: it ends as its steps have
ended, or will.
`

func runClose(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("close", closeUsage, stdout, stderr)
	by := c.fs.String("by", whoAmI(), "who closes")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Close(ctx, ids[0], apitype.CloseRequest{By: *by})
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s closed\n", res.ID)
	}
	return exitOK
}

const retryUsage = `Usage: rbd retry ID [flags]

Runs a failed, partial or escalated runbook again from where it stopped:
its failed, skipped, cancelled and escalated steps, or those given with
--step and what their failure skipped, go back to pending. Attempts go on
and idempotency keys stay, so an effect that happened is not repeated.
`

func runRetry(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("retry", retryUsage, stdout, stderr)
	by := c.fs.String("by", whoAmI(), "who asks for the retry")
	var steps cli.ListFlag
	c.fs.Var(&steps, "step", "a step to retry (repeatable; default: every failed, skipped, cancelled and escalated step)")
	execute := c.fs.Bool("execute", false, "run a finished draft_only runbook for real: the steps the draft skipped run, with its drafts")
	ids, status, ok := c.parse(args, 1, "one runbook ID")
	if !ok {
		return status
	}
	return retry(c, ids[0], apitype.RetryRequest{Steps: steps, By: *by, Execute: *execute}, stdout)
}

func retry(c *clientCommand, id string, req apitype.RetryRequest, stdout io.Writer) int {
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Retry(ctx, id, req)
	if err != nil {
		return c.failed(err, nil)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s %s: retrying %s\n", res.ID, res.Status, strings.Join(res.Steps, ", "))
	}
	return exitOK
}

const extendUsage = `Usage: rbd extend ID FILE.rbk [flags]

Adds the calls of FILE.rbk to a running runbook. They may use the results
of its steps; its existing steps do not change.
`

func runExtend(args []string, stdout, stderr io.Writer) int {
	c := newClientCommand("extend", extendUsage, stdout, stderr)
	var inputs inputFlags
	inputs.register(c.fs)
	pos, status, ok := c.parse(args, 2, "a runbook ID and a FILE.rbk")
	if !ok {
		return status
	}
	sources, src, name, err := readSource(pos[1])
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	values, err := inputs.values()
	if err != nil {
		return cantRun(stderr, "%v", err)
	}
	ctx, cancel := c.context()
	defer cancel()
	res, err := c.client().Extend(ctx, pos[0], apitype.ExtendRequest{Source: string(src), Filename: name, Inputs: values, Actor: whoAmI()})
	if err != nil {
		return c.failed(err, sources)
	}
	if c.json() {
		_ = writeJSON(stdout, res)
	} else {
		fmt.Fprintf(stdout, "%s version %d: added %v\n", res.ID, res.Version, res.Steps)
	}
	return exitOK
}

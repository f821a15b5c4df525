package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/cmd/internal/cli"
	"github.com/runbookdev/runbook/rbtype"
)

// maxDetail bounds a table cell showing JSON: the whole value is one
// --format json away.
const maxDetail = 72

func writeJSON(w io.Writer, v any) error { return cli.WriteJSON(w, v) }

// writeJSONLine writes v as one line of JSON (JSON Lines, for streams).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// printRunbook shows a runbook: a header, what it waits on, its steps.
func printRunbook(w io.Writer, v *apitype.RunbookView) { printRunbookFrom(w, v, "") }

// printRunbookFrom is printRunbook with where the runbook came from when
// no one submitted it by hand: the schedule and tick that made it
// (scheduledBy), or "".
func printRunbookFrom(w io.Writer, v *apitype.RunbookView, scheduled string) {
	t := cli.NewTable(w)
	state := string(v.Status)
	if string(v.State) != state {
		state += " (" + string(v.State) + ")"
	}
	fmt.Fprintf(t, "runbook\t%s\n", v.ID)
	if v.Name != "" {
		fmt.Fprintf(t, "name\t%s\n", v.Name)
	}
	fmt.Fprintf(t, "status\t%s\n", state)
	if v.Actor != "" {
		fmt.Fprintf(t, "submitted by\t%s\n", v.Actor)
	}
	if scheduled != "" {
		fmt.Fprintf(t, "scheduled by\t%s\n", scheduled)
	}
	if v.Mode != rbtype.ModeExecute {
		fmt.Fprintf(t, "mode\t%s\n", v.Mode)
	}
	if v.Version > 1 {
		fmt.Fprintf(t, "version\t%d\n", v.Version)
	}
	if v.Lineage.Parent != nil {
		fmt.Fprintf(t, "lineage\tgeneration %d of %s, regenerated from %s\n", v.Lineage.Generation, v.Lineage.Root, *v.Lineage.Parent)
	}
	fmt.Fprintf(t, "created\t%s\n", stamp(v.CreatedAt))
	if v.FinishedAt != nil {
		fmt.Fprintf(t, "finished\t%s\n", stamp(*v.FinishedAt))
	}
	if v.Error != nil {
		fmt.Fprintf(t, "error\t%s\n", errorText(v.Error))
	}
	if v.Reason != nil {
		fmt.Fprintf(t, "reason\t%s\n", errorText(v.Reason))
	}
	for _, p := range v.Produced {
		fmt.Fprintf(t, "produced\t%s %s v%d by %s (rbd outcomes %s)\n", p.Type, p.Status, p.Version, p.Step, p.OutcomeID)
	}
	said := map[string]bool{}
	for _, b := range v.BlockedOn {
		said[b.Step] = true
		fmt.Fprintf(t, "%s\t%s: %s\n", blockedLabel(v.Status), b.Step, blockedText(b))
		if g := b.Gate; g != nil {
			fmt.Fprintf(t, "\t%s\n", gateText(g))
			fmt.Fprintf(t, "\targuments %s\n", compactValue(g.Args))
		}
	}
	if !v.Status.Running() {
		// A finished runbook is blocked on nothing; where it failed is
		// its failures.
		for _, f := range v.Failures {
			if !said[f.Step] {
				fmt.Fprintf(t, "failed at\t%s: %s\n", f.Step, errorText(&apitype.ErrorView{Code: f.Code, Message: f.Message}))
			}
		}
	}
	for _, a := range v.NextActions {
		if a.Message != "" {
			fmt.Fprintf(t, "next\t%s (%s)\n", a.Command, a.Message)
			continue
		}
		fmt.Fprintf(t, "next\t%s\n", a.Command)
	}
	// What would move it but this token may not do: the reason says
	// whom to ask.
	for _, a := range v.UnavailableActions {
		fmt.Fprintf(t, "not yours\t%s (%s)\n", a.Command, a.Reason)
	}
	for _, b := range v.Cost.Budgets {
		fmt.Fprintf(t, "budget\t%s: %s left of %s (%s)%s\n", b.Budget, budgetText(&b.Left), budgetText(&b.Limit), b.Rule, spentMark(b.Exceeded))
	}
	if v.StepsTotal > len(v.Steps) {
		fmt.Fprintf(t, "steps\t%d of %d shown; GET /v1/runbooks/%s?steps_after=N pages through the rest\n", len(v.Steps), v.StepsTotal, v.ID)
	}
	_ = t.Flush()
	fmt.Fprintln(w)
	t = cli.NewTable(w)
	fmt.Fprintln(t, "STEP\tVERB\tSTATUS\tATTEMPT\tDETAIL")
	for _, s := range v.Steps {
		fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%s\n", s.Key, s.Verb, s.Status, s.Attempt, stepDetail(s))
	}
	_ = t.Flush()
}

// blockedLabel names what a blocked-on line is: what a running runbook
// waits on, where a finished one failed or escalated.
func blockedLabel(status rbtype.RunbookStatus) string {
	switch status {
	case rbtype.RunbookFailed, rbtype.RunbookPartial:
		return "failed at"
	case rbtype.RunbookEscalated:
		return "escalated at"
	}
	return "blocked on"
}

// policyReason says in words, whole, what a policy said when it gated a
// step (its POLICY_GATED data): the reason, then the rule and what it
// matched. Data of another shape is shown as compact JSON.
func policyReason(raw json.RawMessage) string {
	var d struct {
		Rule    string `json:"rule"`
		Pattern string `json:"pattern"`
		Tag     string `json:"tag"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || (d.Reason == "" && d.Rule == "") {
		return compact(raw)
	}
	var matched []string
	if d.Rule != "" {
		matched = append(matched, "rule "+d.Rule)
	}
	if d.Tag != "" {
		matched = append(matched, "tag "+d.Tag)
	}
	if d.Pattern != "" && d.Pattern != d.Tag {
		matched = append(matched, "pattern "+d.Pattern)
	}
	if d.Reason == "" {
		return strings.Join(matched, ", ")
	}
	if len(matched) == 0 {
		return d.Reason
	}
	return d.Reason + " (" + strings.Join(matched, ", ") + ")"
}

// gateText says what a gate guards: the verb, its risk, its effect and
// target, and what put the gate there.
func gateText(g *apitype.GateView) string {
	text := fmt.Sprintf("%s, risk %s, %s", g.Verb, g.Risk, g.SideEffects)
	if g.Target != "" {
		text += " on " + g.Target
	}
	switch g.Why {
	case apitype.GatePolicy:
		text += "; gated by the policy: " + policyReason(g.Policy)
	case apitype.GateRisk:
		text += "; gated because its risk is high"
	case apitype.GateVerb:
		text += "; gated by its verb"
	case apitype.GateCall:
		text += "; gated by the runbook (:gate)"
	}
	return text
}

// compactValue is compact for a decoded value.
func compactValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return compact(b)
}

func blockedText(b apitype.BlockedView) string {
	switch b.Reason {
	case apitype.BlockedAwaitingNotification:
		return "awaiting a notification for " + b.CorrelationKey
	case apitype.BlockedAwaitingTimer:
		return "sleeping until " + stamp(*b.Until)
	case apitype.BlockedRequiresApproval:
		return "requires approval"
	case apitype.BlockedInDoubt:
		return "in doubt: " + b.Message
	}
	if b.Message != "" {
		return b.Reason + ": " + b.Message
	}
	return b.Reason
}

func stepDetail(s apitype.StepView) string {
	var parts []string
	switch {
	case s.Error != nil:
		parts = append(parts, errorText(s.Error))
	case s.Status == rbtype.StepParked && s.CorrelationKey != "":
		parts = append(parts, "awaiting "+s.CorrelationKey)
	case s.Status == rbtype.StepWaitingApproval:
		parts = append(parts, "requires approval")
	case s.NextAttemptAt != nil:
		parts = append(parts, "retry at "+stamp(*s.NextAttemptAt))
	case len(s.Result) > 0:
		parts = append(parts, compact(s.Result))
	}
	if it := s.Iterations; it != nil {
		parts = append(parts, fmt.Sprintf("for each: %d of %d done, %d under way, %d failed", it.Done, it.Count, it.Running, it.Failed))
	}
	if s.Kind == "hook" {
		parts = append(parts, "(on failure)")
	}
	if g := s.GateDecision; g != nil {
		parts = append(parts, string(g.Decision)+" by "+g.By)
	}
	if s.DryRun || s.Simulated {
		parts = append(parts, "(dry run)")
	}
	if c := s.Compensation; c != nil {
		parts = append(parts, "compensation "+string(c.Status))
	}
	if e := s.Escalation; e != nil {
		parts = append(parts, "escalation "+string(e.Status))
	}
	return strings.Join(parts, "; ")
}

func errorText(e *apitype.ErrorView) string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// printEvents shows events one per line (its number in the runbook, time, type, step, attempt,
// data), in fixed columns so that lines printed one at a time by --follow
// line up too.
func printEvents(w io.Writer, evs []apitype.Event) {
	for _, ev := range evs {
		attempt := ""
		if ev.Attempt > 0 {
			attempt = strconv.Itoa(ev.Attempt)
		}
		line := fmt.Sprintf("%6d  %s  %-22s  %-20s  %2s  %s",
			ev.Seq, ev.At.Local().Format("15:04:05.000"), ev.Type, ev.Step, attempt, compact(ev.Data))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

func printList(w io.Writer, page *apitype.ListResponse) {
	t := cli.NewTable(w)
	fmt.Fprintln(t, "ID\tSTATUS\tNAME\tWAITS ON\tCREATED\tFINISHED\tERROR")
	for _, r := range page.Runbooks {
		finished, errText := "", ""
		if r.FinishedAt != nil {
			finished = stamp(*r.FinishedAt)
		}
		if r.Error != nil {
			errText = errorText(r.Error)
		}
		status := string(r.Status)
		if string(r.State) != status {
			status += " (" + string(r.State) + ")"
		}
		if r.Mode != rbtype.ModeExecute {
			status += " (" + string(r.Mode) + ")"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, status, orDash(r.Name), orDash(waitsOn(r)), stamp(r.CreatedAt), finished, errText)
	}
	_ = t.Flush()
	if page.Next != "" {
		fmt.Fprintf(w, "more: rbd list --after %s\n", page.Next)
	}
}

// waitsOn says in a few words what a listed runbook waits on: a person's
// approval, resolution or retry first, then the outside world.
func waitsOn(r apitype.RunbookSummary) string {
	var parts []string
	for _, b := range r.BlockedOn {
		switch b.Reason {
		case apitype.BlockedRequiresApproval:
			parts = append(parts, "approval of "+b.Step)
		case apitype.BlockedAwaitingNotification:
			parts = append(parts, "notification for "+b.Step)
		case apitype.BlockedAwaitingTimer:
			parts = append(parts, "timer of "+b.Step)
		}
	}
	for _, a := range slices.Concat(r.NextActions, r.UnavailableActions) {
		switch a.Kind {
		case apitype.ActionResolve:
			parts = append(parts, "resolution of "+a.Step)
		case apitype.ActionRetry:
			parts = append(parts, "retry of "+a.Step)
		}
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// compact shows JSON on one line, shortened to fit a table.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	s := b.String()
	if r := []rune(s); len(r) > maxDetail {
		return string(r[:maxDetail-1]) + "…"
	}
	return s
}

func stamp(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// spentMark flags a budget that is spent: no step would start.
func spentMark(exceeded bool) string {
	if exceeded {
		return ": spent"
	}
	return ""
}

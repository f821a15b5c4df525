package apitype

import (
	"strings"

	"github.com/google/uuid"
)

// ActionArgs are what an action needs to be taken, as data: a program (an
// MCP client, the console) calls the API with them; the command line in
// ActionView.Command is rendered from them, once, here.
type ActionArgs struct {
	RunbookID uuid.UUID `json:"runbook_id"`
	// CorrelationKey is the wait a notify action answers.
	CorrelationKey string `json:"correlation_key,omitempty"`
	// Execute: a retry that runs a draft_only runbook's held-back steps
	// for real.
	Execute bool `json:"execute,omitempty"`
}

// NewAction is an action of a kind, on a step ("" for the runbook), with
// its arguments and the `rbd` command that takes it (SEMANTICS §5: every
// next action names the command that does it).
func NewAction(kind, step string, args ActionArgs) ActionView {
	return ActionView{Kind: kind, Step: step, Args: args, Command: commandLine(kind, step, args), Does: actionDoes(kind, step, args)}
}

// actionDoes says what taking an action will do, for a person reading
// the list before they act (docs/reference/http-api.md, next_actions).
func actionDoes(kind, step string, a ActionArgs) string {
	switch kind {
	case ActionApprove:
		return "approve step " + step + ": it runs"
	case ActionNotify:
		return "deliver the result step " + step + " waits for (correlation key " + a.CorrelationKey + "): it completes with it"
	case ActionResolve:
		return "complete escalated step " + step + " with a result you give: the steps after it run"
	case ActionClose:
		return "close the held-open runbook: it finishes, and takes no more extensions"
	case ActionRetry:
		if a.Execute {
			return "run step " + step + ", which the draft held back, for real, with what depends on it"
		}
		return "run step " + step + " again (same idempotency key), with the steps its failure held back"
	}
	return ""
}

// commandLine is the `rbd` command that takes an action, as a person types
// it. It is the one place a command line is written from an action; the
// console and MCP render the same action from its Args in their own way.
func commandLine(kind, step string, a ActionArgs) string {
	switch kind {
	case ActionApprove:
		return "rbd approve " + a.RunbookID.String() + " " + shellQuote(step)
	case ActionNotify:
		return "rbd notify " + a.CorrelationKey + " --result '{...}'"
	case ActionResolve:
		return "rbd resolve " + a.RunbookID.String() + " " + shellQuote(step) + " --action complete --result '{...}'"
	case ActionClose:
		return "rbd close " + a.RunbookID.String()
	case ActionRetry:
		flags := " --step "
		if a.Execute {
			flags = " --execute --step "
		}
		return "rbd retry " + a.RunbookID.String() + flags + shellQuote(step)
	}
	return ""
}

// shellQuote quotes a step key for a shell when it needs it: keys of
// for-each instances hold brackets, and a runbook's own names may hold
// anything.
func shellQuote(s string) string {
	if strings.ContainsAny(s, "#'\"\\ $`*?[]{}()<>|&;!~") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// ToolCall is an action as a call of one of `rbd mcp`'s tools: its name
// and arguments, to call as they are (a notify's result is a placeholder
// to fill in).
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// MCPAction is a next action as the MCP next_actions tool gives it: the
// action, and the tool call that takes it (none where no tool does).
type MCPAction struct {
	ActionView
	Tool *ToolCall `json:"tool,omitempty"`
}

// MCPNextActions is the answer of the MCP next_actions tool: where the
// runbook stands and what would move it, each as a tool call.
type MCPNextActions struct {
	ID          string        `json:"id"`
	Status      string        `json:"status"`
	State       string        `json:"state"`
	BlockedOn   []BlockedView `json:"blocked_on"`
	Failures    []FailureView `json:"failures"`
	NextActions []MCPAction   `json:"next_actions"`
	// UnavailableActions would move the runbook but are not this token's
	// to take, each with its reason (whom to ask); none has a tool call.
	UnavailableActions []ActionView `json:"unavailable_actions"`
}

package lsp

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

const formsVerbs = `- name: probe
  domain: db
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    properties:
      seconds: {type: number}
      state: {type: string}
- name: post
  domain: chat
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
  input_schema:
    properties:
      text: {type: string}
`

// Completion offers the operators right after a :when's "(" and inside
// and, or and not; @failure and its fields inside (on-failure ...); and
// hover describes an operator and a form (docs/design/language.md v1.2).
func TestCompletionAndHoverOfConditionsAndHooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, dir := startWithVerbs(t, ctx, formsVerbs)
	doc := uri.File(filepath.Join(dir, "t.rbk"))
	text := "(db.probe :as @lag)\n" +
		"(chat.post :text \"x\" :when (and (< @lag.seconds 5) ( ))\n" +
		"(chat.post :when (\n" +
		"(on-failure\n  (chat.post :text (str @failure. @)))\n"
	openDoc(t, ctx, client, doc, text)
	tx := newText(text)
	complete := func(at string, nth int) []string {
		off := -1
		for range nth + 1 {
			off = strings.Index(text[off+1:], at) + off + 1
		}
		return completionLabels(t, ctx, client, doc, tx.position(off+len(at)))
	}
	operators := []string{"=", "!=", "<", "<=", ">", ">=", "and", "or", "not", "in", "exists", "any", "all"}
	require.Equal(t, operators, complete(":when (", 0), "after :when (")
	require.Equal(t, operators, complete(":when (", 1), "after :when ( at the end of a call being typed")
	require.Equal(t, operators, complete(") (", 0), "inside and")
	require.Equal(t, []string{"code", "message", "status", "step"}, complete("@failure.", 0))
	require.Equal(t, []string{"@lag", "@failure"}, complete("@failure. @", 0))

	hover := func(at string) string {
		off := strings.Index(text, at) + 1 // inside the token
		var h protocol.Hover
		require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
			TextDocumentPositionParams: params(doc, tx.position(off)),
		}, &h))
		return h.Contents.Value
	}
	require.Contains(t, hover("< @lag"), "compares two numbers")
	require.Contains(t, hover("str @failure"), "`(str V...)`")
	require.Contains(t, hover("on-failure"), "after compensation")
	require.Contains(t, hover("@failure."), "the failure the hooks")
}

// Inside a for-each, completion offers its element, and after "@host."
// the fields of the list's items; hover says what the element is.
func TestCompletionOfAForEachElement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, dir := startWithVerbs(t, ctx, `- name: list
  domain: lb
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    properties:
      items:
        type: array
        items:
          type: object
          properties:
            name: {type: string}
            ports: {type: array, items: {type: integer}}
- name: drain
  domain: lb
  execution: {kind: sync, handler: core.echo, side_effects: external_call}
`)
	doc := uri.File(filepath.Join(dir, "t.rbk"))
	text := "(lb.list :as @hosts)\n" +
		"(for-each @hosts.items :as @host\n" +
		"  (lb.drain :host @host. :x @)\n" +
		"  (for-each @host.ports :as @port (lb.drain :port @port)))\n" +
		"(lb.drain :y @)\n"
	openDoc(t, ctx, client, doc, text)
	tx := newText(text)
	at := func(s string) protocol.Position { return tx.position(strings.Index(text, s) + len(s)) }
	require.Equal(t, []string{"name", "ports"}, completionLabels(t, ctx, client, doc, at("@host.")))
	require.Equal(t, []string{"@hosts", "@host"}, completionLabels(t, ctx, client, doc, at(":x @")))
	require.Equal(t, []string{"@hosts"}, completionLabels(t, ctx, client, doc, at(":y @")), "no element outside the body")

	var h protocol.Hover
	require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
		TextDocumentPositionParams: params(doc, tx.position(strings.Index(text, ":port @port")+8)),
	}, &h))
	require.Contains(t, h.Contents.Value, "an element of the list of the `(for-each ... :as @port)`")
	require.Contains(t, h.Contents.Value, "type: `integer`")
}

// The forms of v1.4 (docs/reference/language.md): completion offers them
// after a "(" where a value stands (any and all where a condition does)
// and the new step options; hover describes a form's head, an element of
// filter, any and all with its type, and a new option.
func TestCompletionAndHoverOfV14Forms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	verbs := formsVerbs + `- name: hosts
  domain: db
  execution: {kind: sync, handler: core.echo, side_effects: none}
  output_schema:
    required: [items]
    properties:
      items:
        type: array
        items:
          type: object
          required: [env]
          properties:
            env: {type: string}
            port: {type: integer}
`
	client, dir := startWithVerbs(t, ctx, verbs)
	doc := uri.File(filepath.Join(dir, "t.rbk"))
	text := "(db.hosts :as @hosts)\n" +
		"(chat.post :text (str (count @hosts.items)) :when (and (any @hosts.items :as @h (= @h.env \"prod\")) ( ))\n" +
		"(chat.post :text ( )\n" +
		"(chat.post :gate-when (\n" +
		"(chat.post :when (!= (status @hosts) \"succeeded\") :remind-after \"P1D\" :gat"
	openDoc(t, ctx, client, doc, text)
	tx := newText(text)
	complete := func(at string) []string {
		off := strings.Index(text, at)
		require.GreaterOrEqual(t, off, 0, at)
		return completionLabels(t, ctx, client, doc, tx.position(off+len(at)))
	}
	conds := []string{"=", "!=", "<", "<=", ">", ">=", "and", "or", "not", "in", "exists", "any", "all"}
	require.Equal(t, conds, complete(")) ("), "inside and")
	require.Equal(t, conds, complete(":gate-when ("), "after :gate-when (")
	require.Equal(t, []string{"status", "default", "filter", "count", "any", "all"}, complete(":text ("), "where a value stands")
	require.Contains(t, complete(":gat"), ":gate-when")
	require.Contains(t, complete(":gat"), ":approvers")

	hover := func(at string) string {
		off := strings.Index(text, at) + 1 // inside the token
		var h protocol.Hover
		require.NoError(t, client.Call(ctx, protocol.MethodTextDocumentHover, &protocol.HoverParams{
			TextDocumentPositionParams: params(doc, tx.position(off)),
		}, &h))
		return h.Contents.Value
	}
	require.Contains(t, hover("status @hosts"), "settle edge")
	require.Contains(t, hover("count @"), "`(count LIST)`")
	require.Contains(t, hover("any @hosts"), "`(any LIST :as @e COND)`")
	require.Contains(t, hover("@h.env"), "an element of the list of the `(any ... :as @h ...)`")
	require.Contains(t, hover("@h.env"), "type: `string`")
	require.Contains(t, hover(":remind-after"), "escalation once")
}

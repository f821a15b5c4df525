package lsp

import (
	"strconv"
	"strings"

	"github.com/runbookdev/runbook/lang"
)

// outline is what a runbook's tokens say about its calls and bindings. It
// is built from lang.Lex rather than the parsed AST because a file being
// edited is rarely valid: the call under the cursor usually has a syntax
// error, and Parse leaves such a call out, but its tokens still tell which
// verb it calls, which arguments it has and what it binds.
type outline struct {
	toks  []lang.Token
	calls []*callInfo
	// bindings maps a name to the first call binding it with :as.
	bindings map[string]*callInfo
	// inside is, for each token, the innermost bracket open just after
	// it: "(" at a call's own level, "[" or "{" in a list or map, "form"
	// in a form ((str ...), a condition, (on-failure ...)), "" at the top
	// level.
	inside []string
	// forms maps the token index of a form's "(" to its head: "str",
	// "on-failure", an operator.
	forms map[int]string
	// formHead is, for each token inside a form (inside "form"), that
	// form's head.
	formHead []string
	// loops are the (for-each ...) forms, in the order they open.
	loops []*loopInfo
}

// loopInfo is one (for-each ...) as its tokens show it.
type loopInfo struct {
	open, close int    // token indexes of "(" and of what closed it
	list        int    // token index of the list's first token, or -1
	item        string // the :as name, or ""
}

// loopsAround returns the for-each forms whose bodies hold token i,
// innermost first.
func (o *outline) loopsAround(i int) []*loopInfo {
	var out []*loopInfo
	for _, l := range o.loops {
		if l.open < i && i <= l.close {
			out = append([]*loopInfo{l}, out...)
		}
	}
	return out
}

// levelForm is the level inside a form, whose items are values.
const levelForm = "form"

// callInfo is one call as its tokens show it.
type callInfo struct {
	open, close int    // token indexes of "(" and ")"; of what closed an outer bracket, or the last token, when ")" is missing
	index       int    // 1-based position among the file's calls, as Parse numbers them
	verb        int    // token index of the verb name, or -1
	binding     int    // token index of the :as reference, or -1
	keywords    []int  // token indexes of the call's own keywords, not those of maps inside it
	name        string // the binding's name, or ""
	hook        bool   // a call of (on-failure ...), where @failure is bound
}

// newOutline walks the tokens with a stack of open brackets, so that a
// keyword inside a map is not taken for one of the call's arguments. A "("
// inside a call opens a call nested in it, as docs/design/language.md v1.1 allows; v1's
// parser instead ends the open call there. Either way the calls are
// numbered in the order of their "(", as Parse numbers them.
func newOutline(toks []lang.Token) *outline {
	b := &outlineBuilder{o: &outline{toks: toks, bindings: map[string]*callInfo{}, inside: make([]string, len(toks)), forms: map[int]string{}, formHead: make([]string, len(toks))}}
	for i, t := range toks {
		if top := len(b.stack) - 1; top >= 0 && b.stack[top].loop != nil {
			b.loopToken(b.stack[top].loop, i, t)
		}
		if t.Kind == lang.TokenPunct {
			b.punct(i, t.Text)
		} else if top := len(b.stack) - 1; top >= 0 && b.stack[top].call != nil {
			b.token(b.stack[top].call, i, t)
		}
		if top := len(b.stack) - 1; top >= 0 {
			b.o.inside[i] = b.stack[top].punct
			b.o.formHead[i] = b.stack[top].head
		}
	}
	b.closeFrom(0, len(toks)-1)
	return b.o
}

// outlineBuilder is the state of newOutline's walk.
type outlineBuilder struct {
	o     *outline
	stack []frame
}

// frame is a bracket left open: a call's "(" with its call, or a list's
// or map's.
type frame struct {
	punct string
	call  *callInfo
	head  string    // a form's head
	loop  *loopInfo // a for-each's
}

func (b *outlineBuilder) punct(i int, p string) {
	switch p {
	case "(":
		if i+1 < len(b.o.toks) {
			if next := b.o.toks[i+1]; next.Kind == lang.TokenOp || next.Kind == lang.TokenName && lang.IsFormHead(next.Text) {
				// A form is not a call, and Parse does not number it.
				b.o.forms[i] = next.Text
				f := frame{punct: levelForm, head: next.Text}
				if next.Text == lang.FormForEach {
					f.loop = &loopInfo{open: i, list: -1, close: len(b.o.toks) - 1}
					b.o.loops = append(b.o.loops, f.loop)
				}
				b.stack = append(b.stack, f)
				return
			}
		}
		c := &callInfo{open: i, index: len(b.o.calls) + 1, verb: -1, binding: -1, close: len(b.o.toks) - 1, hook: b.inHook()}
		b.o.calls = append(b.o.calls, c)
		b.stack = append(b.stack, frame{punct: "(", call: c})
	case "[", "{":
		b.stack = append(b.stack, frame{punct: p})
	default:
		// Pop to the matching bracket; one left open inside is closed
		// with it, as the parser recovers.
		open := map[string]string{")": "(", "]": "[", "}": "{"}[p]
		for j := len(b.stack) - 1; j >= 0; j-- {
			if b.stack[j].punct == open || open == "(" && b.stack[j].punct == levelForm {
				b.closeFrom(j, i)
				return
			}
		}
	}
}

// inHook reports whether the walk is inside (on-failure ...).
func (b *outlineBuilder) inHook() bool {
	for _, f := range b.stack {
		if f.call != nil && f.call.hook {
			return true
		}
		if f.punct == levelForm && f.head == lang.FormOnFailure {
			return true
		}
	}
	return false
}

// loopToken notes what a token at a for-each's own level says: its list
// (the token after the head) and its :as name.
func (b *outlineBuilder) loopToken(l *loopInfo, i int, t lang.Token) {
	switch {
	case i == l.open+2:
		l.list = i
	case t.Kind == lang.TokenRef && b.o.toks[i-1].Kind == lang.TokenKeyword && b.o.toks[i-1].Text == ":as" && l.item == "":
		l.item = refName(t.Text)
	}
}

// token notes what a token at a call's own level says about the call.
func (b *outlineBuilder) token(c *callInfo, i int, t lang.Token) {
	toks := b.o.toks
	switch {
	case t.Kind == lang.TokenName && i == c.open+1:
		c.verb = i
	case t.Kind == lang.TokenKeyword:
		c.keywords = append(c.keywords, i)
	case t.Kind == lang.TokenRef && i > 0 && toks[i-1].Kind == lang.TokenKeyword && toks[i-1].Text == ":as" && c.binding < 0:
		c.binding, c.name = i, refName(t.Text)
	}
}

// closeFrom closes the brackets from stack[j] up, the calls among them
// at token i.
func (b *outlineBuilder) closeFrom(j, i int) {
	for _, f := range b.stack[j:] {
		if f.loop != nil {
			f.loop.close = i
		}
		if c := f.call; c != nil {
			c.close = i
			if c.name != "" && b.o.bindings[c.name] == nil {
				b.o.bindings[c.name] = c
			}
		}
	}
	b.stack = b.stack[:j]
}

// refName is the binding a reference names: "case" in "@case.case_id".
func refName(ref string) string {
	name := strings.TrimPrefix(ref, "@")
	if i := strings.IndexAny(name, ".["); i >= 0 {
		name = name[:i]
	}
	return name
}

// refNameRange is the range of the name in a reference token, without
// the '@': what a rename replaces.
func refNameRange(t lang.Token) lang.Range {
	r := t.Range
	r.Start.Byte++
	r.Start.Column++
	n := len(refName(t.Text))
	r.End = r.Start
	r.End.Byte += n
	r.End.Column += n // a name is ASCII
	return r
}

// verbName is the call's verb as written, or "".
func (o *outline) verbName(c *callInfo) string {
	if c.verb < 0 {
		return ""
	}
	return o.toks[c.verb].Text
}

// key is the step key the compiler gives the call: its binding, or
// <verb>#<n>.
func (o *outline) key(c *callInfo) string {
	if c.name != "" {
		return c.name
	}
	return o.verbName(c) + "#" + strconv.Itoa(c.index)
}

// span is the call's range, "(" to ")".
func (o *outline) span(c *callInfo) lang.Range {
	return o.toks[c.open].Range.Through(o.toks[c.close].Range)
}

// at returns the index of the token whose range holds off (its end
// included, so that a cursor just after a word is on it), or -1.
func (o *outline) at(off int) int {
	lo, hi := 0, len(o.toks)
	for lo < hi {
		mid := (lo + hi) / 2
		if o.toks[mid].Range.End.Byte < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(o.toks) && o.toks[lo].Range.Start.Byte <= off {
		return lo
	}
	return -1
}

// callAt is the innermost call holding token i, or nil.
func (o *outline) callAt(i int) *callInfo {
	var in *callInfo
	for _, c := range o.calls {
		if c.open <= i && i <= c.close && (in == nil || c.open > in.open) {
			in = c
		}
	}
	return in
}

// refsTo lists the reference tokens that name a binding, its :as included.
func (o *outline) refsTo(name string) []int {
	var out []int
	for i, t := range o.toks {
		if t.Kind == lang.TokenRef && refName(t.Text) == name {
			out = append(out, i)
		}
	}
	return out
}

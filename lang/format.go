package lang

import (
	"strings"
	"unicode/utf8"
)

// lineWidth is the column limit the formatter keeps calls and lists within
// when it can.
const lineWidth = 100

// Format renders a parsed file in canonical layout, keeping every comment.
// The file must have parsed without errors. Format is idempotent:
// formatting its output again changes nothing.
//
// Layout: one call per line when it fits in 100 columns and holds no
// comment; otherwise the verb on the first line and one argument per line,
// indented two spaces, with ")" after the last argument. Lists and maps
// that do not fit put one item per line and their closing bracket on a
// line of its own. A nested call stays nested: on one line when it fits,
// else laid out like a top-level call, its arguments indented two spaces
// past the argument it is the value of. (str ...) and conditions that do
// not fit break the same way, one part a line. An (on-failure ...) form
// always puts each call on a line of its own, indented two spaces. One
// blank line between top-level items survives; more collapse to one.
func Format(f *File) []byte {
	p := &printer{comments: f.Comments, lastLine: -1}
	for _, n := range f.Top() {
		p.topLevelCommentsBefore(n.Range().Start)
		p.blankLineBefore(n.Range().Start.Line)
		switch n := n.(type) {
		case *Call:
			p.call(n)
		case *OnFailure:
			p.onFailure(n)
		case *ForEach:
			p.forEach(n, "")
			p.write("\n")
		}
	}
	p.topLevelCommentsBefore(endOfFile)
	return []byte(p.out.String())
}

type printer struct {
	out      strings.Builder
	column   int // width of the line being written, in code points
	comments []Comment
	next     int // index of the next comment to print
	lastLine int // source line where the last printed top-level item ended
}

// write appends s, keeping track of the current line's width.
func (p *printer) write(s string) {
	p.out.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		p.column = utf8.RuneCountInString(s[i+1:])
	} else {
		p.column += utf8.RuneCountInString(s)
	}
}

// blankLineBefore keeps a single blank line where the source had one or more.
func (p *printer) blankLineBefore(line int) {
	if p.lastLine > 0 && line > p.lastLine+1 {
		p.write("\n")
	}
}

// topLevelCommentsBefore prints the comments between calls.
func (p *printer) topLevelCommentsBefore(at Pos) {
	for p.next < len(p.comments) && p.comments[p.next].Span.Start.Byte < at.Byte {
		c := p.comments[p.next]
		p.blankLineBefore(c.Span.Start.Line)
		p.write(c.Text + "\n")
		p.lastLine = c.Span.Start.Line
		p.next++
	}
}

// commentsWithin reports whether any comment lies inside r.
func (p *printer) commentsWithin(r Range) bool {
	return p.next < len(p.comments) && p.comments[p.next].Span.Start.Byte < r.End.Byte
}

// trailing prints the comment that follows the token ending at end on the
// same source line, with no token between them (none before the next
// token, which starts at before).
func (p *printer) trailing(end, before Pos) bool {
	if p.next < len(p.comments) {
		c := p.comments[p.next].Span.Start
		if c.Line == end.Line && c.Byte >= end.Byte && c.Byte < before.Byte {
			p.write(" " + p.comments[p.next].Text)
			p.next++
			return true
		}
	}
	return false
}

// leading prints, each on its own line at indent, the comments that start
// before at.
func (p *printer) leading(at Pos, indent string) {
	for p.next < len(p.comments) && p.comments[p.next].Span.Start.Byte < at.Byte {
		p.write(indent + p.comments[p.next].Text + "\n")
		p.next++
	}
}

func (p *printer) call(c *Call) {
	defer func() { p.lastLine = c.Span.End.Line }()
	lastEnd := c.VerbRange.End
	if len(c.Args) > 0 {
		lastEnd = c.Args[len(c.Args)-1].Value.Range().End
	}
	// Comments after the last argument are the call's tail. A single one on
	// the last argument's line is printed after ")", where it lands on the
	// next run too; the call's layout must therefore not depend on it.
	inner, tail := p.countComments(lastEnd), p.countComments(c.Span.End)
	tail -= inner
	trailingOnly := tail == 1 && p.comments[p.next+inner].Span.Start.Line == lastEnd.Line
	if flat := flatCall(c); inner == 0 && (tail == 0 || trailingOnly) && fits(flat, 0) {
		p.write(flat)
		// One comment per line: a second goes on a line of its own next.
		if !p.trailing(lastEnd, c.Span.End) {
			p.trailing(c.Span.End, endOfFile)
		}
		p.write("\n")
		return
	}
	p.write("(" + c.Verb)
	lineEnd := c.VerbRange.End
	for _, a := range c.Args {
		p.trailing(lineEnd, a.NameRange.Start)
		p.write("\n")
		p.leading(a.NameRange.Start, "  ")
		p.write("  :" + a.Name + " ")
		lineEnd = p.value(a.Value, "  ")
	}
	printed := false
	if tail == 0 || trailingOnly {
		p.write(")")
		printed = p.trailing(lineEnd, c.Span.End)
	} else {
		// Comments on lines of their own after the last argument keep ")"
		// on a line of its own after them.
		p.trailing(lineEnd, c.Span.End)
		p.write("\n")
		p.leading(c.Span.End, "  ")
		p.write(")")
	}
	if !printed {
		p.trailing(c.Span.End, endOfFile)
	}
	p.write("\n")
}

// endOfFile is a position after any other.
var endOfFile = Pos{Byte: int(^uint(0) >> 1)}

// countComments counts the unprinted comments that start before at.
func (p *printer) countComments(at Pos) int {
	n := 0
	for p.next+n < len(p.comments) && p.comments[p.next+n].Span.Start.Byte < at.Byte {
		n++
	}
	return n
}

// value prints v starting at the current position, breaking lists and maps
// that do not fit, and returns the source position where v ends so the
// caller can attach a trailing comment.
func (p *printer) value(v Value, indent string) Pos {
	flat := flatValue(v)
	if !p.commentsWithin(v.Range()) && fits(flat, p.column) || !isContainer(v) {
		p.write(flat)
		return v.Range().End
	}
	return p.broken(v, indent)
}

// broken prints a list, map, nested call or form broken over lines, as
// value does when it does not fit.
func (p *printer) broken(v Value, indent string) Pos {
	inner := indent + "  "
	var closer string
	switch v := v.(type) {
	case *Call:
		return p.nestedCall(v, indent)
	case *Str:
		if !p.commentsWithin(v.Span) {
			return p.fill(v, indent)
		}
		return p.form(FormStr, v.HeadRange.End, v.Parts, v.Span, indent)
	case *Cond:
		return p.form(v.Op, v.OpRange.End, v.Args, v.Span, indent)
	case *Func:
		return p.fn(v, indent)
	case *List:
		p.write("[")
		closer = "]"
		for i, item := range v.Items {
			p.write("\n")
			p.leading(item.Range().Start, inner)
			p.write(inner)
			end := p.value(item, inner)
			next := v.Span.End
			if i+1 < len(v.Items) {
				next = v.Items[i+1].Range().Start
			}
			p.trailing(end, next)
		}
	case *Map:
		p.write("{")
		closer = "}"
		for i, e := range v.Entries {
			p.write("\n")
			p.leading(e.NameRange.Start, inner)
			p.write(inner + e.Key() + " ")
			end := p.value(e.Value, inner)
			next := v.Span.End
			if i+1 < len(v.Entries) {
				next = v.Entries[i+1].NameRange.Start
			}
			p.trailing(end, next)
		}
	}
	p.write("\n")
	p.leading(v.Range().End, inner)
	p.write(indent + closer)
	return v.Range().End
}

// nestedCall prints a nested call that does not fit on the line: the verb,
// then one argument a line at indent plus two spaces, and ")" after the
// last, unless comments follow it inside the call, which keep ")" on a
// line of its own.
func (p *printer) nestedCall(c *Call, indent string) Pos {
	inner := indent + "  "
	p.write("(" + c.Verb)
	lineEnd := c.VerbRange.End
	for _, a := range c.Args {
		p.trailing(lineEnd, a.NameRange.Start)
		p.write("\n")
		p.leading(a.NameRange.Start, inner)
		p.write(inner + ":" + a.Name + " ")
		lineEnd = p.value(a.Value, inner)
	}
	if p.countComments(c.Span.End) == 0 {
		p.write(")")
		return c.Span.End
	}
	p.trailing(lineEnd, c.Span.End)
	p.write("\n")
	p.leading(c.Span.End, inner)
	p.write(indent + ")")
	return c.Span.End
}

// form prints a form whose items are values, (str ...) or a condition,
// that does not fit on the line: its head, then one item a line at indent
// plus two spaces, and ")" after the last, unless comments follow it
// inside the form, which keep ")" on a line of its own.
func (p *printer) form(head string, headEnd Pos, items []Value, span Range, indent string) Pos {
	inner := indent + "  "
	p.write("(" + head)
	lineEnd := headEnd
	for _, item := range items {
		p.trailing(lineEnd, item.Range().Start)
		p.write("\n")
		p.leading(item.Range().Start, inner)
		p.write(inner)
		lineEnd = p.value(item, inner)
	}
	if p.countComments(span.End) == 0 {
		p.write(")")
		return span.End
	}
	p.trailing(lineEnd, span.End)
	p.write("\n")
	p.leading(span.End, inner)
	p.write(indent + ")")
	return span.End
}

// fn prints a v1.4 value form that does not fit on the line: like form,
// with its :as option on the line of the list it names the elements of.
func (p *printer) fn(v *Func, indent string) Pos {
	if v.As == nil || len(v.Args) == 0 {
		return p.form(v.Name, v.HeadRange.End, v.Args, v.Span, indent)
	}
	inner := indent + "  "
	p.write("(" + v.Name + " ")
	lineEnd := p.value(v.Args[0], inner)
	p.write(" :as " + flatValue(v.As.Value))
	lineEnd = maxPos(lineEnd, v.As.Value.Range().End)
	for _, item := range v.Args[1:] {
		p.trailing(lineEnd, item.Range().Start)
		p.write("\n")
		p.leading(item.Range().Start, inner)
		p.write(inner)
		lineEnd = p.value(item, inner)
	}
	if p.countComments(v.Span.End) == 0 {
		p.write(")")
		return v.Span.End
	}
	p.trailing(lineEnd, v.Span.End)
	p.write("\n")
	p.leading(v.Span.End, inner)
	p.write(indent + ")")
	return v.Span.End
}

func maxPos(a, b Pos) Pos {
	if b.Byte > a.Byte {
		return b
	}
	return a
}

// fill prints a (str ...) that does not fit on the line and holds no
// comment: its parts flow onto lines at indent plus two spaces, as many on
// each as fit, the way text is written. A part that fits on no line
// breaks on its own.
func (p *printer) fill(v *Str, indent string) Pos {
	inner := indent + "  "
	p.write("(" + FormStr)
	for i, part := range v.Parts {
		flat := flatValue(part)
		last := i == len(v.Parts)-1
		need := " " + flat
		if last {
			need += ")"
		}
		if p.column > len(inner) && fits(need, p.column) {
			p.write(" ")
		} else {
			p.write("\n" + inner)
		}
		p.value(part, inner)
	}
	p.write(")")
	return v.Span.End
}

// forEach prints (for-each LIST :as @x :parallel N at indent, with its
// options on the head line, then each body item on a line of its own,
// indented two spaces more, and ")" after the last. It does not end the
// line: a trailing comment may follow.
func (p *printer) forEach(l *ForEach, indent string) {
	defer func() { p.lastLine = l.Span.End.Line }()
	inner := indent + "  "
	p.write("(" + FormForEach)
	lineEnd := l.HeadRange.End
	if l.List != nil {
		p.write(" ")
		head := " " + flatValue(l.List)
		for _, o := range l.Options {
			head += " :" + o.Name + " " + flatValue(o.Value)
		}
		if isContainer(l.List) && !fits(head, p.column) {
			// The options must fit on the line after the list, so a
			// list that leaves them no room breaks.
			lineEnd = p.broken(l.List, indent)
		} else {
			lineEnd = p.value(l.List, inner)
		}
	}
	for _, o := range l.Options {
		p.write(" :" + o.Name + " ")
		lineEnd = p.value(o.Value, inner)
	}
	for _, n := range l.Body {
		p.trailing(lineEnd, n.Range().Start)
		p.write("\n")
		p.leading(n.Range().Start, inner)
		p.write(inner)
		switch n := n.(type) {
		case *Call:
			lineEnd = p.value(n, inner)
		case *ForEach:
			p.forEach(n, inner)
			lineEnd = n.Span.End
		}
	}
	if p.countComments(l.Span.End) == 0 {
		p.write(")")
	} else {
		// Comments after the last call keep ")" on a line of its own.
		p.trailing(lineEnd, l.Span.End)
		p.write("\n")
		p.leading(l.Span.End, inner)
		p.write(indent + ")")
	}
	if indent == "" {
		p.trailing(l.Span.End, endOfFile)
	}
}

// onFailure prints (on-failure ...) with each call on a line of its own,
// indented two spaces; a call that does not fit breaks like a nested one.
func (p *printer) onFailure(h *OnFailure) {
	defer func() { p.lastLine = h.Span.End.Line }()
	p.write("(" + FormOnFailure)
	lineEnd := h.HeadRange.End
	for _, c := range h.Calls {
		p.trailing(lineEnd, c.Span.Start)
		p.write("\n")
		p.leading(c.Span.Start, "  ")
		p.write("  ")
		lineEnd = p.value(c, "  ")
	}
	if p.countComments(h.Span.End) == 0 {
		p.write(")")
	} else {
		// Comments after the last call keep ")" on a line of its own.
		p.trailing(lineEnd, h.Span.End)
		p.write("\n")
		p.leading(h.Span.End, "  ")
		p.write(")")
	}
	p.trailing(h.Span.End, endOfFile)
	p.write("\n")
}

func isContainer(v Value) bool {
	switch v.(type) {
	case *List, *Map, *Call, *Str, *Cond, *Func:
		return true
	}
	return false
}

func fits(s string, column int) bool {
	return column+utf8.RuneCountInString(s) <= lineWidth && !strings.Contains(s, "\n")
}

func flatCall(c *Call) string {
	var b strings.Builder
	b.WriteString("(" + c.Verb)
	for _, a := range c.Args {
		b.WriteString(" :" + a.Name + " " + flatValue(a.Value))
	}
	b.WriteString(")")
	return b.String()
}

// flatForm renders a form of values on one line.
func flatForm(head string, items []Value) string {
	var b strings.Builder
	b.WriteString("(" + head)
	for _, item := range items {
		b.WriteString(" " + flatValue(item))
	}
	b.WriteString(")")
	return b.String()
}

// flatFunc renders a v1.4 value form on one line, its :as after the list.
func flatFunc(v *Func) string {
	if v.As == nil || len(v.Args) == 0 {
		return flatForm(v.Name, v.Args)
	}
	var b strings.Builder
	b.WriteString("(" + v.Name + " " + flatValue(v.Args[0]) + " :as " + flatValue(v.As.Value))
	for _, item := range v.Args[1:] {
		b.WriteString(" " + flatValue(item))
	}
	b.WriteString(")")
	return b.String()
}

// flatValue renders a value on one line (a multi-line string keeps its
// line breaks, which is why callers also check for newlines).
func flatValue(v Value) string {
	switch v := v.(type) {
	case *String:
		return v.Raw
	case *Int:
		return v.Raw
	case *Decimal:
		return v.Raw
	case *Bool:
		if v.Value {
			return "true"
		}
		return "false"
	case *Null:
		return "nil"
	case *Ref:
		return "@" + v.PathString()
	case *Input:
		return "$" + v.Name
	case *Call:
		return flatCall(v)
	case *Str:
		return flatForm(FormStr, v.Parts)
	case *Cond:
		return flatForm(v.Op, v.Args)
	case *Func:
		return flatFunc(v)
	case *List:
		items := make([]string, len(v.Items))
		for i, item := range v.Items {
			items[i] = flatValue(item)
		}
		return "[" + strings.Join(items, " ") + "]"
	case *Map:
		entries := make([]string, len(v.Entries))
		for i, e := range v.Entries {
			entries[i] = e.Key() + " " + flatValue(e.Value)
		}
		return "{" + strings.Join(entries, " ") + "}"
	}
	return ""
}

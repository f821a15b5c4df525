package compiler

import (
	"github.com/runbookdev/runbook/lang"
)

// The fixes that delete text: a repeated argument (E023) and a redundant
// `:after` (W002). The did-you-mean fixes replace a name and are made
// where the name is reported (lang.Diagnostic.WithReplacements).

// commentBetween reports whether a comment of f starts in [from, to).
func commentBetween(f *lang.File, from, to lang.Pos) bool {
	if f == nil {
		return false
	}
	for _, c := range f.Comments {
		if c.Span.Start.Byte >= from.Byte && c.Span.Start.Byte < to.Byte {
			return true
		}
	}
	return false
}

// removal is the range to delete to remove the element at r, whose
// previous element (or opening token) ends at prevEnd: from prevEnd, so
// that the space or line break before it goes too, unless a comment lies
// in between, which is kept by deleting r alone.
func removal(f *lang.File, prevEnd lang.Pos, r lang.Range) lang.Range {
	if commentBetween(f, prevEnd, r.Start) {
		return r
	}
	return lang.Range{Filename: r.Filename, Start: prevEnd, End: r.End}
}

// removeArgFix offers the fix that deletes args[i], a repeat of an
// earlier argument or map key. openEnd is where what comes before the
// first argument ends (the verb, or the map's "{").
func removeArgFix(d *lang.Diagnostic, f *lang.File, openEnd lang.Pos, args []*lang.Arg, i int, what string) {
	prevEnd := openEnd
	if i > 0 {
		prevEnd = args[i-1].Value.Range().End
	}
	d.WithFix("remove the repeated "+what, lang.Edit{Range: removal(f, prevEnd, args[i].Range())})
}

// removeAfterFix offers the fix that deletes the reference at ref from the
// `:after` of call c: the item from a list of several, else the whole
// option.
func removeAfterFix(d *lang.Diagnostic, f *lang.File, c *lang.Call, ref lang.Range) {
	for i, arg := range c.Args {
		if arg.Name != optionAfter {
			continue
		}
		list, isList := arg.Value.(*lang.List)
		if !isList || len(list.Items) == 1 {
			d.WithFix("remove :after "+refText(arg.Value), lang.Edit{Range: removal(f, argsEnd(c, i), arg.Range())})
			return
		}
		for j, item := range list.Items {
			if item.Range() != ref {
				continue
			}
			r := removal(f, ref.Start, ref) // the item alone
			switch {
			case j > 0:
				r = removal(f, list.Items[j-1].Range().End, ref)
			case !commentBetween(f, ref.End, list.Items[1].Range().Start):
				// The first item: up to the next, so "[" keeps no space.
				r.End = list.Items[1].Range().Start
			}
			d.WithFix("remove "+refText(item)+" from :after", lang.Edit{Range: r})
			return
		}
		return // only the first :after counts; a repeat is E023
	}
}

// argsEnd is where the element before c.Args[i] ends.
func argsEnd(c *lang.Call, i int) lang.Pos {
	if i == 0 {
		return c.VerbRange.End
	}
	return c.Args[i-1].Value.Range().End
}

func refText(v lang.Value) string {
	if l, ok := v.(*lang.List); ok && len(l.Items) == 1 {
		v = l.Items[0]
	}
	if r, ok := v.(*lang.Ref); ok {
		return "@" + r.PathString()
	}
	return ""
}

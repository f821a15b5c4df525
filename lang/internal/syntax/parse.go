package syntax

import (
	"errors"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// ParseTop parses the tokens of one top-level call or form, which start at
// its "(" and end at its ")" or where it was left open. Participle sees
// each token's type and text; as its position it sees the token's index in
// toks, so every token in the tree, and a syntax error, says which of the
// tokens it is (see Index and Error).
func ParseTop(toks []lexer.Token) (*Top, error) {
	peek, err := lexer.Upgrade(&numbered{toks: toks})
	if err != nil {
		return nil, err
	}
	tree, err := Parser.ParseFromLexer(peek)
	if err != nil {
		var perr participle.Error
		if errors.As(err, &perr) {
			return nil, &Error{At: perr.Position().Offset, Err: perr}
		}
		return nil, err
	}
	// The tokens begin with "(" and end where that call ends (package
	// lang's segment), so a tree that parsed holds exactly one top-level
	// item; any other "(" in them opens a call or form nested in it.
	return tree.Items[0], nil
}

// Index is the index, among its call's tokens, of a token in a tree that
// ParseCall returned.
func Index(t lexer.Token) int { return t.Pos.Offset }

// Error is a syntax error in a call.
type Error struct {
	// At is the index of the token where participle gave up; the number of
	// tokens if it ran out of them.
	At  int
	Err participle.Error
}

func (e *Error) Error() string { return e.Err.Message() }

// numbered hands participle a call's tokens, each with its index as its
// position, then an EOF numbered like one more token.
type numbered struct {
	toks []lexer.Token
	next int
}

func (l *numbered) Next() (lexer.Token, error) {
	if l.next >= len(l.toks) {
		return lexer.EOFToken(lexer.Position{Offset: len(l.toks)}), nil
	}
	t := l.toks[l.next]
	t.Pos = lexer.Position{Offset: l.next}
	l.next++
	return t, nil
}

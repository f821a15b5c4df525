package lang

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// scanner turns bytes into tokens. It never fails: a mistake is reported
// and skipped, so one run finds every lexical problem.
//
// It is written by hand rather than made from participle's lexer for two
// reasons. Participle's lexers stop at the first character they cannot
// match, and the language promises a diagnostic for every mistake, each
// at its own place (a bad escape inside a string, a lone '@', an integer
// that overflows). And they match by regular expression: participle's
// simple lexer with this language's rules took 1.8 s to tokenize 100k
// generated steps, this scanner 70 ms (BenchmarkScan, BENCHMARKS.md).
type scanner struct {
	tokenStream
	off  int
	line int
	col  int
}

// maxLexErrors stops a hopeless input (say, a binary file without NUL
// bytes) from producing millions of diagnostics.
const maxLexErrors = 100

// scan scans a whole source.
func scan(filename string, src []byte) *tokenStream {
	s := &scanner{tokenStream: tokenStream{file: filename, src: string(src), strs: map[int]string{}}, line: 1, col: 1}
	// Runbooks average a token every six to nine bytes; sizing up front
	// saves most of the copies of repeated growth on large inputs.
	s.toks = make([]token, 0, len(src)/6+16)
	if i := strings.IndexByte(s.src, 0); i >= 0 {
		s.off = i
		p := Pos{Line: 1, Column: 1}.advance(s.src[:i])
		s.line, s.col = p.Line, p.Column
		s.diags.Errorf(ESyntax, Range{Filename: filename, Start: p, End: p.advance("\x00")},
			"this is not a text file (NUL byte at offset %d)", i)
		s.binary = true
		return &s.tokenStream
	}
	for s.off < len(s.src) {
		if len(s.diags) >= maxLexErrors {
			p := s.pos()
			s.diags.Errorf(ESyntax, Range{Filename: filename, Start: p, End: p}, "too many errors; stopped reading here")
			break
		}
		s.next()
	}
	return &s.tokenStream
}

func (s *scanner) pos() Pos { return Pos{Line: s.line, Column: s.col, Byte: s.off} }

// advance moves over n bytes, keeping line and column in step.
func (s *scanner) advance(n int) {
	end := s.off + n
	for s.off < end {
		c := s.src[s.off]
		switch {
		case c == '\n':
			s.line++
			s.col = 1
			s.off++
		case c < utf8.RuneSelf:
			s.col++
			s.off++
		default:
			_, size := utf8.DecodeRuneInString(s.src[s.off:])
			s.col++
			s.off += size
		}
	}
}

func (s *scanner) peek(ahead int) byte {
	if s.off+ahead < len(s.src) {
		return s.src[s.off+ahead]
	}
	return 0
}

func (s *scanner) emit(typ lexer.TokenType, start Pos) int {
	s.toks = append(s.toks, token{typ: typ, text: s.src[start.Byte:s.off], start: start})
	return len(s.toks) - 1
}

func (s *scanner) errorf(code Code, start Pos, format string, args ...any) *Diagnostic {
	return s.diags.Errorf(code, Range{Filename: s.file, Start: start, End: s.pos()}, format, args...)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '-' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' }

// isOpChar reports the characters of the comparison operators = != < <= >
// >= (docs/design/language.md v1.2).
func isOpChar(c byte) bool { return c == '=' || c == '!' || c == '<' || c == '>' }

func (s *scanner) next() {
	start := s.pos()
	c := s.src[s.off]
	switch {
	case isSpace(c):
		s.advance(1)
	case c == ';':
		n := strings.IndexByte(s.src[s.off:], '\n')
		if n < 0 {
			n = len(s.src) - s.off
		}
		s.advance(n)
		s.notes = append(s.notes, Comment{Text: s.src[start.Byte:s.off], Span: Range{Filename: s.file, Start: start, End: s.pos()}})
	case strings.IndexByte("()[]{}", c) >= 0:
		s.advance(1)
		s.emit(syntax.Punct, start)
	case c == '"':
		s.scanString(start)
	case c == ':':
		s.scanSigil(start, syntax.Keyword, "':' must be followed by an argument name, as in :case-id")
	case c == '$':
		s.scanSigil(start, syntax.Input, "'$' must be followed by an input name, as in $client_name")
	case c == '@':
		if s.scanBinding(start) {
			s.scanRefPath()
			ref := &s.toks[len(s.toks)-1]
			ref.text = s.src[start.Byte:s.off]
		}
	case isDigit(c) || (c == '-' && isDigit(s.peek(1))):
		s.scanNumber(start)
	case isIdentStart(c):
		// One identifier is a Word (a constant, or a form's head such as
		// str or and); two or more joined by dots are a Name, a verb's
		// (docs/design/language.md v1.2: the verb is the last part, the domain the
		// rest). The grammar tells a call from a form by this alone.
		s.scanIdent()
		typ := syntax.Word
		for s.peek(0) == '.' && isIdentStart(s.peek(1)) {
			s.advance(1)
			s.scanIdent()
			typ = syntax.Name
		}
		s.emit(typ, start)
	case isOpChar(c):
		// A run of operator characters is one token, so that a mistyped
		// operator ("==", "=<") is reported whole, with the one meant.
		n := 1
		for isOpChar(s.peek(n)) {
			n++
		}
		s.advance(n)
		s.emit(syntax.Op, start)
	default:
		s.scanJunk(start)
	}
}

func (s *scanner) scanIdent() {
	n := 1
	for s.off+n < len(s.src) && isIdentChar(s.src[s.off+n]) {
		n++
	}
	s.advance(n)
}

// scanSigil scans ':name', '$name' or '@name'. It reports a lone sigil and
// returns false.
func (s *scanner) scanSigil(start Pos, typ lexer.TokenType, lone string) bool {
	s.advance(1)
	if !isIdentStart(s.peek(0)) {
		s.errorf(ESyntax, start, "%s", lone)
		return false
	}
	s.scanIdent()
	s.emit(typ, start)
	return true
}

// scanBinding scans '@name'. A binding name may start with a digit, as
// identifiers taken from the outside world do (@529900k9, from an LEI), as
// long as it holds a letter (docs/design/language.md v1.2): "@2024" would read as a
// number. It reports a lone or all-digit name and returns false.
func (s *scanner) scanBinding(start Pos) bool {
	if !isDigit(s.peek(1)) {
		return s.scanSigil(start, syntax.Ref, "'@' must be followed by a binding name, as in @case")
	}
	s.advance(1)
	s.scanIdent()
	if strings.IndexFunc(s.src[start.Byte+1:s.off], func(r rune) bool { return isIdentStart(byte(r)) && r != '_' }) < 0 {
		s.errorf(ESyntax, start, "binding name %q holds no letter; a name may start with a digit but must hold a letter, as in @529900k9", s.src[start.Byte+1:s.off])
		return false
	}
	s.emit(syntax.Ref, start)
	return true
}

// scanRefPath continues a reference over .field and [index] steps. An index
// must be digits; anything else inside brackets ends the reference, and the
// parser then reports the stray bracket.
func (s *scanner) scanRefPath() {
	for {
		switch {
		case s.peek(0) == '.' && isIdentStart(s.peek(1)):
			s.advance(1)
			s.scanIdent()
		case s.peek(0) == '[' && isDigit(s.peek(1)):
			n := 1
			for isDigit(s.peek(n)) {
				n++
			}
			if s.peek(n) != ']' {
				return
			}
			s.advance(n + 1)
		default:
			return
		}
	}
}

func (s *scanner) scanNumber(start Pos) {
	if s.peek(0) == '-' {
		s.advance(1)
	}
	s.scanDigits()
	typ := syntax.Int
	if s.peek(0) == '.' && isDigit(s.peek(1)) {
		typ = syntax.Decimal
		s.advance(1)
		s.scanDigits()
		if c := s.peek(0); c == 'e' || c == 'E' {
			n := 1
			if c := s.peek(1); c == '+' || c == '-' {
				n++
			}
			if isDigit(s.peek(n)) {
				s.advance(n)
				s.scanDigits()
			}
		}
	}
	// A number glued to letters or dots ("12ab", "1.2.3", "1e5") is one bad
	// literal, not several tokens.
	if c := s.peek(0); isIdentChar(c) || c == '.' {
		for c := s.peek(0); isIdentChar(c) || c == '.' || c == '+'; c = s.peek(0) {
			s.advance(1)
		}
		s.errorf(EBadLiteral, start, "malformed number %q (integers are -?[0-9]+, decimals -?[0-9]+.[0-9]+ with an optional exponent)", s.src[start.Byte:s.off])
		typ = syntax.Bad
	} else if typ == syntax.Int {
		if _, err := strconv.ParseInt(s.src[start.Byte:s.off], 10, 64); err != nil {
			s.errorf(EBadLiteral, start, "integer %s does not fit in 64 bits", s.src[start.Byte:s.off])
			typ = syntax.Bad
		}
	} else if _, err := strconv.ParseFloat(s.src[start.Byte:s.off], 64); err != nil {
		s.errorf(EBadLiteral, start, "decimal %s is out of range", s.src[start.Byte:s.off])
		typ = syntax.Bad
	}
	s.emit(typ, start)
}

func (s *scanner) scanDigits() {
	n := 0
	for isDigit(s.peek(n)) {
		n++
	}
	s.advance(n)
}

// scanJunk reports a run of characters that cannot start a token as one
// diagnostic.
func (s *scanner) scanJunk(start Pos) {
	first, size := utf8.DecodeRuneInString(s.src[s.off:])
	invalid := first == utf8.RuneError && size == 1
	for s.off < len(s.src) {
		c := s.src[s.off]
		if isSpace(c) || isIdentStart(c) || isDigit(c) || isOpChar(c) || c == 0 || strings.IndexByte(";()[]{}\":$@-", c) >= 0 {
			break
		}
		_, size := utf8.DecodeRuneInString(s.src[s.off:])
		s.advance(size)
	}
	if s.off == start.Byte { // a lone '-' not followed by a digit
		s.advance(1)
	}
	switch {
	case invalid:
		s.errorf(ESyntax, start, "invalid UTF-8 byte 0x%02X", s.src[start.Byte])
	case s.off-start.Byte > size:
		s.errorf(ESyntax, start, "unexpected characters %q", s.src[start.Byte:s.off])
	default:
		s.errorf(ESyntax, start, "unexpected character %q", first)
	}
}

// scanString scans a string literal, decoding it and reporting each bad
// escape at its own position. A string without escapes is its own value
// (see stringValue) and is scanned without copying.
func (s *scanner) scanString(start Pos) {
	s.advance(1)
	if end := strings.IndexAny(s.src[s.off:], "\"\\"); end >= 0 && s.src[s.off+end] == '"' && utf8.ValidString(s.src[s.off:s.off+end]) {
		s.advance(end + 1)
		s.emit(syntax.String, start)
		return
	}
	var b strings.Builder
	bad := false
	for {
		if s.off >= len(s.src) {
			lineEnd := strings.IndexByte(s.src[start.Byte:], '\n')
			end := start.advance("\"")
			if lineEnd > 0 {
				end = start.advance(s.src[start.Byte : start.Byte+lineEnd])
			}
			s.diags.Errorf(EBadLiteral, Range{Filename: s.file, Start: start, End: end},
				"unterminated string: no closing '\"' before the end of the file")
			s.openStr = true
			s.emit(syntax.Bad, start)
			return
		}
		c := s.src[s.off]
		switch {
		case c == '"':
			s.advance(1)
			if bad {
				s.emit(syntax.Bad, start)
			} else {
				s.strs[s.emit(syntax.String, start)] = b.String()
			}
			// (Only strings with escapes get here; see stringValue.)
			return
		case c == '\\':
			if !s.scanEscape(&b) {
				bad = true
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			s.advance(1)
		default:
			r, size := utf8.DecodeRuneInString(s.src[s.off:])
			if r == utf8.RuneError && size == 1 {
				at := s.pos()
				s.advance(1)
				s.errorf(EBadLiteral, at, "invalid UTF-8 byte 0x%02X in string", c)
				bad = true
				continue
			}
			b.WriteString(s.src[s.off : s.off+size])
			s.advance(size)
		}
	}
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}

// scanEscape decodes one escape sequence at s.off and reports whether it
// was valid.
func (s *scanner) scanEscape(b *strings.Builder) bool {
	at := s.pos()
	if r, ok := simpleEscapes[s.peek(1)]; ok {
		b.WriteByte(r)
		s.advance(2)
		return true
	}
	if s.peek(1) != 'u' {
		if s.off+1 >= len(s.src) {
			s.advance(1)
			return false // the unterminated string is reported by the caller
		}
		_, size := utf8.DecodeRuneInString(s.src[s.off+1:])
		s.advance(1 + size)
		s.errorf(EBadLiteral, at, `unknown escape %s (valid escapes are \" \\ \n \r \t \uXXXX)`, s.src[at.Byte:s.off])
		return false
	}
	r, ok := s.hex4(2)
	if !ok {
		s.advance(2)
		s.errorf(EBadLiteral, at, `\u must be followed by four hex digits`)
		return false
	}
	s.advance(6)
	if r >= 0xD800 && r < 0xDC00 { // a high surrogate needs its low half
		if s.peek(0) == '\\' && s.peek(1) == 'u' {
			if lo, ok := s.hex4(2); ok && lo >= 0xDC00 && lo < 0xE000 {
				s.advance(6)
				b.WriteRune((r-0xD800)<<10 + (lo - 0xDC00) + 0x10000)
				return true
			}
		}
		s.errorf(EBadLiteral, at, `unpaired surrogate %q`, s.src[at.Byte:s.off])
		return false
	}
	if r >= 0xDC00 && r < 0xE000 {
		s.errorf(EBadLiteral, at, `unpaired surrogate %q`, s.src[at.Byte:s.off])
		return false
	}
	b.WriteRune(r)
	return true
}

func (s *scanner) hex4(ahead int) (rune, bool) {
	if s.off+ahead+4 > len(s.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(s.src[s.off+ahead:s.off+ahead+4], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

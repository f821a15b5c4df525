package lang

import (
	"sync"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/runbookdev/runbook/lang/internal/syntax"
)

// shapeCache remembers participle's parse of each call shape. A shape is a
// call's sequence of token types, with the text of the tokens whose text
// steers the grammar (brackets, and names such as true or nil). The grammar
// is LL(1) over exactly those, so two calls of the same shape have parse
// trees that differ only in which tokens they hold.
//
// Participle builds trees by reflection at a few microseconds a token;
// generated or agent-written runbooks repeat a handful of shapes thousands
// of times. Replaying the tree of a known shape cut parse time at 100k
// steps from about 2.4 s to a fraction of that (see BenchmarkParse). Every
// distinct shape is still parsed by participle, and only successful parses
// are remembered, so errors are always participle's own.
type shapeCache struct {
	mu     sync.RWMutex
	shapes map[string]*syntax.Call
}

// useShapeCache is switched off only by BenchmarkParse, to measure what
// participle alone costs.
var useShapeCache = true

// maxShapes bounds the cache; a file with more distinct shapes than this
// parses the rest without it.
const maxShapes = 4096

func newShapeCache() *shapeCache { return &shapeCache{shapes: map[string]*syntax.Call{}} }

// shapeKey describes the tokens of one call.
func shapeKey(toks []lexer.Token) string {
	key := make([]byte, 0, len(toks)*2)
	for _, t := range toks {
		key = append(key, byte(t.Type))
		switch t.Type {
		case syntax.Punct:
			key = append(key, t.Value[0])
		case syntax.Name:
			switch t.Value {
			case "true", "false", "nil":
				key = append(key, t.Value[0])
			default:
				key = append(key, '_')
			}
		}
	}
	return string(key)
}

func (c *shapeCache) lookup(key string) *syntax.Call {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.shapes[key]
}

// remember stores a parsed call as a template: each token's Offset becomes
// its index within the call, so it can be replayed over other tokens.
func (c *shapeCache) remember(key string, call *syntax.Call, toks []lexer.Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.shapes) >= maxShapes || c.shapes[key] != nil {
		return
	}
	index := make(map[int]int, len(toks))
	for i, t := range toks {
		index[t.Pos.Offset] = i
	}
	c.shapes[key] = (&copier{
		token: func(t lexer.Token) lexer.Token { t.Pos.Offset = index[t.Pos.Offset]; return t },
		key:   func(_ lexer.Token, key string) string { return key },
	}).call(call)
}

// replay builds the tree of a call of a remembered shape from its tokens.
// A key is the token just before its value, as the grammar has it.
func replay(tmpl *syntax.Call, toks []lexer.Token) *syntax.Call {
	return (&copier{
		token: func(t lexer.Token) lexer.Token { return toks[t.Pos.Offset] },
		key:   func(first lexer.Token, _ string) string { return toks[first.Pos.Offset-1].Value },
	}).call(tmpl)
}

// copier copies a tree, mapping every token, and every key given the
// first token of its value.
type copier struct {
	token func(lexer.Token) lexer.Token
	key   func(first lexer.Token, key string) string
}

func (cp *copier) call(c *syntax.Call) *syntax.Call {
	out := &syntax.Call{Open: cp.token(c.Open), Verb: cp.token(c.Verb), Close: cp.token(c.Close)}
	out.Keys, out.Values = cp.pairs(c.Keys, c.Values)
	return out
}

func (cp *copier) pairs(keys []string, values []*syntax.Value) ([]string, []*syntax.Value) {
	outKeys := make([]string, len(keys))
	outValues := make([]*syntax.Value, len(values))
	for i, v := range values {
		outKeys[i] = cp.key(firstToken(v), keys[i])
		outValues[i] = cp.value(v)
	}
	return outKeys, outValues
}

func firstToken(v *syntax.Value) lexer.Token {
	switch {
	case v.List != nil:
		return v.List.Open
	case v.Map != nil:
		return v.Map.Open
	}
	return *v.Scalar
}

func (cp *copier) value(v *syntax.Value) *syntax.Value {
	switch {
	case v.List != nil:
		l := &syntax.List{Open: cp.token(v.List.Open), Close: cp.token(v.List.Close), Items: make([]*syntax.Value, len(v.List.Items))}
		for i, item := range v.List.Items {
			l.Items[i] = cp.value(item)
		}
		return &syntax.Value{List: l}
	case v.Map != nil:
		m := &syntax.Map{Open: cp.token(v.Map.Open), Close: cp.token(v.Map.Close)}
		m.Keys, m.Values = cp.pairs(v.Map.Keys, v.Map.Values)
		return &syntax.Value{Map: m}
	}
	t := cp.token(*v.Scalar)
	return &syntax.Value{Scalar: &t}
}

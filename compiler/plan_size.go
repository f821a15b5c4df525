package compiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// DefaultMaxPlanBytes bounds the estimated JSON of a plan whose lists
// written out the compiler expands, when Options say nothing (64 MiB). The
// daemon passes its own --max-plan-bytes (8 MiB).
const DefaultMaxPlanBytes = 64 << 20

// stepOverhead is what a step's JSON holds beyond its arguments (its key,
// verb, execution block, hashes): about 500 bytes in practice (docs/daemon.md,
// "Limits"); counted low, so that the estimate never refuses a plan that
// would fit.
const stepOverhead = 256

// A plan's size is estimated while its lists written out are expanded,
// before each expansion allocates its instances (docs/reliability.md,
// "Under attack"): nested for-each forms multiply, and a 100 KB source
// once became a 1 GB plan in memory (44 s of CPU) before the plan's bytes
// were counted. The estimate counts the JSON each instance's arguments,
// condition and loops' lists would take, an element's value once for each
// time an instance reads it; it walks no more than the budget left.

// sizeOf estimates the JSON bytes of a plan value, stopping once past
// limit. Markers of item count the element's value they become.
func (x *expander) sizeOf(v any, limit int) int {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 && x != nil && x.item != "" {
			if s, ok := v[ItemKey].(string); ok {
				if name, path := splitName(s); name == x.item {
					return x.elemSize(path, limit)
				}
			}
		}
		n := 2
		for k, y := range v {
			n += len(k) + 4 + x.sizeOf(y, limit-n)
			if n > limit {
				return n
			}
		}
		if x != nil && len(v) == 1 {
			n += len(x.suffix) // a reference to a copied step gains [i]
		}
		return n
	case []any:
		n := 2
		for _, y := range v {
			n += 1 + x.sizeOf(y, limit-n)
			if n > limit {
				return n
			}
		}
		return n
	case *Cond:
		if v == nil {
			return 4
		}
		n := len(v.Op) + 16
		for _, a := range v.Args {
			n += 1 + x.sizeOf(a, limit-n)
			if n > limit {
				return n
			}
		}
		return n
	case string:
		return len(v) + 2
	case json.Number:
		return len(v)
	case bool:
		return 5
	case nil:
		return 4
	}
	return 8
}

// elemSize is the size of the element's value at path, worked out once
// per path for each element.
func (x *expander) elemSize(path string, limit int) int {
	if n, ok := x.sizes[path]; ok {
		return n
	}
	elem, err := elementAt(x.elem, path)
	if err != nil {
		return 4 // expand reports it
	}
	n := (*expander)(nil).sizeOf(elem, limit)
	if x.sizes == nil {
		x.sizes = map[string]int{}
	}
	x.sizes[path] = n
	return n
}

// planBytes is a static expansion's running estimate of a plan's JSON,
// and its bound.
type planBytes struct {
	est, limit int
}

// tooManyBytes is the error of a runbook whose lists written out expand
// to a plan larger than a plan may be.
type tooManyBytes struct {
	loop         string
	bytes, limit int
}

// ErrPlanTooLarge is what a bounded expansion's refusal matches
// (errors.Is): the plan would pass its bytes.
var ErrPlanTooLarge = errors.New("the plan would be too large")

func (e *tooManyBytes) Is(target error) bool { return target == ErrPlanTooLarge }

// encodedBytes is the JSON of the plan's steps as sealed, the bulk of its
// size; 0 when it is not sealed, so that the estimate starts low and
// never refuses a plan that would fit.
func (p *Plan) encodedBytes() int {
	if p.sealed == nil || len(p.sealed.steps) != len(p.Steps) {
		return 0
	}
	n := 0
	for _, s := range p.sealed.steps {
		n += len(s) + 1
	}
	return n
}

func (e *tooManyBytes) Error() string {
	return fmt.Sprintf("expanding the list of (for-each ... :as @%s) makes a plan of more than %d bytes (%d at least, estimated before it is made); a plan may have at most %d",
		strings.SplitN(e.loop, "[", 2)[0], e.limit, e.bytes, e.limit)
}

// admit adds to the estimate what expanding loop l over elems makes of the
// plan's steps and loops, less the templates it replaces, and refuses it
// past the bound: before any instance is made.
func (b *planBytes) admit(p *Plan, l *Loop, elems []any, copied map[string]bool, nested []*Loop) error {
	if b == nil {
		return nil
	}
	var plain *expander
	for _, s := range p.Steps {
		if copied[s.Key] {
			b.est -= stepOverhead + len(s.Key) + plain.sizeOf(s.Args, b.limit) + plain.sizeOf(s.When, b.limit)
		}
	}
	for _, m := range nested {
		b.est -= plain.sizeOf(m.List, b.limit)
	}
	for i, elem := range elems {
		x := &expander{item: l.Item, elem: elem, suffix: fmt.Sprintf("[%d]", i)}
		for _, s := range p.Steps {
			if !copied[s.Key] {
				continue
			}
			left := b.limit - b.est
			b.est += stepOverhead + len(s.Key) + len(x.suffix) + x.sizeOf(s.Args, left) + x.sizeOf(s.When, left)
			if b.est > b.limit {
				return &tooManyBytes{loop: l.Key, bytes: b.est, limit: b.limit}
			}
		}
		for _, m := range nested {
			b.est += x.sizeOf(m.List, b.limit-b.est)
			if b.est > b.limit {
				return &tooManyBytes{loop: l.Key, bytes: b.est, limit: b.limit}
			}
		}
	}
	return nil
}

package compiler

import "strings"

// versionUsed is the schema version a plan's content needs: SchemaVersion
// when it uses anything of version 3 (usesVersion3), else Version2 when it
// uses anything of version 2 (usesVersion2), else BaseSchemaVersion.
//
// It decides both in one walk over the steps' arguments, where the two
// walks took about 5 % of the CPU of a 100k-step compile, iterating the
// same small maps twice (BENCHMARKS.md, "Compile under 2 s").
// TestVersionUsedAgreesWithTheTwoWalks holds it to them.
func (p *Plan) versionUsed() int {
	for _, e := range p.Edges {
		if e.Kind == EdgeSettle {
			return SchemaVersion
		}
	}
	for _, l := range p.Loops {
		if hasV3Marker(l.List) {
			return SchemaVersion
		}
	}
	v2 := len(p.Loops) > 0
	for _, s := range p.Steps {
		if s.GateWhen != nil || s.Approvers != "" || s.TimeoutResult != nil || s.RemindAfter != "" || s.Parallel != 0 || s.OnFailureByCode != nil {
			return SchemaVersion
		}
		if s.When != nil && hasV3Marker(s.When) {
			return SchemaVersion
		}
		args2, args3 := markersOf(s.Args)
		if args3 {
			return SchemaVersion
		}
		v2 = v2 || args2 || s.Kind != "" || s.When != nil || s.Loop != "" || strings.Contains(s.Key, "[")
	}
	if v2 {
		return Version2
	}
	return BaseSchemaVersion
}

// markersOf is hasNewMarker(v) and hasV3Marker(v) in one walk. It stops
// at the first marker of version 3, whose plan needs version 3 whatever
// else it holds; v2 is then only what was seen so far.
func markersOf(v any) (v2, v3 bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if len(v) == 1 {
				switch k {
				case StrKey, FailureKey, ItemKey:
					v2 = true
				case InputKey:
					if in, ok := item.(string); ok && strings.ContainsAny(in, ".[") {
						v2 = true
					}
				}
				if isV3Marker(k) {
					return v2, true
				}
				if f, ok := item.(string); ok && k == FailureKey && strings.HasPrefix(f, failuresBinding) {
					return v2, true
				}
			}
			in2, in3 := markersOf(item)
			if in3 {
				return v2 || in2, true
			}
			v2 = v2 || in2
		}
	case []any:
		for _, item := range v {
			in2, in3 := markersOf(item)
			if in3 {
				return v2 || in2, true
			}
			v2 = v2 || in2
		}
	case *Cond:
		// hasNewMarker does not look into a condition; hasV3Marker does.
		return false, hasV3Marker(v)
	}
	return v2, false
}

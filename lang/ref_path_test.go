package lang

import "testing"

// PathString is the name and every step as written, made in one
// allocation.
func TestPathStringJoinsTheSteps(t *testing.T) {
	for _, r := range []*Ref{{Name: "a"}, {Name: "s0", Path: []PathStep{{Field: "value"}}}, {Name: "x", Path: []PathStep{{Index: 0, IsIndex: true}, {Field: "f"}, {Index: 12345, IsIndex: true}, {Index: -3, IsIndex: true}}}} {
		want := r.Name
		for _, p := range r.Path {
			want += p.String()
		}
		if got := r.PathString(); got != want {
			t.Fatalf("%q != %q", got, want)
		}
	}
}

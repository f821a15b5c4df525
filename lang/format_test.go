package lang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
)

// TestFormat pins the formatter's output for testdata/format/*.rbk in
// *.golden (regenerate with go test -update), and checks that formatting
// is idempotent and keeps meaning and comments.
func TestFormat(t *testing.T) {
	inputs, err := filepath.Glob("testdata/format/*.rbk")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			require.NoError(t, err)
			f, diags := Parse(in, src)
			require.Empty(t, diags)
			out := Format(f)
			golden.Assert(t, string(out), strings.TrimPrefix(strings.TrimSuffix(in, ".rbk")+".golden", "testdata/"))
			assertFormatStable(t, f, out)
		})
	}
}

// assertFormatStable checks what every formatting must keep: the output
// parses, formats to itself, holds the same calls, and every comment.
func assertFormatStable(t *testing.T, before *File, out []byte) {
	t.Helper()
	after, diags := Parse("formatted.rbk", out)
	require.Empty(t, diags, "formatted output must parse:\n%s", out)
	require.Equal(t, string(out), string(Format(after)), "formatting must be idempotent")
	require.Equal(t, flatCalls(before), flatCalls(after), "formatting must not change meaning")
	require.Equal(t, commentTexts(before), commentTexts(after), "formatting must keep every comment, in order")
}

func flatCalls(f *File) []string {
	var out []string
	var node func(n Node)
	node = func(n Node) {
		switch n := n.(type) {
		case *Call:
			out = append(out, flatCall(n))
		case *OnFailure:
			out = append(out, "(on-failure")
			for _, c := range n.Calls {
				out = append(out, flatCall(c))
			}
			out = append(out, ")")
		case *ForEach:
			head := "(for-each"
			if n.List != nil {
				head += " " + flatValue(n.List)
			}
			for _, o := range n.Options {
				head += " :" + o.Name + " " + flatValue(o.Value)
			}
			out = append(out, head)
			for _, b := range n.Body {
				node(b)
			}
			out = append(out, ")")
		}
	}
	for _, n := range f.Top() {
		node(n)
	}
	return out
}

func commentTexts(f *File) []string {
	out := make([]string, len(f.Comments))
	for i, c := range f.Comments {
		out[i] = c.Text
	}
	return out
}

func TestFormatEmpty(t *testing.T) {
	f, _ := Parse("e.rbk", nil)
	require.Empty(t, Format(f))
	f, _ = Parse("c.rbk", []byte(";; only a comment\n"))
	require.Equal(t, ";; only a comment\n", string(Format(f)))
}

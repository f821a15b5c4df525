package machine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// AttemptID is the name-based UUID of runbook id, step key and attempt
// that it always was (ids already stored in ledgers and spans must not
// change), for short keys and for keys longer than its buffer.
func TestAttemptIDIsTheNameBasedUUID(t *testing.T) {
	for _, key := range []string{"", "s1", "each[12].inner", "é\x00\"", strings.Repeat("k", 300)} {
		for _, attempt := range []int{0, 1, 7, 1 << 40, -3} {
			rb := uuid.New()
			want := uuid.NewSHA1(namespaceAttempt, []byte(rb.String()+"\x00"+key+"\x00"+strconv.Itoa(attempt)))
			require.Equal(t, want, AttemptID(rb, key, attempt), "%q %d", key, attempt)
		}
	}
	rb := uuid.MustParse("00000000-0000-0000-0000-000000000001")
	require.Equal(t, uuid.NewSHA1(namespaceAttempt, []byte(rb.String()+"\x00s\x001")), AttemptID(rb, "s", 1))
}

func BenchmarkAttemptID(b *testing.B) {
	rb := uuid.New()
	b.ReportAllocs()
	for b.Loop() {
		AttemptID(rb, "step_12", 1)
	}
}

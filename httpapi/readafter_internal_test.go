package httpapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWALPositionsCompareAsNumbers(t *testing.T) {
	for _, bad := range []string{"", "0", "/1", "1/", "G/1", "123456789/0", "1/2/3", "-1/0"} {
		_, ok := parseWAL(bad)
		require.False(t, ok, bad)
	}
	require.True(t, walAfter("0/10", "0/F"), "hexadecimal, not text")
	require.True(t, walAfter("1/0", "0/FFFFFFFF"))
	require.False(t, walAfter("0/F", "0/F"))
	require.True(t, walAfter("0/1", ""), "anything is after nothing")
	require.False(t, walAfter("", "0/1"))
}

func TestLastWritesAreRememberedForAWhile(t *testing.T) {
	var l lastWrites
	p, q := &Principal{Actor: "a"}, &Principal{Actor: "b"}
	now := time.Now()
	l.wrote(p, "0/20", now)
	l.wrote(p, "0/10", now.Add(time.Second)) // an answer that came late
	require.Equal(t, "0/20", l.of(p, now.Add(2*time.Second)), "the later position stands")
	require.Equal(t, "", l.of(q, now), "another token's writes are not this one's")
	require.Equal(t, "", l.of(p, now.Add(readYourWritesWindow+time.Second)), "forgotten after the window")
	l.wrote(nil, "0/30", now)
}

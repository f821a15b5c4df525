package verbs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	iso "github.com/sosodev/duration"
)

// Duration is an ISO 8601 duration as written in a verb file, with its
// length. It marshals as the text, so the plan shows what the author wrote.
type Duration struct {
	ISO string
	D   time.Duration
}

// ParseDuration parses an ISO 8601 duration such as P14D or PT30S. Years
// and months are refused because their length depends on the calendar; a
// timeout must mean the same thing on every day. Zero and negative
// durations are refused too.
func ParseDuration(s string) (Duration, error) {
	d, err := iso.Parse(s)
	if err != nil {
		return Duration{}, fmt.Errorf("%q is not an ISO 8601 duration (examples: PT30S, PT5M, P14D)", s)
	}
	if d.Years != 0 || d.Months != 0 {
		return Duration{}, fmt.Errorf("%q uses years or months, whose length varies; use days (P30D) instead", s)
	}
	if d.Negative {
		return Duration{}, fmt.Errorf("%q is negative", s)
	}
	td := d.ToTimeDuration()
	if td <= 0 {
		return Duration{}, fmt.Errorf("%q is not longer than zero", s)
	}
	return Duration{ISO: s, D: td}, nil
}

// DurationOf is a length as a Duration, its text written in ISO 8601 (for
// a default computed from another duration).
func DurationOf(d time.Duration) Duration {
	return Duration{ISO: formatISO(d), D: d}
}

// formatISO writes a positive length in days, hours, minutes and seconds
// (never years, months or weeks, which ParseDuration refuses or which
// vary).
func formatISO(d time.Duration) string {
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	out := "P"
	if days > 0 {
		out += strconv.FormatInt(int64(days), 10) + "D"
	}
	if h == 0 && m == 0 && d == 0 {
		if days == 0 {
			return "PT0S"
		}
		return out
	}
	out += "T"
	if h > 0 {
		out += strconv.FormatInt(int64(h), 10) + "H"
	}
	if m > 0 {
		out += strconv.FormatInt(int64(m), 10) + "M"
	}
	if d > 0 {
		out += strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "S"
	}
	return out
}

// MustDuration parses a duration known to be valid.
func MustDuration(s string) Duration {
	d, err := ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// MarshalJSON writes the ISO text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.ISO) }

// UnmarshalJSON reads the ISO text, so a stored plan round-trips.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("duration must be an ISO 8601 string")
	}
	parsed, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// String returns the ISO text.
func (d Duration) String() string { return d.ISO }

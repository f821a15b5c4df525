package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report collects the results.
type report struct {
	Machine map[string]string `json:"machine"`
	Started time.Time         `json:"started"`
	Took    string            `json:"took"`
	Options map[string]any    `json:"options"`
	Rows    []row             `json:"results"`
}

// row is one result: what was measured, the figure, and the target.
type row struct {
	Measure string  `json:"measure"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Target  string  `json:"target,omitempty"`
	// Met is nil when the row has no target.
	Met  *bool  `json:"met,omitempty"`
	Note string `json:"note,omitempty"`
}

func (r *report) add(measure string, value float64, unit string) *row {
	r.Rows = append(r.Rows, row{Measure: measure, Value: value, Unit: unit})
	return &r.Rows[len(r.Rows)-1]
}

// atLeast and atMost set a target and whether it was met.
func (w *row) atLeast(target float64, text string) *row {
	met := w.Value >= target
	w.Target, w.Met = text, &met
	return w
}

func (w *row) atMost(target float64, text string) *row {
	met := w.Value <= target
	w.Target, w.Met = text, &met
	return w
}

func (w *row) note(format string, args ...any) *row {
	w.Note = fmt.Sprintf(format, args...)
	return w
}

func (r *report) print(out io.Writer) {
	fmt.Fprintf(out, "\nrbload results (%s, took %s)\n", r.Started.Format("2006-01-02 15:04"), r.Took)
	keys := make([]string, 0, len(r.Machine))
	for k := range r.Machine {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  %-9s %s\n", k, r.Machine[k])
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tRESULT\tTARGET\tMET\tNOTE")
	for _, w := range r.Rows {
		met := ""
		if w.Met != nil {
			met = "no"
			if *w.Met {
				met = "yes"
			}
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\n", w.Measure, format(w.Value), w.Unit, w.Target, met, w.Note)
	}
	_ = tw.Flush()
}

func (r *report) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// format shows a figure with sensible precision.
func format(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return withCommas(int64(math.Round(v)))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func withCommas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// percentile returns the p-th percentile (0–100) of samples by the
// nearest-rank method; samples need not be sorted.
func percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// median is the middle of the values (the mean of the two middle ones
// for an even count).
func median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runs collects one figure per run, for the median over runs.
type runs map[string][]float64

func (r runs) add(name string, v float64) { r[name] = append(r[name], v) }

func (r runs) median(name string) float64 { return median(r[name]) }

func (r runs) spread(name string) string {
	vs := r[name]
	if len(vs) < 2 {
		return ""
	}
	return fmt.Sprintf("runs: %s", joinFormatted(vs))
}

func joinFormatted(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = format(v)
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// notes joins the parts of a note that are not empty with "; ", so that a
// single run's empty spread leaves no dangling separator.
func notes(parts ...string) string {
	kept := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

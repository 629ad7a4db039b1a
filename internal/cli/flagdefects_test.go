package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlagValuesRefused: the flag values that used to run and print a
// wrong answer (or nothing) with exit 0 or 1 now end the command before
// it reads anything, with exit 2 and one line naming the flag and the
// value.
func TestFlagValuesRefused(t *testing.T) {
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeSlowLog(t, rec)
	html := filepath.Join(tmp, "r.html")
	cases := []struct {
		name        string
		args        []string
		flag, value string
		also        string // more the error must say
	}{
		// 90.9% of slow requests on cpu-steal, 0 s explained.
		{"explain --share NaN", []string{"explain", rec, "--share", "NaN"}, "--share", "NaN", "want a fraction"},
		{"explain --share Inf", []string{"explain", rec, "--share", "+Inf"}, "--share", "+Inf", ""},
		// Every request slow, "(pNaN)".
		{"explain --percentile NaN", []string{"explain", rec, "--percentile", "NaN"}, "--percentile", "NaN", "want a percentile"},
		{"report --percentile NaN", []string{"report", rec, "-o", html, "--percentile", "NaN"}, "--percentile", "NaN", ""},
		// A negative threshold printed every row.
		{"requests --slow -5ms", []string{"requests", realCapture, "--slow", "-5ms"}, "--slow", "-5ms", "must not be negative"},
		// Unknown APIs printed an empty table.
		{"requests --api prodcue", []string{"requests", realCapture, "--api", "prodcue"}, "--api", "prodcue", "did you mean produce?"},
		{"requests --api 999", []string{"requests", realCapture, "--api", "999"}, "--api", "999", "unknown API key 999"},
		{"requests --api -1", []string{"requests", realCapture, "--api", "-1"}, "--api", "-1", "unknown API key -1"},
		{"requests --api among known", []string{"requests", realCapture, "--api", "fetch,prodcue"}, "--api", "fetch,prodcue", "did you mean produce?"},
		// A negative count dropped the slowest-requests section.
		{"requests --top -3", []string{"requests", "--summary", realCapture, "--top", "-3"}, "--top", "-3", "must be positive"},
		{"explain --top -3", []string{"explain", rec, "--top", "-3"}, "--top", "-3", "must be positive"},
		// Negative (and zero) durations became explain's defaults.
		{"explain --stall -1s", []string{"explain", rec, "--stall", "-1s"}, "--stall", "-1s", "must be positive"},
		{"explain --stall 0", []string{"explain", rec, "--stall", "0"}, "--stall", "0", "must be positive"},
		{"explain --slow-write -1s", []string{"explain", rec, "--slow-write", "-1s"}, "--slow-write", "-1s", "must be positive"},
		// Exit 1, as if the lab had failed.
		{"lab broker start --brokers -1", []string{"lab", "broker", "start", "--dir", tmp, "--brokers", "-1"}, "--brokers", "-1", "must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d\nstdout: %.300s\nstderr: %.300s", code, ExitBadInput, out, errOut)
			}
			if out != "" {
				t.Errorf("stdout: %.300s", out)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
			for _, want := range []string{`"` + c.flag + `"`, `"` + c.value + `"`, c.also} {
				if !strings.Contains(errOut, want) {
					t.Errorf("error %q lacks %q", errOut, want)
				}
			}
		})
	}
}

// TestSlowAPINames: the agent's slow log compares the names decoded
// requests carry (kmsg's: "Produce"); --slow-api produce, or 0, kept no
// request at all.
func TestSlowAPINames(t *testing.T) {
	got := apiNames([]string{"produce", "0", "FETCH", "ApiVersions"})
	want := []string{"Produce", "Produce", "Fetch", "ApiVersions"}
	if !slices.Equal(got, want) {
		t.Errorf("apiNames = %q, want %q", got, want)
	}
}

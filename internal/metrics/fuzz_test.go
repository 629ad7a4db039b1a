package metrics

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// FuzzCleanLabel: label values come from the wire. Whatever the input,
// cleanLabel must not panic and must return valid UTF-8 of at most
// maxLabelBytes without control characters, that client_golang takes as
// a label value and that survives the text exposition format.
func FuzzCleanLabel(f *testing.F) {
	for _, seed := range []string{
		"", "producer-1", "consumer\x00", "a\nb\rc\td", "\x7f", "\u0085\u009f", "\xff\xfe\xfd", "\xe2\x82",
		"生产者", "\u2028\u202e", "\uFFFD", `back\slash "quoted"`, strings.Repeat("x", 200),
		strings.Repeat("é", 70), strings.Repeat("€", 43), strings.Repeat("a", 127) + "\U0001F600",
		strings.Repeat("a", 125) + "\x01", strings.Repeat("\x00", 40),
	} {
		f.Add(seed)
	}
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fuzz_total", Help: "h"}, []string{"client_id"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(vec)
	f.Fuzz(func(t *testing.T, in string) {
		got := cleanLabel(in)
		if !utf8.ValidString(got) {
			t.Fatalf("cleanLabel(%q) = %q: invalid UTF-8", in, got)
		}
		if len(got) > maxLabelBytes {
			t.Fatalf("cleanLabel(%q): %d bytes", in, len(got))
		}
		for _, r := range got {
			if unicode.IsControl(r) {
				t.Fatalf("cleanLabel(%q) = %q: control character %U", in, got, r)
			}
		}
		if again := cleanLabel(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, got, again)
		}
		// A value that needs no cleaning is kept as it is.
		needsNone := utf8.ValidString(in) && len(in) <= maxLabelBytes && strings.IndexFunc(in, unicode.IsControl) < 0
		if needsNone && got != in {
			t.Fatalf("cleanLabel(%q) = %q, want it unchanged", in, got)
		}
		// The first character always fits: nothing becomes empty.
		if in != "" && got == "" {
			t.Fatalf("cleanLabel(%q) is empty", in)
		}
		if !model.LabelValue(got).IsValid() {
			t.Fatalf("model rejects %q", got)
		}
		c, err := vec.GetMetricWithLabelValues(got)
		if err != nil {
			t.Fatalf("client_golang rejects %q: %v", got, err)
		}
		c.Inc()
		defer vec.Reset()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather with %q: %v", got, err)
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatalf("encode %q: %v", got, err)
			}
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		parsed, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("parse the exposition of %q: %v\n%s", got, err, buf.String())
		}
		ms := parsed["fuzz_total"].GetMetric()
		if len(ms) != 1 || len(ms[0].GetLabel()) != 1 || ms[0].GetLabel()[0].GetValue() != got {
			t.Fatalf("exposition round trip of %q: %v", got, ms)
		}
	})
}

package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"producer-1", "producer-1"},
		{"a\x1b[31mred", `a\x1b[31mred`},
		{"new\nline", `new\x0aline`},
		{`back\slash`, `back\\slash`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"zürich", "zürich"},
		{"rtl\u202eoverride", `rtl\u{202e}override`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func sample() *event.Request {
	acks := int16(-1)
	at := time.Date(2026, 11, 21, 12, 11, 36, 521043000, time.UTC)
	return &event.Request{Arrival: at, End: at.Add(538 * time.Millisecond), LatencyMs: 538, Answered: true,
		Client: "127.0.0.1:51234", Broker: "127.0.0.1:9092", API: "Produce", APIVersion: 11, CorrelationID: 4711,
		ClientID: "evil\x1b]0;title\x07", Acks: &acks,
		Partitions: []event.Partition{{Topic: "topicA", Partition: 2, Records: 3, Bytes: 2009, MessageIDs: []string{"371409548", "2", "3"}}}}
}

func TestFormats(t *testing.T) {
	for _, format := range Formats {
		var buf bytes.Buffer
		w, err := NewRequestWriter(&buf, format)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(sample()); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("%s: control characters from the wire reached the output: %q", format, out)
		}
		switch format {
		case "table":
			if !strings.Contains(out, "371409548 +2") || !strings.Contains(out, "12:11:36.521043") || !strings.Contains(out, "538.000") {
				t.Errorf("table:\n%s", out)
			}
		case "json":
			var back event.Request
			if err := json.Unmarshal([]byte(out), &back); err != nil {
				t.Fatal(err)
			}
			if back.CorrelationID != 4711 || back.ClientID != sample().ClientID || !back.End.Equal(sample().End) || len(back.Partitions[0].MessageIDs) != 3 {
				t.Errorf("json round trip: %+v", back)
			}
		case "csv":
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[1][15] != "topicA" || rows[1][20] != "371409548 2 3" {
				t.Errorf("csv: %q", rows)
			}
		}
	}
	if _, err := NewRequestWriter(&bytes.Buffer{}, "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

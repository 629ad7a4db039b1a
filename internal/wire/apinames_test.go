package wire

import (
	"strings"
	"testing"
)

func TestParseAPI(t *testing.T) {
	cases := []struct {
		in      string
		key     int16
		wantErr string // substring; "" when the API is known
	}{
		{in: "produce", key: 0},
		{in: "Produce", key: 0},
		{in: "FETCH", key: 1},
		{in: " fetch ", key: 1},
		{in: "18", key: 18},
		{in: "ApiVersions", key: 18},
		{in: "0", key: 0},
		{in: "prodcue", wantErr: `unknown API "prodcue": did you mean produce?`},
		{in: "ApiVersion", wantErr: "did you mean ApiVersions?"},
		{in: "metdata", wantErr: "did you mean metadata?"},
		{in: "apivers", wantErr: "did you mean apiversions?"},
		{in: "desc", wantErr: `unknown API "desc" (give a name`},
		{in: "zzzzzzzz", wantErr: `unknown API "zzzzzzzz" (give a name`},
		{in: "999", wantErr: "unknown API key 999"},
		{in: "-1", wantErr: "unknown API key -1"},
		{in: "70000", wantErr: "unknown API key 70000"},
		{in: "1.5", wantErr: "unknown API key 1.5"},
		{in: "", wantErr: "empty API name"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			key, err := ParseAPI(c.in)
			if c.wantErr == "" {
				if err != nil || key != c.key {
					t.Fatalf("ParseAPI(%q) = %d, %v; want %d", c.in, key, err, c.key)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ParseAPI(%q) error = %v; want it to contain %q", c.in, err, c.wantErr)
			}
		})
	}
}

// FuzzParseAPI: any string is a known API or an error, never a panic, and
// a known API's name resolves to the same key.
func FuzzParseAPI(f *testing.F) {
	for _, s := range []string{"produce", "Fetch", "18", "prodcue", "-1", "999", "", "\x1b[31m", "ApiVersion"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseAPI(s)
		if err != nil {
			return
		}
		back, err := ParseAPI(APIName(key))
		if err != nil || back != key {
			t.Fatalf("%q: key %d, its name %q gives %d, %v", s, key, APIName(key), back, err)
		}
	})
}

// TestParseAPILongName: a name far longer than any API's is refused at
// once, without an edit distance over all of it, and its error quotes
// the start of it, not a whole command line.
func TestParseAPILongName(t *testing.T) {
	_, err := ParseAPI(strings.Repeat("produce", 20000))
	if err == nil || !strings.Contains(err.Error(), `unknown API "produceproduce`) || len(err.Error()) > 200 {
		t.Fatalf("error %.300v", err)
	}
}

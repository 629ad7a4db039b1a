package protodef

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGroup(t *testing.T) {
	a := []API{{Key: 11, Min: 2, Max: 9, Broker: true}}
	b := []API{{Key: 11, Min: 0, Max: 9, Broker: true}}
	jar := func(v string, apis []API) Jar { return Jar{Version: v, SHA256: "sha-" + v, APIs: apis} }
	cases := []struct {
		name string
		jars []Jar
		want map[string][]string // release name -> its patches
		// order of the names
		names []string
	}{
		{
			name:  "a patch that differs from the next one is a release of its own",
			jars:  []Jar{jar("4.0.2", b), jar("4.1.0", b), jar("4.0.0", a), jar("4.0.1", b)},
			names: []string{"4.0.0", "4.0", "4.1"},
			want:  map[string][]string{"4.0.0": {"4.0.0"}, "4.0": {"4.0.1", "4.0.2"}, "4.1": {"4.1.0"}},
		},
		{
			name:  "the same protocol in two minors stays two releases",
			jars:  []Jar{jar("3.9.0", a), jar("4.0.0", a)},
			names: []string{"3.9", "4.0"},
			want:  map[string][]string{"3.9": {"3.9.0"}, "4.0": {"4.0.0"}},
		},
		{
			name:  "versions sort as numbers",
			jars:  []Jar{jar("4.10.0", a), jar("4.9.0", a), jar("4.9.10", b), jar("4.9.2", b)},
			names: []string{"4.9.0", "4.9", "4.10"},
			want:  map[string][]string{"4.9.0": {"4.9.0"}, "4.9": {"4.9.2", "4.9.10"}, "4.10": {"4.10.0"}},
		},
		{
			name:  "names differ, facts equal: one release",
			jars:  []Jar{jar("4.2.0", []API{{Key: 1, Name: "X"}}), jar("4.2.1", []API{{Key: 1, Name: "Y"}})},
			names: []string{"4.2"},
			want:  map[string][]string{"4.2": {"4.2.0", "4.2.1"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Group(c.jars)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			patches := map[string][]string{}
			for _, r := range got {
				names = append(names, r.Name)
				for _, j := range r.Jars {
					patches[r.Name] = append(patches[r.Name], j.Version)
				}
			}
			if !reflect.DeepEqual(names, c.names) || !reflect.DeepEqual(patches, c.want) {
				t.Errorf("got names %v patches %v, want %v %v", names, patches, c.names, c.want)
			}
		})
	}
}

func TestGroupRefuses(t *testing.T) {
	cases := []struct {
		name    string
		jars    []Jar
		wantErr string
	}{
		{"twice", []Jar{{Version: "4.0.1"}, {Version: "4.0.1"}}, "listed twice"},
		{"not a version", []Jar{{Version: "4.0"}}, `"4.0": want three numbers`},
	}
	for _, c := range cases {
		if _, err := Group(c.jars); err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.wantErr)
		}
	}
}

func TestReadList(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
		wantErr    string
	}{
		{"comments and blanks", "# head\n\n4.0.2 # newest\n  3.9.2\n", []string{"4.0.2", "3.9.2"}, ""},
		{"a bad line names its line", "4.0.2\n4.1\n", nil, "list:2: Kafka version \"4.1\""},
		{"empty", "# nothing\n", nil, "no versions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "list")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadList(path)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

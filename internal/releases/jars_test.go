package releases

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kscope-dev/kscope/internal/releases/protodef"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// TestTableMatchesJars reads every jar the committed table names again
// (scripts/kafka-clients-jars.sh fetches them), derives the table from
// them as the generator does, and compares: each release's name, patches,
// source and jars' sha256, and each API entry.
func TestTableMatchesJars(t *testing.T) {
	dir, err := protodef.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	listed, err := protodef.ReadList("releases.txt")
	if err != nil {
		t.Fatal(err)
	}
	var tablePatches []string
	for _, r := range table {
		tablePatches = append(tablePatches, r.Patches...)
	}
	if !slices.Equal(listed, tablePatches) {
		t.Fatalf("releases.txt lists %v, the table holds %v: run go generate ./internal/releases", listed, tablePatches)
	}
	jars := readJars(t, dir, listed)
	derived, err := protodef.Group(jars)
	if err != nil {
		t.Fatal(err)
	}
	if len(derived) != len(table) {
		t.Fatalf("the jars make %d releases, the table has %d: %v", len(derived), len(table), Names())
	}
	for i, want := range derived {
		for _, diff := range compareRelease(&table[i], want) {
			t.Errorf("table entry %s: %s", table[i].Name, diff)
		}
	}
}

// readJars reads the kafka-clients jar of each version from dir. A missing
// jar skips the test with the command that fetches it, or fails it under
// CI=true.
func readJars(t *testing.T, dir string, versions []string) []protodef.Jar {
	t.Helper()
	var jars []protodef.Jar
	for _, v := range versions {
		path := filepath.Join(dir, protodef.JarName(v))
		jar, err := protodef.ReadJar(path)
		if errors.Is(err, fs.ErrNotExist) {
			labtest.Unavailable(t, "%s is missing: fetch it with scripts/kafka-clients-jars.sh", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if jar.Version != v {
			t.Fatalf("%s declares version %s", path, jar.Version)
		}
		jars = append(jars, jar)
	}
	return jars
}

// compareRelease lists how a table entry differs from the release derived
// from the jars.
func compareRelease(got *Release, want protodef.Release) []string {
	var diffs []string
	if got.Name != want.Name {
		diffs = append(diffs, fmt.Sprintf("name %q, the jars say %q", got.Name, want.Name))
	}
	if src := protodef.Source(want.Newest()); got.Source != src {
		diffs = append(diffs, fmt.Sprintf("source %q, the jars say %q", got.Source, src))
	}
	var wantJars []jarRef
	for _, j := range want.Jars {
		wantJars = append(wantJars, jarRef{version: j.Version, sha256: j.SHA256})
	}
	if !slices.Equal(got.jars, wantJars) {
		diffs = append(diffs, fmt.Sprintf("jars %v, the cache has %v", got.jars, wantJars))
	}
	return append(diffs, compareAPIs(got.apis, want.Newest().APIs)...)
}

// compareAPIs lists, key by key, the entries that differ.
func compareAPIs(got []apiFacts, want []protodef.API) []string {
	table := map[int16]apiFacts{}
	for _, f := range got {
		table[f.key] = f
	}
	var diffs []string
	for _, a := range want {
		w := apiFacts{key: a.Key, min: a.Min, max: a.Max, removed: a.Removed, latestUnstable: a.LatestUnstable, broker: a.Broker}
		g, ok := table[a.Key]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: missing, the jar has %+v", keyAndName(a.Key), w))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s: %+v, the jar has %+v", keyAndName(a.Key), g, w))
		}
		delete(table, a.Key)
	}
	for _, key := range slices.Sorted(maps.Keys(table)) {
		diffs = append(diffs, fmt.Sprintf("%s: %+v, not in the jar", keyAndName(key), table[key]))
	}
	return diffs
}

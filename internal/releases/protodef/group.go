package protodef

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// Release is a run of patch releases of one minor whose jars declare the
// same protocol: what internal/releases keeps as one table entry.
type Release struct {
	// Name is the minor ("4.0") for the newest run of a minor, and the
	// newest patch of the run ("4.0.0") for an older run.
	Name string
	// Jars are the run's jars, oldest first.
	Jars []Jar
}

// Newest is the run's newest jar, the one its table is read from.
func (r Release) Newest() Jar { return r.Jars[len(r.Jars)-1] }

// Source says where a table read from jar comes from.
func Source(jar Jar) string {
	return fmt.Sprintf("%s (sha256 %s): common/message/*Request.json apiKey, listeners, validVersions, latestVersionUnstable",
		JarName(jar.Version), jar.SHA256)
}

// Group sorts jars by version and splits each minor into runs of
// consecutive patches that declare the same protocol. Two jars of the same
// version, or a version that is not three decimal numbers, are an error.
func Group(jars []Jar) ([]Release, error) {
	sorted := slices.Clone(jars)
	for _, j := range sorted {
		if _, err := SplitVersion(j.Version); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(sorted, func(a, b Jar) int { return CompareVersions(a.Version, b.Version) })
	var out []Release
	for i, j := range sorted {
		if i > 0 && sorted[i-1].Version == j.Version {
			return nil, fmt.Errorf("kafka-clients %s listed twice", j.Version)
		}
		if n := len(out); n > 0 && minor(out[n-1].Newest().Version) == minor(j.Version) &&
			SameProtocol(out[n-1].Newest().APIs, j.APIs) {
			out[n-1].Jars = append(out[n-1].Jars, j)
			continue
		}
		out = append(out, Release{Jars: []Jar{j}})
	}
	for i := range out {
		out[i].Name = out[i].Newest().Version
		if i == len(out)-1 || minor(out[i+1].Jars[0].Version) != minor(out[i].Newest().Version) {
			out[i].Name = minor(out[i].Newest().Version)
		}
	}
	return out, nil
}

// SameProtocol says whether two lists of definitions declare the same
// facts (message names aside: the table does not keep them).
func SameProtocol(a, b []API) bool {
	return slices.EqualFunc(a, b, func(x, y API) bool {
		x.Name, y.Name = "", ""
		return x == y
	})
}

// SplitVersion splits "4.0.2" into its three numbers.
func SplitVersion(v string) ([3]int, error) {
	var n [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return n, fmt.Errorf("Kafka version %q: want three numbers, as 4.0.2", v)
	}
	for i, p := range parts {
		if p == "" || len(p) > 4 || strings.Trim(p, "0123456789") != "" {
			return n, fmt.Errorf("Kafka version %q: want three numbers, as 4.0.2", v)
		}
		n[i], _ = strconv.Atoi(p)
	}
	return n, nil
}

// CompareVersions orders versions numerically (4.10.0 after 4.9.0);
// versions SplitVersion refuses sort as text after the others.
func CompareVersions(a, b string) int {
	na, errA := SplitVersion(a)
	nb, errB := SplitVersion(b)
	switch {
	case errA != nil && errB != nil:
		return strings.Compare(a, b)
	case errA != nil:
		return 1
	case errB != nil:
		return -1
	}
	return slices.Compare(na[:], nb[:])
}

// minor is "4.0" for "4.0.2"; only called on versions SplitVersion took.
func minor(v string) string {
	return v[:strings.LastIndexByte(v, '.')]
}

// maxListBytes bounds releases.txt, a list of a few dozen versions.
const maxListBytes = 64 << 10

// ReadList reads the list of releases (internal/releases/releases.txt):
// one version a line, '#' starting a comment.
func ReadList(path string) ([]string, error) {
	data, err := safefile.ReadRegular(path, maxListBytes)
	if err != nil {
		return nil, fmt.Errorf("release list: %w", err)
	}
	var versions []string
	for i, line := range bytes.Split(data, []byte("\n")) {
		line, _, _ = bytes.Cut(line, []byte("#"))
		v := string(bytes.TrimSpace(line))
		if v == "" {
			continue
		}
		if _, err := SplitVersion(v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s: no versions", path)
	}
	return versions, nil
}

package releases

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Release is one Kafka release's protocol: for each API key it serves, the
// range of versions it accepts.
type Release struct {
	// Name is what the release is called: a minor ("4.0") for the newest
	// patch releases of that minor, a patch ("4.0.0") for an older patch
	// whose protocol differs from them.
	Name string
	// Source says where the table comes from: the jar it was read from,
	// its sha256, and the files and fields read.
	Source string
	// Patches are the patch releases whose jars were read and declare
	// exactly this table, oldest first ("4.0.1", "4.0.2").
	Patches []string

	jars []jarRef   // every patch's jar, for TestTableMatchesJars
	apis []apiFacts // sorted by key
}

// jarRef names one kafka-clients jar the table was checked against.
type jarRef struct {
	version string
	sha256  string
}

// apiFacts is what a release's request definition says about one API,
// as declared: the decisions (which versions are accepted) are made by
// the methods, so that the generated table stays a plain copy of the jar.
type apiFacts struct {
	key            int16
	min, max       int16 // validVersions; 0, 0 when removed
	removed        bool  // validVersions "none"
	latestUnstable bool  // latestVersionUnstable: max is refused by default
	broker         bool  // listeners include "broker"
}

// apiVersionsKey is ApiVersions, which a broker accepts at any version.
const apiVersionsKey = 18

// stableMax is the newest version a broker accepts at its defaults.
func (f apiFacts) stableMax() int16 {
	if f.latestUnstable {
		return f.max - 1
	}
	return f.max
}

// served: a broker's listener takes the API at some version by default.
func (f apiFacts) served() bool {
	return f.broker && !f.removed && f.stableMax() >= f.min
}

func (r *Release) facts(key int16) (apiFacts, bool) {
	i, found := slices.BinarySearchFunc(r.apis, key, func(f apiFacts, k int16) int { return int(f.key) - int(k) })
	if !found {
		return apiFacts{}, false
	}
	return r.apis[i], true
}

// Range returns the versions of API key the release's brokers accept by
// default, and served false (with 0, 0) when a broker does not serve that
// API at all: unknown to the release, removed, served only by controllers,
// or only in an unstable version.
func (r *Release) Range(key int16) (min, max int16, served bool) {
	f, ok := r.facts(key)
	if !ok || !f.served() {
		return 0, 0, false
	}
	return f.min, f.stableMax(), true
}

// Accepts says whether the release's brokers accept request API key at
// version, and why, in words fit for a finding: "Produce v2: Kafka 4.0
// accepts v3-v12".
func (r *Release) Accepts(key, version int16) (ok bool, why string) {
	subject := fmt.Sprintf("%s v%d: Kafka %s", APIName(key), version, r.Name)
	f, known := r.facts(key)
	switch {
	case !known:
		return false, fmt.Sprintf("%s does not have %s", subject, keyAndName(key))
	case f.removed:
		return false, fmt.Sprintf("%s removed %s (validVersions none)", subject, APIName(key))
	case !f.broker:
		return false, fmt.Sprintf("%s serves %s on controllers only, not on brokers", subject, APIName(key))
	case !f.served():
		return false, fmt.Sprintf("%s has %s only as unstable v%d, refused unless unstable.api.versions.enable is set",
			subject, APIName(key), f.max)
	}
	accepts := fmt.Sprintf("%s accepts %s", subject, versionRange(f.min, f.stableMax()))
	switch {
	case version >= f.min && version <= f.stableMax():
		return true, accepts
	case key == apiVersionsKey && version > f.max:
		return true, accepts + " and answers newer ones with its version list (the client retries)"
	case f.latestUnstable && version == f.max:
		return false, fmt.Sprintf("%s (v%d is unstable, refused unless unstable.api.versions.enable is set)", accepts, f.max)
	}
	return false, accepts
}

// Rejected is !Accepts, for callers that need no reason.
func (r *Release) Rejected(key, version int16) bool {
	ok, _ := r.Accepts(key, version)
	return !ok
}

func versionRange(lo, hi int16) string {
	if lo == hi {
		return fmt.Sprintf("only v%d", lo)
	}
	return fmt.Sprintf("v%d-v%d", lo, hi)
}

// APIName is franz-go's name for an API key ("Produce"), or "API key N"
// for a key it does not know.
func APIName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" && name != "Unknown" {
		return name
	}
	return "API key " + strconv.Itoa(int(key))
}

func keyAndName(key int16) string {
	name := APIName(key)
	if strings.HasPrefix(name, "API key ") {
		return name
	}
	return fmt.Sprintf("%s (API key %d)", name, key)
}

// Names returns the names of the known releases, oldest first.
func Names() []string {
	names := make([]string, len(table))
	for i := range table {
		names[i] = table[i].Name
	}
	return names
}

// Lookup finds a release by name: a table name ("4.0", "4.0.0"), or any
// patch of a known minor ("4.0.2"; a patch newer than the table's newest
// of its minor is taken to be like it). Anything else is an error that
// lists the known names.
func Lookup(name string) (*Release, error) {
	for i := range table {
		if table[i].Name == name || slices.Contains(table[i].Patches, name) {
			return table[i].clone(), nil
		}
	}
	if r := newestForLaterPatch(name); r != nil {
		return r.clone(), nil
	}
	return nil, fmt.Errorf("unknown Kafka release %s: kscope knows %s (a minor stands for its patch releases)",
		quoteBounded(name), strings.Join(Names(), ", "))
}

// newestForLaterPatch returns the newest release of name's minor if name
// is a patch release newer than every patch the table read, else nil.
func newestForLaterPatch(name string) *Release {
	minor, patch, ok := splitPatch(name)
	if !ok {
		return nil
	}
	var newest *Release
	newestPatch := -1
	for i := range table {
		for _, p := range table[i].Patches {
			m, n, _ := splitPatch(p)
			if m == minor && n > newestPatch {
				newest, newestPatch = &table[i], n
			}
		}
	}
	if newest == nil || patch <= newestPatch {
		return nil
	}
	return newest
}

// splitPatch splits "4.0.2" into "4.0" and 2; ok is false for anything
// but three dot-separated decimal numbers.
func splitPatch(version string) (minor string, patch int, ok bool) {
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return "", 0, false
	}
	for _, p := range parts {
		if p == "" || len(p) > 4 || strings.Trim(p, "0123456789") != "" {
			return "", 0, false
		}
	}
	patch, err := strconv.Atoi(parts[2])
	if err != nil {
		return "", 0, false
	}
	return parts[0] + "." + parts[1], patch, true
}

// quoteBounded quotes a name from a flag for an error message: escaped by
// %q, and cut so that a long value does not flood the terminal.
func quoteBounded(s string) string {
	const limit = 40
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}

// clone returns a copy the caller may change without changing the table.
func (r *Release) clone() *Release {
	c := *r
	c.Patches = slices.Clone(r.Patches)
	return &c
}

package clientzoo

import (
	"fmt"
	"regexp"
	"strconv"
)

var releaseRE = regexp.MustCompile(`^(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?(?:-[A-Za-z0-9.]+)?$`)

// release is a Kafka or client release's major, minor and patch numbers.
type release [3]int

// parseRelease reads "4.1.2", "0.10.2.0" (Sarama's four parts: the last
// is ignored) or "2.8" (patch 0).
func parseRelease(v string) (release, error) {
	m := releaseRE.FindStringSubmatch(v)
	if m == nil {
		return release{}, fmt.Errorf("release %q: want e.g. 3.9.1", v)
	}
	var r release
	for i := range r {
		if m[i+1] != "" {
			r[i], _ = strconv.Atoi(m[i+1])
		}
	}
	return r, nil
}

func (r release) atLeast(o release) bool {
	for i := range r {
		if r[i] != o[i] {
			return r[i] > o[i]
		}
	}
	return true
}

// atLeast reports whether release v is min or later; an unreadable v is
// not.
func atLeast(v, min string) bool {
	a, err := parseRelease(v)
	if err != nil {
		return false
	}
	b, err := parseRelease(min)
	return err == nil && a.atLeast(b)
}

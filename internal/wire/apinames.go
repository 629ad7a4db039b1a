package wire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ParseAPI resolves an API as the commands' --api flags take it: kmsg's
// name in any case ("produce", "ApiVersions") or its key ("18"), to the
// key. An API kmsg does not know is an error, never a filter that matches
// nothing; an unknown name's error suggests the closest known one.
func ParseAPI(s string) (int16, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty API name")
	}
	if key, err := strconv.ParseInt(s, 10, 16); err == nil {
		if kmsg.RequestForKey(int16(key)) == nil {
			return 0, fmt.Errorf("unknown API key %d (the keys known are 0 to %d)", key, kmsg.MaxKey)
		}
		return int16(key), nil
	}
	if isNumber(s) {
		return 0, fmt.Errorf("unknown API key %s (the keys known are 0 to %d)", s, kmsg.MaxKey)
	}
	names := apiNames()
	for key, name := range names {
		if strings.EqualFold(name, s) {
			return int16(key), nil
		}
	}
	// Far longer than any name, s is no typo of one: no edit distances
	// over a whole command line.
	if longest := len(slices.MaxFunc(names, byLength)); len(s) > longest+longest/3 {
		return 0, fmt.Errorf("unknown API %.40q... (give a name such as produce or fetch, or a key)", s)
	}
	if near := closestName(s, names); near != "" {
		return 0, fmt.Errorf("unknown API %q: did you mean %s?", s, matchCase(near, s))
	}
	return 0, fmt.Errorf("unknown API %q (give a name such as produce or fetch, or a key)", s)
}

// APIName is kmsg's name of a key ParseAPI returned: the name decoded
// requests carry (event.Request.API).
func APIName(key int16) string { return kmsg.NameForKey(key) }

// apiNames lists kmsg's request names by key ("" for a key it has no
// request for).
func apiNames() []string {
	names := make([]string, kmsg.MaxKey+1)
	for key := range names {
		if kmsg.RequestForKey(int16(key)) != nil {
			names[key] = kmsg.NameForKey(int16(key))
		}
	}
	return names
}

func byLength(a, b string) int { return len(a) - len(b) }

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// closestName is the name nearest s in edit distance (case ignored) when
// it is near enough to be a typo, else the one name s begins; "" when
// there is none.
func closestName(s string, names []string) string {
	lower := strings.ToLower(s)
	best, bestDist := "", len(s)
	var prefixed []string
	for _, name := range names {
		if name == "" {
			continue
		}
		candidate := strings.ToLower(name)
		if strings.HasPrefix(candidate, lower) {
			prefixed = append(prefixed, name)
		}
		if d := editDistance(lower, candidate); d < bestDist {
			best, bestDist = name, d
		}
	}
	// Two edits (one transposition) or a third of the name: a typo, not
	// another word.
	if bestDist <= max(2, len(s)/3) {
		return best
	}
	if len(prefixed) == 1 && len(lower) >= 3 {
		return prefixed[0]
	}
	return ""
}

// matchCase writes the suggestion in lower case when the user did.
func matchCase(name, typed string) string {
	if typed == strings.ToLower(typed) {
		return strings.ToLower(name)
	}
	return name
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (API names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

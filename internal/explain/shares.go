package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CauseShares are the milliseconds of a request each cause accounts for,
// by cause name. Its JSON is an object with one key per registered cause,
// its name with dashes as underscores and _ms after ("cpu_starved_ms"),
// zero or not.
type CauseShares map[string]float64

// sharesKeyOrder is the order of the shares' JSON keys from when they were
// a struct's fields: kept, since recordings, tests and users read the
// JSON, and a new cause's key follows them in order. Add no cause here.
var sharesKeyOrder = []string{CauseSlowWrite, CauseLockWait, CauseReplication, CauseThrottle, CauseResponseSend, CauseCPUSteal,
	CauseNetwork, CauseNetworkThreadBlocked, CauseCPUStarved, CauseGCPause, CauseSafepoint, CauseParkWait, CauseRequestQueue}

// shareKey is a cause's key in the shares' JSON.
func shareKey(cause string) string { return strings.ReplaceAll(cause, "-", "_") + "_ms" }

// shareCause is the cause of a key of the shares' JSON.
func shareCause(key string) string {
	return strings.ReplaceAll(strings.TrimSuffix(key, "_ms"), "_", "-")
}

// MarshalJSON writes every registered cause's share, in the order of
// sharesKeyOrder and then of the causes, then any share of a cause not
// registered (read from elsewhere) by name.
func (s CauseShares) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(cause string, ms float64) error {
		v, err := json.Marshal(ms)
		if err != nil {
			return fmt.Errorf("share of %s: %w", cause, err)
		}
		k, err := json.Marshal(shareKey(cause))
		if err != nil {
			return err
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
		return nil
	}
	causes := registered()
	for _, c := range causes.inOrder(sharesKeyOrder) {
		if err := write(c.name, s[c.name]); err != nil {
			return nil, err
		}
	}
	var others []string
	for name := range s {
		if causes.named(name) == nil {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	for _, name := range others {
		if err := write(name, s[name]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the shares by the causes their keys name.
func (s *CauseShares) UnmarshalJSON(data []byte) error {
	var byKey map[string]float64
	if err := json.Unmarshal(data, &byKey); err != nil {
		return err
	}
	*s = make(CauseShares, len(byKey))
	for k, v := range byKey {
		(*s)[shareCause(k)] = v
	}
	return nil
}

package clients

import (
	"maps"
	"testing"
	"time"
)

// TestSoftwareCountsPerRequest: each request counts once for the software
// it names, however the connections (and untracked requests past
// MaxConnections) interleave and whatever a connection names next; the
// per-connection shortcut must not count for a stale key.
func TestSoftwareCountsPerRequest(t *testing.T) {
	type sent struct{ conn, software string }
	for _, c := range []struct {
		name string
		reqs []sent
		want map[string]int64
	}{
		{"one connection", []sent{{"a", "kgo/1"}, {"a", "kgo/1"}, {"a", "kgo/1"}}, map[string]int64{"kgo/1": 3}},
		{"interleaved connections", []sent{{"a", "kgo/1"}, {"b", "kgo/2"}, {"a", "kgo/1"}, {"b", "kgo/2"}, {"b", "kgo/2"}},
			map[string]int64{"kgo/1": 2, "kgo/2": 3}},
		{"a connection names new software", []sent{{"a", "kgo/1"}, {"a", "kgo/2"}, {"a", "kgo/1"}, {"a", "kgo/2"}},
			map[string]int64{"kgo/1": 2, "kgo/2": 2}},
		{"no software between", []sent{{"a", "kgo/1"}, {"a", "/"}, {"a", "kgo/1"}}, map[string]int64{"kgo/1": 2}},
		{"untracked connection", []sent{{"a", "kgo/1"}, {"b", "kgo/1"}, {"c", "kgo/1"}, {"c", "kgo/1"}, {"a", "kgo/1"}},
			map[string]int64{"kgo/1": 5}},
	} {
		a := New(Options{MaxConnections: 2})
		for i, s := range c.reqs {
			r := req("10.0.0.1:"+map[string]string{"a": "1", "b": "2", "c": "3"}[s.conn], "x", apiMetadata, 9, time.Duration(i)*time.Millisecond)
			if s.software != "/" {
				r.SoftwareName, r.SoftwareVersion = s.software[:3], s.software[4:]
			}
			a.Add(r)
		}
		got := map[string]int64{}
		for k, n := range a.clients[key{"10.0.0.1", "", "x"}].software {
			got[k.name+"/"+k.version] = *n
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: counts %v, want %v", c.name, got, c.want)
		}
	}
}

package releases

import (
	"slices"
	"strings"
	"testing"
)

const (
	produce            int16 = 0
	fetch              int16 = 1
	listOffsets        int16 = 2
	metadata           int16 = 3
	leaderAndIsr       int16 = 4
	offsetCommit       int16 = 8
	offsetFetch        int16 = 9
	findCoordinator    int16 = 10
	joinGroup          int16 = 11
	saslHandshake      int16 = 17
	apiVersions        int16 = 18
	createTopics       int16 = 19
	initProducerID     int16 = 22
	offsetForLeader    int16 = 23
	brokerHeartbeat    int16 = 63
	consumerGroupHB    int16 = 68
	streamsGroupHB     int16 = 88
	notAnAPIKey        int16 = 1000
	negativeAPIKey     int16 = -1
	unknownToAllTables int16 = 95
)

func mustLookup(t *testing.T, name string) *Release {
	t.Helper()
	r, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAccepts: known answers, each checked against the release's
// common/message/*Request.json. KIP-896 as first written also removed
// Metadata v0-v3, FindCoordinator v0, SaslHandshake v0 and Produce v3-v6
// (3.9.0 still marks them deprecated); Kafka 4.0 kept them, and the table
// says so.
func TestAccepts(t *testing.T) {
	cases := []struct {
		release string
		key     int16
		version int16
		ok      bool
	}{
		// KIP-896: what 4.0 removed, and 3.9 still accepts.
		{"4.0", produce, 2, false},
		{"4.0", produce, 3, true},
		{"4.0", produce, 12, true},
		{"4.0", produce, 13, false},
		{"3.9", produce, 0, true},
		{"3.9", produce, 11, true},
		{"3.9", produce, 12, false},
		{"4.0", fetch, 3, false},
		{"4.0", fetch, 4, true},
		{"3.9", fetch, 0, true},
		{"4.0", listOffsets, 0, false},
		{"4.0", listOffsets, 1, true},
		{"3.9", listOffsets, 0, true},
		{"4.0", offsetCommit, 1, false},
		{"4.0", offsetCommit, 2, true},
		{"3.9", offsetCommit, 0, true},
		{"4.0", offsetFetch, 0, false},
		{"4.0", offsetFetch, 1, true},
		{"4.0", createTopics, 1, false},
		{"4.0", offsetForLeader, 1, false},
		// Kept by 4.0 after all.
		{"4.0", metadata, 0, true},
		{"4.0", findCoordinator, 0, true},
		{"4.0", saslHandshake, 0, true},
		// 4.0.0 removed JoinGroup v0-v1; 4.0.1 and 4.1 accept them again.
		{"4.0.0", joinGroup, 1, false},
		{"4.0.0", joinGroup, 2, true},
		{"4.0", joinGroup, 0, true},
		{"4.0.1", joinGroup, 0, true},
		{"4.1", joinGroup, 0, true},
		// Removed APIs, controller-only APIs.
		{"3.9", leaderAndIsr, 7, false}, // a KRaft broker never served it
		{"4.0", leaderAndIsr, 7, false},
		{"4.0", brokerHeartbeat, 1, false},
		// Unstable newest versions are refused by default.
		{"4.1", offsetCommit, 9, true},
		{"4.1", offsetCommit, 10, false},
		{"4.2", offsetCommit, 10, true},
		{"4.1", initProducerID, 5, true},
		{"4.1", initProducerID, 6, false},
		// An API with only an unstable version is not served; then it is.
		{"4.1", streamsGroupHB, 0, false},
		{"4.2", streamsGroupHB, 0, true},
		{"3.9", streamsGroupHB, 0, false}, // not in 3.9 at all
		{"4.0", consumerGroupHB, 1, true},
		{"3.9", consumerGroupHB, 0, true},
		// ApiVersions: any version.
		{"4.0", apiVersions, 4, true},
		{"4.0", apiVersions, 5, true},
		{"3.9", apiVersions, 0, true},
		// Keys no release has, and nonsense versions.
		{"4.4", notAnAPIKey, 0, false},
		{"4.4", negativeAPIKey, 0, false},
		{"4.4", unknownToAllTables, 0, false},
		{"4.0", produce, -1, false},
	}
	for _, c := range cases {
		r := mustLookup(t, c.release)
		ok, why := r.Accepts(c.key, c.version)
		if ok != c.ok {
			t.Errorf("Kafka %s %s v%d: ok=%t (%s), want %t", c.release, APIName(c.key), c.version, ok, why, c.ok)
		}
		if rejected := r.Rejected(c.key, c.version); rejected == c.ok {
			t.Errorf("Kafka %s %s v%d: Rejected = %t, want %t", c.release, APIName(c.key), c.version, rejected, !c.ok)
		}
	}
}

func TestAcceptsWhy(t *testing.T) {
	cases := []struct {
		release      string
		key, version int16
		want         string
	}{
		{"4.0", produce, 2, "Produce v2: Kafka 4.0 accepts v3-v12"},
		{"4.0", produce, 9, "Produce v9: Kafka 4.0 accepts v3-v12"},
		{"4.0.0", joinGroup, 0, "JoinGroup v0: Kafka 4.0.0 accepts v2-v9"},
		{"4.0", leaderAndIsr, 7, "LeaderAndISR v7: Kafka 4.0 removed LeaderAndISR (validVersions none)"},
		{"4.0", brokerHeartbeat, 1, "BrokerHeartbeat v1: Kafka 4.0 serves BrokerHeartbeat on controllers only, not on brokers"},
		{"4.1", offsetCommit, 10, "OffsetCommit v10: Kafka 4.1 accepts v2-v9 (v10 is unstable, refused unless unstable.api.versions.enable is set)"},
		{"4.1", streamsGroupHB, 0, "StreamsGroupHeartbeat v0: Kafka 4.1 has StreamsGroupHeartbeat only as unstable v0, refused unless unstable.api.versions.enable is set"},
		{"3.9", streamsGroupHB, 0, "StreamsGroupHeartbeat v0: Kafka 3.9 does not have StreamsGroupHeartbeat (API key 88)"},
		{"4.0", notAnAPIKey, 3, "API key 1000 v3: Kafka 4.0 does not have API key 1000"},
		{"4.0", apiVersions, 7, "ApiVersions v7: Kafka 4.0 accepts v0-v4 and answers newer ones with its version list (the client retries)"},
		{"4.1", initProducerID, 0, "InitProducerID v0: Kafka 4.1 accepts v0-v5"},
	}
	for _, c := range cases {
		_, why := mustLookup(t, c.release).Accepts(c.key, c.version)
		if why != c.want {
			t.Errorf("got  %q\nwant %q", why, c.want)
		}
	}
}

func TestRange(t *testing.T) {
	cases := []struct {
		release        string
		key            int16
		min, max       int16
		served         bool
		wantDescribing string
	}{
		{"4.0", produce, 3, 12, true, "validVersions 3-12"},
		{"4.1", produce, 3, 13, true, "validVersions 3-13"},
		{"4.1", offsetCommit, 2, 9, true, "2-10 with v10 unstable"},
		{"4.0", leaderAndIsr, 0, 0, false, "removed"},
		{"4.0", brokerHeartbeat, 0, 0, false, "controller only"},
		{"4.1", streamsGroupHB, 0, 0, false, "unstable v0 only"},
		{"4.4", notAnAPIKey, 0, 0, false, "unknown key"},
	}
	for _, c := range cases {
		min, max, served := mustLookup(t, c.release).Range(c.key)
		if min != c.min || max != c.max || served != c.served {
			t.Errorf("Kafka %s %s (%s): Range = %d, %d, %t; want %d, %d, %t",
				c.release, APIName(c.key), c.wantDescribing, min, max, served, c.min, c.max, c.served)
		}
	}
}

func TestLookup(t *testing.T) {
	cases := []struct{ name, want string }{
		{"3.9", "3.9"},
		{"3.9.0", "3.9"},
		{"3.9.2", "3.9"},
		{"4.0", "4.0"},
		{"4.0.0", "4.0.0"},
		{"4.0.1", "4.0"},
		{"4.0.2", "4.0"},
		{"4.0.9", "4.0"}, // newer than the table: like the newest 4.0
		{"4.1", "4.1"},
		{"4.2.2", "4.2"},
		{"4.3", "4.3"},
		{"4.4", "4.4"},
		{"4.4.0", "4.4"},
	}
	for _, c := range cases {
		r, err := Lookup(c.name)
		if err != nil || r.Name != c.want {
			t.Errorf("Lookup(%q) = %v, %v; want release %s", c.name, r, err, c.want)
		}
	}
}

func TestLookupRefuses(t *testing.T) {
	known := "kscope knows 3.9, 4.0.0, 4.0, 4.1, 4.2, 4.3, 4.4"
	cases := []struct{ name, wantQuoted string }{
		{"5.0", `"5.0"`},
		{"3.8", `"3.8"`},
		{"3.8.1", `"3.8.1"`},
		{"4", `"4"`},
		{"", `""`},
		{"4.0.x", `"4.0.x"`},
		{"v4.0", `"v4.0"`},
		{" 4.0", `" 4.0"`},
		{"4.0.-1", `"4.0.-1"`},
		{"4.0.99999", `"4.0.99999"`},
		{"\x1b[2J4.0", `"\x1b[2J4.0"`},
		{strings.Repeat("9", 100), `"` + strings.Repeat("9", 40) + `"...`},
	}
	for _, c := range cases {
		r, err := Lookup(c.name)
		if err == nil {
			t.Errorf("Lookup(%q) = %s, want an error", c.name, r.Name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "unknown Kafka release "+c.wantQuoted+":") || !strings.Contains(msg, known) {
			t.Errorf("Lookup(%q): %q, want the name as %s and %q", c.name, msg, c.wantQuoted, known)
		}
	}
}

func TestNames(t *testing.T) {
	want := []string{"3.9", "4.0.0", "4.0", "4.1", "4.2", "4.3", "4.4"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	// Every name is found under itself, and its Source names its jar.
	for _, name := range want {
		r := mustLookup(t, name)
		newest := r.Patches[len(r.Patches)-1]
		if r.Name != name || !strings.HasPrefix(r.Source, "kafka-clients-"+newest+".jar (sha256 ") {
			t.Errorf("Lookup(%q) = %q, Source %q", name, r.Name, r.Source)
		}
	}
}

// TestLookupReturnsACopy: a caller that changes what it got does not
// change the table for the next caller.
func TestLookupReturnsACopy(t *testing.T) {
	r := mustLookup(t, "4.0")
	r.Name = "changed"
	r.Patches[0] = "changed"
	again := mustLookup(t, "4.0")
	if again.Name != "4.0" || again.Patches[0] != "4.0.1" {
		t.Fatalf("the table changed: %+v", again)
	}
}

// Package protodef reads a Kafka release's protocol definitions, the
// common/message/*Request.json files its org.apache.kafka:kafka-clients jar
// carries, into the facts internal/releases keeps for each API: the
// validVersions range, whether it was removed ("none"), whether its newest
// version is unstable, and whether a broker's listeners serve it.
//
// Only the table generator (internal/releases/gen) and the test that checks
// the committed table against the jars use it: kscope itself never reads a
// jar. The jars come from Maven Central through scripts/kafka-clients-jars.sh;
// they are still bytes from disk, so every size is bounded and every field is
// checked before it is believed.
package protodef

import (
	"fmt"
	"os"
	"path/filepath"
)

// API is what one *Request.json says about one API key.
type API struct {
	Key int16
	// Name is the message's name ("ProduceRequest"), kept for the
	// generator's comments.
	Name string
	// Min and Max are validVersions; both are 0 when Removed.
	Min, Max int16
	// Removed: validVersions is "none", the API was taken out of the
	// protocol (ZooKeeper-era inter-broker APIs in 4.0).
	Removed bool
	// LatestUnstable: latestVersionUnstable is true, so Max is a version
	// in development that a broker refuses unless
	// unstable.api.versions.enable is set.
	LatestUnstable bool
	// Broker: the listeners list names "broker", the listener type of a
	// KRaft broker. APIs served only by controllers ("controller") or only
	// by ZooKeeper-mode brokers ("zkBroker": inter-broker APIs in 3.x) are
	// not served to clients by a KRaft broker.
	Broker bool
}

// CacheDir is where scripts/kafka-clients-jars.sh puts the jars:
// $HOME/.cache/kscope/kafka-clients.
func CacheDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kafka-clients jar cache: %w", err)
	}
	return filepath.Join(home, ".cache", "kscope", "kafka-clients"), nil
}

// JarName is the file name Maven gives the kafka-clients jar of version.
func JarName(version string) string {
	return "kafka-clients-" + version + ".jar"
}

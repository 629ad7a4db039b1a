package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// MinKafkaVersion is the oldest release the lab runs: KRaft (the only mode
// it configures) is production-ready from 3.3 on. Tested: 3.9.1 and 4.1.x.
const MinKafkaVersion = "3.3.0"

var versionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)([.-][A-Za-z0-9]+)*$`)

// parseVersion splits a Kafka release like "3.9.1" or "4.1.0-rc1".
func parseVersion(v string) (major, minor int, err error) {
	m := versionRE.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, fmt.Errorf("lab: bad Kafka version %q (want e.g. 3.9.1 or %s)", v, KafkaVersion)
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, nil
}

// CheckVersion fails unless v is a Kafka release the lab can run
// (MinKafkaVersion or later). Whether Maven Central has it is found out
// by EnsureLibsVersion.
func CheckVersion(v string) error {
	major, minor, err := parseVersion(v)
	if err != nil {
		return err
	}
	if major < 3 || major == 3 && minor < 3 {
		return fmt.Errorf("lab: Kafka %s is too old: the lab runs KRaft, which needs %s or later", v, MinKafkaVersion)
	}
	return nil
}

// usesLog4j2 reports whether release v logs through log4j2 (4.0 on) rather
// than log4j 1.x (reload4j, 3.x): the two take different config files.
func usesLog4j2(v string) bool {
	major, _, err := parseVersion(v)
	return err != nil || major >= 4
}

// dynamicQuorum reports whether a cluster of n nodes of release v is
// formatted with a dynamic KRaft quorum (KIP-853: `format --standalone`
// and controller.quorum.bootstrap.servers), which is what Kafka 4 docs
// use for one node. Clusters, and every 3.x node, use the static
// controller.quorum.voters, which every KRaft release understands.
func dynamicQuorum(v string, n int) bool {
	major, _, err := parseVersion(v)
	return n == 1 && (err != nil || major >= 4)
}

var libsJarRE = regexp.MustCompile(`^kafka_2\.1[23]-(.+)\.jar$`)

// LibsVersion returns the Kafka release whose jars are in libs (from the
// name of its kafka_2.13-V.jar).
func LibsVersion(libs string) (string, error) {
	jars, err := filepath.Glob(filepath.Join(libs, "kafka_2.1*-*.jar"))
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	for _, j := range jars {
		base := filepath.Base(j)
		if strings.Contains(base, "-test") || strings.Contains(base, "-sources") {
			continue
		}
		if m := libsJarRE.FindStringSubmatch(base); m != nil {
			return m[1], nil
		}
	}
	if _, err := os.Stat(libs); err != nil {
		return "", fmt.Errorf("lab: kafka libs: %w", err)
	}
	return "", fmt.Errorf("lab: no kafka_2.13-VERSION.jar in %s", libs)
}

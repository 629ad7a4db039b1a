package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kscope-dev/kscope/internal/checkout"
)

// KafkaVersion is the Kafka release the lab runs by default. It must match
// <kafka.version> in lab/kafka/pom.xml (checked by a test): the default jar
// cache dir is named after it.
const KafkaVersion = "4.1.2"

// LibsEnv overrides the jar cache dir (also honored by scripts/kafka-jars.sh).
const LibsEnv = "KSCOPE_KAFKA_LIBS"

// completeMarker is written by scripts/kafka-jars.sh once a libs dir is
// fully populated.
const completeMarker = ".kscope-complete"

// DefaultLibsDir returns $KSCOPE_KAFKA_LIBS, else
// $HOME/.cache/kscope/kafka-<KafkaVersion>/libs. It may not exist yet.
func DefaultLibsDir() (string, error) {
	return LibsDirFor(KafkaVersion)
}

// LibsDirFor returns the jar cache dir of Kafka release version, as
// scripts/kafka-jars.sh names it: $HOME/.cache/kscope/kafka-<version>/libs,
// or $KSCOPE_KAFKA_LIBS for the pinned KafkaVersion. It may not exist yet.
func LibsDirFor(version string) (string, error) {
	if version == "" {
		version = KafkaVersion
	}
	if d := os.Getenv(LibsEnv); d != "" && version == KafkaVersion {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lab: default libs dir: %w", err)
	}
	return filepath.Join(home, ".cache", "kscope", "kafka-"+version, "libs"), nil
}

// LibsComplete reports whether dir was fully populated by
// scripts/kafka-jars.sh.
func LibsComplete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeMarker))
	return err == nil
}

// EnsureLibs returns a dir holding the jars of the pinned KafkaVersion:
// EnsureLibsVersion(ctx, KafkaVersion).
func EnsureLibs(ctx context.Context) (string, error) {
	return EnsureLibsVersion(ctx, KafkaVersion)
}

// EnsureLibsVersion returns a dir holding the jars of Kafka release
// version ("" is KafkaVersion). When the kscope checkout is found (walking
// up from the working dir, then from the executable), it runs
// `scripts/kafka-jars.sh VERSION`, which is a cheap no-op when the cache is
// current and otherwise resolves the jars with Maven (a first run of a
// version downloads ~45 MB). Without a checkout it falls back to an already
// complete LibsDirFor(version).
func EnsureLibsVersion(ctx context.Context, version string) (string, error) {
	if version == "" {
		version = KafkaVersion
	}
	if err := CheckVersion(version); err != nil {
		return "", err
	}
	script, err := findJarsScript()
	if err != nil {
		dir, derr := LibsDirFor(version)
		if derr == nil && LibsComplete(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("lab: kafka %s jars: not in %q and %w", version, dir, err)
	}
	cmd := exec.CommandContext(ctx, "bash", script, version)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("lab: %s %s: %w: %s", script, version, err, checkout.LastLines(stderr.String(), 15))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" || !LibsComplete(dir) {
		return "", fmt.Errorf("lab: %s %s: printed %q, which is not a complete libs dir", script, version, dir)
	}
	return dir, nil
}

// findJarsScript locates scripts/kafka-jars.sh with the pom it uses.
func findJarsScript() (string, error) {
	script, err := checkout.FindScript("kafka-jars.sh")
	if err == nil && !fileExists(filepath.Join(filepath.Dir(filepath.Dir(script)), "lab", "kafka", "pom.xml")) {
		err = errors.New("lab/kafka/pom.xml missing next to it")
	}
	if err != nil {
		return "", fmt.Errorf("%w (or set %s to a complete libs dir)", err, LibsEnv)
	}
	return script, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

package clientzoo

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kscope-dev/kscope/internal/checkout"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
)

// Tools are what the zoo's clients run on, beyond this process.
type Tools struct {
	// JavaLibs maps a kafka-clients release to a classpath dir holding
	// it; JavaClasses to the dir of ZooClient compiled against it.
	JavaLibs    map[string]string
	JavaClasses map[string]string
	Python      string // the venv's python (confluent-kafka, kafka-python)
	Sarama      string // the zoo-sarama binary
}

// EnsureTools resolves, installing into $HOME/.cache/kscope when missing,
// what clients need: Java client jars (the lab's for a release the lab
// runs, scripts/kafka-clients-old.sh for older ones) with ZooClient
// compiled against each, the Python venv (scripts/python-venv.sh), the
// Sarama binary (scripts/zoo-sarama.sh). Each step is a cheap no-op when
// done before. An error names what is missing; tests hand it to
// labtest.Unavailable.
func EnsureTools(ctx context.Context, clients []Client) (*Tools, error) {
	t := &Tools{JavaLibs: map[string]string{}, JavaClasses: map[string]string{}}
	var javas []string
	needPython, needSarama := false, false
	for _, c := range clients {
		switch c.Library {
		case Java:
			if !slices.Contains(javas, c.Version) {
				javas = append(javas, c.Version)
			}
		case Librdkafka, KafkaPython:
			needPython = true
		case Sarama:
			needSarama = true
		}
	}
	var errs []error
	for _, v := range javas {
		errs = append(errs, t.ensureJava(ctx, v))
	}
	var err error
	if needPython {
		t.Python, err = runScript(ctx, "python-venv.sh")
		errs = append(errs, err)
	}
	if needSarama {
		t.Sarama, err = runScript(ctx, "zoo-sarama.sh")
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clientzoo: %w", err)
	}
	return t, nil
}

// ensureJava resolves the jars of kafka-clients version and compiles
// ZooClient against them.
func (t *Tools) ensureJava(ctx context.Context, version string) error {
	libs, err := javaLibs(ctx, version)
	if err != nil {
		return err
	}
	classes, err := compileZooClient(ctx, version, libs)
	if err != nil {
		return err
	}
	t.JavaLibs[version], t.JavaClasses[version] = libs, classes
	return nil
}

// javaLibs is the lab's jar dir for a release the lab runs (its
// kafka-clients jar is that release's), else kafka-clients alone from
// scripts/kafka-clients-old.sh.
func javaLibs(ctx context.Context, version string) (string, error) {
	if lab.CheckVersion(version) == nil {
		return lab.EnsureLibsVersion(ctx, version)
	}
	if _, err := parseRelease(version); err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	return runScript(ctx, "kafka-clients-old.sh", version)
}

//go:embed java/ZooClient.java
var zooClientJava []byte

// compileZooClient compiles ZooClient.java against the jars in libs into
// $HOME/.cache/kscope/zoo-java/VERSION-HASH (HASH: of the source), once:
// into a temporary dir renamed into place, so a dir that exists is whole.
func compileZooClient(ctx context.Context, version, libs string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	sum := sha256.Sum256(append(append([]byte(nil), zooClientJava...), version...))
	dir := filepath.Join(home, ".cache", "kscope", "zoo-java", version+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "ZooClient.class")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "ZooClient.java")
	if err := os.WriteFile(src, zooClientJava, 0o644); err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	javac, err := hostinfo.JDKTool("javac")
	if err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	out, err := exec.CommandContext(ctx, javac, "-d", tmp, "-cp", lab.Classpath(libs), src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("java client: javac against kafka-clients %s: %w: %s", version, err, checkout.LastLines(string(out), 10))
	}
	if err := os.Remove(src); err != nil {
		return "", fmt.Errorf("java client: %w", err)
	}
	// Another test may have won the race: its dir is as good as ours.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "ZooClient.class")); serr != nil {
			return "", fmt.Errorf("java client: %w", err)
		}
	}
	return dir, nil
}

// runScript runs scripts/NAME ARGS of the kscope checkout and returns the
// last line it printed (the path it resolved).
func runScript(ctx context.Context, name string, args ...string) (string, error) {
	script, err := checkout.FindScript(name)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w: %s", script, err, checkout.LastLines(stderr.String(), 10))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	path := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s printed %q: %w", script, path, err)
	}
	return path, nil
}

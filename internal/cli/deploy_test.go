package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// deployDir holds the deployment files (deploy/README.md).
const deployDir = "../../deploy"

// TestDeployedAgentFlags: the agent's command lines in the systemd unit
// and the Kubernetes DaemonSet are ones the agent accepts, and both grant
// the same capabilities, the ones deploy/README.md names.
func TestDeployedAgentFlags(t *testing.T) {
	unit := readDeploy(t, "systemd/kscope-agent.service")
	daemonset := readDeploy(t, "kubernetes/kscope-agent.yaml")
	container := readDeploy(t, "container/Containerfile")

	// systemd: ExecStart with ${VAR} from the unit's Environment= line.
	env := map[string]string{}
	var exec []string
	for line := range strings.SplitSeq(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			for _, kv := range strings.Fields(v) {
				k, val, _ := strings.Cut(kv, "=")
				env[k] = val
			}
		}
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = strings.Fields(v)
		}
	}
	if len(exec) < 2 || exec[0] != "/usr/local/bin/kscope" || exec[1] != "agent" {
		t.Fatalf("systemd ExecStart %q: want /usr/local/bin/kscope agent ...", exec)
	}
	for i, a := range exec {
		exec[i] = os.Expand(a, func(k string) string { return env[k] })
	}
	checkAgentArgs(t, "systemd", exec[2:])

	// Kubernetes: the container's args, with $(VAR) from its env.
	args := yamlList(t, daemonset, "args:")
	if len(args) == 0 || args[0] != "agent" {
		t.Fatalf("DaemonSet args %q: want agent ...", args)
	}
	for i, a := range args {
		args[i] = regexp.MustCompile(`\$\([A-Z_]+\)`).ReplaceAllString(a, "")
	}
	checkAgentArgs(t, "DaemonSet", args[1:])

	// The Containerfile's default command.
	m := regexp.MustCompile(`(?m)^CMD \[(.*)\]$`).FindStringSubmatch(container)
	if m == nil {
		t.Fatal("Containerfile: no CMD")
	}
	var cmd []string
	for a := range strings.SplitSeq(m[1], ",") {
		cmd = append(cmd, strings.Trim(strings.TrimSpace(a), `"`))
	}
	checkAgentArgs(t, "Containerfile", cmd[1:])

	want := []string{"BPF", "DAC_READ_SEARCH", "NET_RAW", "PERFMON", "SYS_PTRACE"}
	var unitCaps []string
	for line := range strings.SplitSeq(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "AmbientCapabilities="); ok {
			for c := range strings.FieldsSeq(v) {
				unitCaps = append(unitCaps, strings.TrimPrefix(c, "CAP_"))
			}
		}
	}
	slices.Sort(unitCaps)
	if !slices.Equal(unitCaps, want) {
		t.Errorf("systemd ambient capabilities %v, want %v", unitCaps, want)
	}
	addLine := regexp.MustCompile(`add: \[(.*)\]`).FindStringSubmatch(daemonset)
	var k8sCaps []string
	if addLine != nil {
		for c := range strings.SplitSeq(addLine[1], ",") {
			k8sCaps = append(k8sCaps, strings.Trim(strings.TrimSpace(c), `"`))
		}
	}
	slices.Sort(k8sCaps)
	if !slices.Equal(k8sCaps, want) || !strings.Contains(daemonset, `drop: ["ALL"]`) {
		t.Errorf("DaemonSet capabilities add %v (drop ALL: %v), want %v", k8sCaps, strings.Contains(daemonset, `drop: ["ALL"]`), want)
	}
	if strings.Contains(daemonset, "privileged: true") || !strings.Contains(daemonset, "allowPrivilegeEscalation: false") {
		t.Error("DaemonSet is privileged or allows privilege escalation")
	}
}

// TestSystemdUnitVerifies runs systemd-analyze verify on the unit, its
// ExecStart pointed at a stand-in binary (verify checks that it exists).
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		labtest.Unavailable(t, "systemd-analyze not found (Debian's systemd package)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kscope")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(readDeploy(t, "systemd/kscope-agent.service"), "/usr/local/bin/kscope", bin)
	path := filepath.Join(dir, "kscope-agent.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v: %s", err, out)
	}
}

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// yamlList reads the block list under the first line ending in key
// ("- item" lines indented deeper).
func yamlList(t *testing.T, doc, key string) []string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(doc))
	var out []string
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !in {
			in = line == key
			continue
		}
		item, ok := strings.CutPrefix(line, "- ")
		if !ok {
			break
		}
		out = append(out, strings.Trim(item, `"`))
	}
	return out
}

// checkAgentArgs parses args with the agent command's flags.
func checkAgentArgs(t *testing.T, where string, args []string) {
	t.Helper()
	cmd := newAgentCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Errorf("%s: kscope agent %s: %v", where, strings.Join(args, " "), err)
	}
	if rest := cmd.Flags().Args(); len(rest) > 0 {
		t.Errorf("%s: kscope agent takes no arguments, got %q", where, rest)
	}
}

package keylogagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/checkout"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		uid, gid uint32
		groups   []uint32
		wantErr  bool
	}{
		{"kafka", "Name:\tjava\nUid:\t998\t998\t998\t998\nGid:\t997\t997\t997\t997\nGroups:\t997 4 \n", 998, 997, []uint32{997, 4}, false},
		{"fs ids", "Uid:\t0\t1000\t1000\t1001\nGid:\t0\t100\t100\t101\nGroups:\t\n", 1001, 101, nil, false},
		{"no gid", "Uid:\t0\t0\t0\t0\n", 0, 0, nil, true},
		{"short", "Uid:\t0\t0\nGid:\t0\t0\t0\t0\n", 0, 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uid, gid, groups, err := parseStatus([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (uid != tc.uid || gid != tc.gid || !slices.Equal(groups, tc.groups)) {
				t.Errorf("got %d %d %v, want %d %d %v", uid, gid, groups, tc.uid, tc.gid, tc.groups)
			}
		})
	}
}

func TestParseStartTime(t *testing.T) {
	// A command name with spaces and parentheses.
	line := "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 30 0 987654 1000 10 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	got, err := parseStartTime([]byte(line))
	if err != nil || got != 987654 {
		t.Fatalf("got %d, %v; want 987654", got, err)
	}
	if _, err := parseStartTime([]byte("4242 (java) S 1 2")); err == nil {
		t.Error("a short line parsed")
	}
	j, err := readJVM(os.Getpid())
	if err != nil || j.start == 0 || j.uid != uint32(os.Geteuid()) {
		t.Errorf("readJVM(self): %+v, %v", j, err)
	}
}

func TestJavaagentOption(t *testing.T) {
	for _, tc := range []struct {
		args []string
		opt  string
		ok   bool
	}{
		{[]string{"java", "-javaagent:/opt/extract-tls-secrets-4.0.0.jar=/var/log/keys.log", "kafka.Kafka"}, "/var/log/keys.log", true},
		{[]string{"java", "-javaagent:lib/extract-ssl-secrets-1.0.0.jar", "Main"}, "", true},
		{[]string{"java", "-javaagent:/opt/jmx_prometheus_javaagent.jar=7071:/etc/jmx.yml", "kafka.Kafka"}, "", false},
		{[]string{"java", "-cp", "extract-tls-secrets-4.0.0.jar", "Main"}, "", false},
	} {
		opt, ok := javaagentOption(tc.args)
		if opt != tc.opt || ok != tc.ok {
			t.Errorf("%q: got %q %v, want %q %v", tc.args, opt, ok, tc.opt, tc.ok)
		}
	}
}

// TestLoadResult: jcmd's answers to JVMTI.agent_load, as seen on JDK 17
// and 25.
func TestLoadResult(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want string // in the error; "" for success
	}{
		{"12345:\nreturn code: 0\n", ""},
		{"12345:\nreturn code: 100\n", "could not open the jar"},
		{"12345:\nreturn code: 102\n", "agentmain failed"},
		{"12345:\nreturn code: -1\n", "could not load it"},
		{"12345:\nDynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.\n", "Dynamic agent loading is not enabled"},
		{"12345:\njava.lang.IllegalArgumentException: Unknown diagnostic command\n", "JDK 8"},
	} {
		err := loadResult(tc.out)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.out, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error with %q", tc.out, err, tc.want)
		}
	}
}

func TestHasLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	m := marker(42, 7)
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{"first", m + " loaded\nCLIENT_RANDOM a b\n", true},
		{"last, no newline", "CLIENT_RANDOM a b\n" + m + " loaded", true},
		{"after a long line", long + "\n" + m + " x\n", true},
		{"inside a long line", long + m + "\n", false},
		{"another start time", marker(42, 70) + "\n", false},
		{"another pid", marker(4, 7) + "\n", false},
		{"empty", "", false},
	} {
		got, err := hasLine(strings.NewReader(tc.in), []byte(m))
		if err != nil || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestOpenKeyLog: created 0600, an existing one kept and made 0600,
// links and non-files refused, and a new one removed by abandon.
func TestOpenKeyLog(t *testing.T) {
	dir := t.TempDir()
	self, err := readJVM(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(dir, "fresh.log")
	k, err := openKeyLog(fresh, self)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st == nil || st.Mode().Perm() != 0o600 || !k.created {
		t.Errorf("new key log: %v, created %v; want mode 0600", st, k.created)
	}
	k.abandon()
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandon left the new, empty key log: %v", err)
	}

	old := filepath.Join(dir, "old.log")
	if err := os.WriteFile(old, []byte("CLIENT_RANDOM x y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k, err = openKeyLog(old, self)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.mark(self, "/x.jar"); err != nil {
		t.Fatal(err)
	}
	if ok, err := k.marked(self); !ok || err != nil {
		t.Errorf("marked after mark: %v, %v", ok, err)
	}
	k.abandon()
	b, _ := os.ReadFile(old)
	st, _ := os.Stat(old)
	if !strings.HasPrefix(string(b), "CLIENT_RANDOM x y\n"+marker(self.pid, self.start)) || st.Mode().Perm() != 0o600 {
		t.Errorf("existing key log: mode %v, contents %q; want 0600, kept and marked", st.Mode().Perm(), b)
	}

	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(old, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{link, fifo, dir} {
		if k, err := openKeyLog(bad, self); err == nil {
			k.Close()
			t.Errorf("openKeyLog(%s) did not fail", bad)
		}
	}
}

// TestMay: the permission bits that decide whether the JVM's user can
// reach a file.
func TestMay(t *testing.T) {
	if os.Geteuid() != 0 {
		labtest.RequireRoot(t) // to make files of other users
	}
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	file := filepath.Join(sub, "f")
	if err := os.Mkdir(sub, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, sub, file} {
		if err := os.Chown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		j      jvm
		want   uint32
		denied bool
	}{
		{"owner writes", jvm{uid: 1000, gid: 1000}, mayWrite, false},
		{"group reads", jvm{uid: 1001, gid: 5, groups: []uint32{1000}}, mayRead, false},
		{"group writes", jvm{uid: 1001, gid: 1000}, mayWrite, true},
		{"other cannot search sub", jvm{uid: 1002, gid: 1002}, mayRead, true},
		{"root", jvm{uid: 0, gid: 0}, mayWrite, false},
	} {
		err := tc.j.may(file, tc.want)
		if (err != nil) != tc.denied {
			t.Errorf("%s: %v, want denied %v", tc.name, err, tc.denied)
		}
	}
}

// TestScriptPinsJar: scripts/keylog-agent-jar.sh fetches the artifact and
// checks the sha1 this package knows.
func TestScriptPinsJar(t *testing.T) {
	script, err := checkout.FindScript(jarScript)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"artifact": Artifact, "sha1": JarSHA1, "name": JarName} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("%s: %s=%q, want %q", script, name, m, want)
		}
	}
}

// TestEnsureJar fetches the jar to a path of JarEnv (with mvn, from ~/.m2
// or Maven Central) and checks it is Maven Central's.
func TestEnsureJar(t *testing.T) {
	requireJar(t) // mvn and the network (or ~/.m2) work
	jar := filepath.Join(t.TempDir(), "sub", JarName)
	t.Setenv(JarEnv, jar)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := EnsureJar(ctx)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	if got != jar {
		t.Errorf("EnsureJar: %s, want %s", got, jar)
	}
	if sum, err := fileSHA1(jar); err != nil || sum != JarSHA1 {
		t.Errorf("fetched jar: sha1 %s, %v; want %s", sum, err, JarSHA1)
	}
	t.Setenv(JarEnv, "relative.jar")
	if _, err := EnsureJar(ctx); err == nil {
		t.Error("a relative KSCOPE_KEYLOG_AGENT_JAR was taken")
	}
}

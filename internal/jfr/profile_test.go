package jfr

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/jfr-parser/parser/types/def"

	"github.com/kscope-dev/kscope/internal/event"
)

// profileWant is the JDK jfr tool's view of testdata/busy.jfr.gz (see
// profile_gen_test.go).
type profileWant struct {
	Mixed         string          `json:"mixed"` // what Busy printed: "mixed JAVA_NS NATIVE_NS"
	Samples       []sampleWant    `json:"samples"`
	ThreadCPU     []threadCPUWant `json:"thread_cpu"`
	CPULoad       []cpuLoadWant   `json:"cpu_load"`
	GCs           int             `json:"gcs"`
	MonitorEnters int             `json:"monitor_enters"`
}

type sampleWant struct {
	Time   time.Time `json:"time"`
	TID    int       `json:"tid"`
	Thread string    `json:"thread"`
	Native bool      `json:"native"`
	Top    []string  `json:"top"` // the innermost 3 frames, Class.method
}

type threadCPUWant struct {
	Time         time.Time `json:"time"`
	TID          int       `json:"tid"`
	User, System float64
}

type cpuLoadWant struct {
	Time                             time.Time `json:"time"`
	JVMUser, JVMSystem, MachineTotal float64
}

// busyTestdata reads testdata/busy.jfr.gz, a recording of Busy.java (see
// profile_gen_test.go) with ProfileSettings.
func busyTestdata(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "busy.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readBusyWant(t *testing.T) *profileWant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "busy.want.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w profileWant
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return &w
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func topOf(s *Stack, n int) []string {
	var out []string
	if s == nil {
		return nil
	}
	for _, f := range s.Frames[:min(n, len(s.Frames))] {
		out = append(out, f.String())
	}
	return out
}

// TestReadProfileTestdata reads a real recording and compares every
// sample (thread, kind, innermost frames), thread CPU load, CPU load and
// the counts of GCs and monitor waits with what the JDK's jfr tool printed
// for the same file.
func TestReadProfileTestdata(t *testing.T) {
	path := writeTemp(t, "busy.jfr", busyTestdata(t))
	pr, err := ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := readBusyWant(t)

	got := make([]sampleWant, 0, len(pr.Samples))
	for _, s := range pr.Samples {
		got = append(got, sampleWant{Time: s.Time, TID: s.Thread.TID, Thread: s.Thread.Name, Native: s.Native, Top: topOf(s.Stack, 3)})
	}
	order := func(a, b sampleWant) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.TID, b.TID), strings.Compare(strings.Join(a.Top, " "), strings.Join(b.Top, " ")))
	}
	slices.SortStableFunc(got, order)
	slices.SortStableFunc(want.Samples, order)
	if len(got) != len(want.Samples) {
		t.Fatalf("%d samples, jfr print has %d", len(got), len(want.Samples))
	}
	for i := range got {
		g, w := got[i], want.Samples[i]
		if !g.Time.Equal(w.Time) || g.TID != w.TID || g.Thread != w.Thread || g.Native != w.Native || !slices.Equal(g.Top, w.Top) {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	native := 0
	for _, s := range want.Samples {
		if s.Native {
			native++
		}
	}
	if pr.Stats.Samples != int64(len(want.Samples)-native) || pr.Stats.NativeSamples != int64(native) || native == 0 {
		t.Errorf("stats %+v; jfr print: %d samples, %d native", pr.Stats, len(want.Samples), native)
	}

	if len(pr.ThreadCPU) != len(want.ThreadCPU) || len(want.ThreadCPU) == 0 {
		t.Fatalf("%d thread CPU loads, jfr print has %d", len(pr.ThreadCPU), len(want.ThreadCPU))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	slices.SortStableFunc(want.ThreadCPU, func(a, b threadCPUWant) int { return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.TID, b.TID)) })
	tcpu := slices.Clone(pr.ThreadCPU)
	slices.SortStableFunc(tcpu, func(a, b ThreadCPU) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Thread.TID, b.Thread.TID))
	})
	for i, w := range want.ThreadCPU {
		g := tcpu[i]
		if !g.Time.Equal(w.Time) || g.Thread.TID != w.TID || !near(g.User, w.User) || !near(g.System, w.System) {
			t.Errorf("thread CPU %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(pr.CPULoad) != len(want.CPULoad) || len(want.CPULoad) == 0 {
		t.Fatalf("%d CPU loads, jfr print has %d", len(pr.CPULoad), len(want.CPULoad))
	}
	for i, w := range want.CPULoad {
		g := pr.CPULoad[i]
		if !g.Time.Equal(w.Time) || !near(g.JVMUser, w.JVMUser) || !near(g.JVMSystem, w.JVMSystem) || !near(g.MachineTotal, w.MachineTotal) || !g.JVMUserOK {
			t.Errorf("CPU load %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(pr.GCs) != want.GCs {
		t.Errorf("%d GCs, jfr print has %d", len(pr.GCs), want.GCs)
	}
	monitors := 0
	for _, w := range pr.Waits {
		if !w.Park {
			monitors++
			if w.Monitor == "Busy$Lock" && (w.Stack == nil || len(w.Stack.Frames) == 0 || !strings.HasPrefix(w.Stack.Frames[0].Class, "Busy")) {
				t.Errorf("wait on Busy$Lock without Busy's frame: %+v %v", w.LockWait, topOf(w.Stack, 3))
			}
		}
	}
	if monitors != want.MonitorEnters || monitors == 0 {
		t.Errorf("%d monitor waits, jfr print has %d", monitors, want.MonitorEnters)
	}

	// What only the recording's own events say.
	if d, ok := pr.Period("jdk.ExecutionSample"); !ok || d != DefaultSamplePeriod {
		t.Errorf("execution sample period %v %v", d, ok)
	}
	if d, ok := pr.Period("jdk.NativeMethodSample"); !ok || d != DefaultSamplePeriod {
		t.Errorf("native sample period %v %v", d, ok)
	}
	if _, ok := pr.Flags["UseAES"]; !ok {
		t.Errorf("no UseAES flag in %d flags", len(pr.Flags))
	}
	if !pr.Start.Before(pr.End) || pr.End.Sub(pr.Start) > time.Minute {
		t.Errorf("span %v .. %v", pr.Start, pr.End)
	}
	// Strings are copies, not views of the file's bytes.
	for _, s := range pr.Samples {
		if s.Stack != nil && len(s.Stack.Frames) > 0 && s.Stack.Frames[0].Class == "" {
			t.Errorf("frame without a class: %+v", s.Stack.Frames[0])
		}
	}
}

// TestReadProfileLockWaits: ReadProfile's waits are ReadLockWaits', with
// stacks.
func TestReadProfileLockWaits(t *testing.T) {
	for _, data := range [][]byte{busyTestdata(t), testdata(t), validSynth().bytes()} {
		path := writeTemp(t, "x.jfr", data)
		pr, err := ReadProfile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want []event.LockWait
		if _, err := ReadLockWaits(path, func(l *event.LockWait) error { want = append(want, *l); return nil }); err != nil {
			t.Fatal(err)
		}
		var got []event.LockWait
		for _, w := range pr.Waits {
			got = append(got, w.LockWait)
		}
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%d waits, ReadLockWaits %d", len(got), len(want))
		}
		for i := range want {
			if !sameLockWait(got[i], want[i]) || got[i].Park != want[i].Park {
				t.Errorf("wait %d: %+v, ReadLockWaits %+v", i, got[i], want[i])
			}
		}
	}
}

// TestReadProfileDamaged truncates and corrupts the real recording: an
// error or less, never a panic or a hang.
func TestReadProfileDamaged(t *testing.T) {
	data := busyTestdata(t)
	full := newProfile()
	if err := readProfile(data, full); err != nil {
		t.Fatal(err)
	}
	step := max(1, len(data)/300)
	for n := headerSize; n < len(data); n += step {
		d := slices.Clone(data[:n])
		binary.BigEndian.PutUint64(d[8:], uint64(n)) // the chunk size agrees
		pr := newProfile()
		err := readProfile(d, pr)
		if err != nil && strings.Contains(err.Error(), panicked) {
			t.Fatalf("cut at %d: %v", n, err)
		}
		if len(pr.Samples) > len(full.Samples) {
			t.Fatalf("cut at %d: %d samples from %d", n, len(pr.Samples), len(full.Samples))
		}
	}
	rng := rand.New(rand.NewPCG(2, uint64(len(data))))
	errs := 0
	const flips = 400
	for i := range flips {
		d := slices.Clone(data)
		for range 1 + rng.IntN(4) {
			d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
		}
		begin := time.Now()
		pr := newProfile()
		err := readProfile(d, pr)
		if err != nil {
			errs++
			if strings.Contains(err.Error(), panicked) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("flip %d: %q", i, err)
			}
		}
		if time.Since(begin) > 5*time.Second {
			t.Fatalf("flip %d took %v", i, time.Since(begin))
		}
		for _, s := range pr.ThreadCPU {
			if s.User < 0 || s.User > 1 || s.System < 0 || s.System > 1 {
				t.Fatalf("flip %d: load out of range %+v", i, s)
			}
		}
	}
	t.Logf("%d of %d damaged copies gave an error", errs, flips)

	// The crafted chunks of TestHostile fail the same way here.
	s := validSynth()
	s.threadCount = 1<<32 - 1
	if err := readProfile(s.bytes(), newProfile()); err == nil || !strings.Contains(err.Error(), "constant count") {
		t.Errorf("hostile thread count: %v", err)
	}
	s = validSynth()
	s.loopPools = true
	if err := readProfile(s.bytes(), newProfile()); err == nil || !strings.Contains(err.Error(), "loops") {
		t.Errorf("pool loop: %v", err)
	}
}

func TestReadProfileFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "nope.jfr"), "no such file"},
		{"not jfr", writeTemp(t, "x.pcap", []byte("\xd4\xc3\xb2\xa1 a pcap")), "not a JFR file"},
		{"empty", writeTemp(t, "e.jfr", nil), "empty file"},
	} {
		pr, err := ReadProfile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || pr == nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// decoderFor builds a decoder over body with a small metadata: the
// primitive types and the classes given.
func decoderFor(body []byte, classes ...*def.Class) *decoder {
	tm := &def.TypeMap{IDMap: map[def.TypeID]*def.Class{}, NameMap: map[string]*def.Class{}}
	for i, n := range []string{"int", "long", "short", "char", "byte", "boolean", "float", "double", "java.lang.String"} {
		c := &def.Class{Name: n, ID: def.TypeID(100 + i)}
		tm.IDMap[c.ID], tm.NameMap[n] = c, c
	}
	for _, c := range classes {
		tm.IDMap[c.ID], tm.NameMap[c.Name] = c, c
	}
	d := &decoder{tm: tm, b: body, end: len(body)}
	d.tInt, d.tLong, d.tShort, d.tChar, d.tByte, d.tBoolean, d.tFloat, d.tDouble, d.tString = 100, 101, 102, 103, 104, 105, 106, 107, 108
	return d
}

// TestDecoder covers the field encodings and what a crafted event can
// do to the decoder of the events jfr-parser skips.
func TestDecoder(t *testing.T) {
	ev := &def.Class{Name: "x.Event", ID: 1, Fields: []def.Field{
		{Name: "startTime", Type: 101}, {Name: "eventThread", Type: 50, ConstantPool: true},
		{Name: "user", Type: 106}, {Name: "d", Type: 107}, {Name: "name", Type: 108}, {Name: "value", Type: 105},
		{Name: "b", Type: 104}, {Name: "arr", Type: 100, Array: true},
	}}
	var b wbuf
	b.varint(123456789)
	b.varint(7)
	b = binary.BigEndian.AppendUint32(b, math.Float32bits(0.25))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(1.5))
	b.str("UseAES")
	b = append(b, 1)
	b = append(b, 0xff)
	b.varint(3)
	b.varint(1)
	b.varint(300)
	b.varint(3)
	got := map[string]value{}
	d := decoderFor(b, ev)
	if err := d.event(ev.Fields, func(f *def.Field, v value) { got[f.Name] = v }); err != nil {
		t.Fatal(err)
	}
	if d.pos != len(b) {
		t.Errorf("read %d of %d bytes", d.pos, len(b))
	}
	want := map[string]value{
		"startTime": {kind: vInt, u: 123456789}, "eventThread": {kind: vRef, u: 7}, "user": {kind: vFloat, f: 0.25},
		"d": {kind: vFloat, f: 1.5}, "name": {kind: vString, s: "UseAES"}, "value": {kind: vBool, u: 1}, "b": {kind: vInt, u: 0xff},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	if _, ok := got["arr"]; ok {
		t.Errorf("array handed to fn")
	}

	// Strings in every encoding.
	for _, c := range []struct {
		enc  []byte
		want value
	}{
		{[]byte{0}, value{kind: vString}},
		{[]byte{1}, value{kind: vString}},
		{[]byte{2, 9}, value{kind: vStringRef, u: 9}},
		{[]byte{3, 2, 'h', 'i'}, value{kind: vString, s: "hi"}},
		{[]byte{4, 2, 'h', 0xe9, 0x01}, value{kind: vString, s: "hé"}},
		{[]byte{5, 2, 'h', 0xe9}, value{kind: vString, s: "hé"}},
	} {
		d := decoderFor(c.enc)
		v, err := d.str()
		if err != nil || v != c.want {
			t.Errorf("string % x: %+v %v, want %+v", c.enc, v, err, c.want)
		}
	}

	// Crafted events fail, fast.
	empty := &def.Class{Name: "x.Empty", ID: 2}
	// 1000 fields of 1000 fields of nothing: a million visits, no bytes.
	nest := &def.Class{Name: "x.Nest", ID: 3}
	wide := &def.Class{Name: "x.Wide", ID: 5}
	for range 1000 {
		nest.Fields = append(nest.Fields, def.Field{Name: "w", Type: 5})
		wide.Fields = append(wide.Fields, def.Field{Name: "e", Type: 2})
	}
	self := &def.Class{Name: "x.Self", ID: 4, Fields: []def.Field{{Name: "me", Type: 4}, {Name: "b", Type: 105}}}
	for _, c := range []struct {
		name   string
		fields []def.Field
		body   []byte
		want   string
	}{
		{"empty array elements", []def.Field{{Name: "a", Type: 2, Array: true}}, []byte{1, 0}, "takes no bytes"},
		{"array count", []def.Field{{Name: "a", Type: 100, Array: true}}, []byte{0xff, 0xff, 0x7f, 1, 2}, "array element count"},
		{"string length", []def.Field{{Name: "s", Type: 108}}, []byte{3, 0x7f, 'x'}, "byte count 127"},
		{"string encoding", []def.Field{{Name: "s", Type: 108}}, []byte{9}, "unknown string encoding 9"},
		{"exponential nesting", []def.Field{{Name: "n", Type: 3}}, []byte{1, 2, 3}, "too many fields"},
		{"self nesting", []def.Field{{Name: "n", Type: 4}}, []byte{1}, "nested more than"},
		{"unknown type", []def.Field{{Name: "u", Type: 999}}, []byte{1}, "unknown type 999"},
		{"short float", []def.Field{{Name: "f", Type: 106}}, []byte{1, 2}, "unexpected EOF"},
		{"short varint", []def.Field{{Name: "l", Type: 101}}, []byte{0x80, 0x80}, "unexpected EOF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decoderFor(c.body, empty, nest, self, wide)
			begin := time.Now()
			err := d.event(c.fields, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if time.Since(begin) > time.Second {
				t.Errorf("took %v", time.Since(begin))
			}
		})
	}
}

func TestPeriod(t *testing.T) {
	pr := newProfile()
	for ev, v := range map[string]string{"a": "10 ms", "b": "1 s", "c": "20ms", "d": "-1 ms", "e": "5 fortnights", "f": "everyChunk", "g": "1e300 h", "h": "0.5 ms"} {
		pr.Settings[ev] = map[string]string{"period": v}
	}
	for _, c := range []struct {
		ev   string
		want time.Duration
		ok   bool
	}{{"a", 10 * time.Millisecond, true}, {"b", time.Second, true}, {"c", 0, false}, {"d", 0, false}, {"e", 0, false},
		{"f", 0, false}, {"g", 0, false}, {"h", 500 * time.Microsecond, true}, {"missing", 0, false}} {
		if d, ok := pr.Period(c.ev); d != c.want || ok != c.ok {
			t.Errorf("%s: %v %v, want %v %v", c.ev, d, ok, c.want, c.ok)
		}
	}
}

func TestProfileSettings(t *testing.T) {
	s := ProfileSettings(ProfileOptions{SamplePeriod: 20 * time.Millisecond, LockThreshold: 5 * time.Millisecond})
	var doc struct {
		Events []struct {
			Name     string `xml:"name,attr"`
			Settings []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:",chardata"`
			} `xml:"setting"`
		} `xml:"event"`
	}
	if err := xml.Unmarshal(s, &doc); err != nil {
		t.Fatalf("settings are not XML: %v\n%s", err, s)
	}
	got := map[string]map[string]string{}
	for _, e := range doc.Events {
		got[e.Name] = map[string]string{}
		for _, st := range e.Settings {
			got[e.Name][st.Name] = st.Value
		}
	}
	for _, c := range []struct{ event, setting, want string }{
		{"jdk.ExecutionSample", "period", "20 ms"},
		{"jdk.NativeMethodSample", "period", "20 ms"},
		{"jdk.JavaMonitorEnter", "threshold", "5000000 ns"},
		{"jdk.JavaMonitorEnter", "stackTrace", "true"},
		{"jdk.ThreadPark", "threshold", "5000000 ns"},
		{"jdk.JavaMonitorWait", "enabled", "true"},
		{"jdk.ThreadCPULoad", "period", "1000 ms"},
		{"jdk.CPULoad", "period", "1000 ms"},
		{"jdk.GarbageCollection", "enabled", "true"},
		{"jdk.BooleanFlag", "period", "beginChunk"},
		{"jdk.ActiveSetting", "enabled", "true"},
	} {
		if v := got[c.event][c.setting]; v != c.want {
			t.Errorf("%s %s = %q, want %q", c.event, c.setting, v, c.want)
		}
	}
	// Defaults.
	if d := string(ProfileSettings(ProfileOptions{})); !strings.Contains(d, ">10 ms<") || !strings.Contains(d, ">1000000 ns<") {
		t.Errorf("defaults:\n%s", d)
	}
}

func TestStartProfileErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.jfr")
	for _, c := range []struct {
		name      string
		pid       int
		rec, path string
		o         ProfileOptions
		want      string
	}{
		{"pid", 0, "r", path, ProfileOptions{}, "bad pid"},
		{"numeric name", 1, "123", path, ProfileOptions{}, "bad recording name"},
		{"negative period", 1, "r", path, ProfileOptions{SamplePeriod: -time.Second}, "negative"},
		{"path with quote", 1, "r", "/tmp/a'b.jfr", ProfileOptions{}, "space or quote"},
	} {
		if _, err := StartProfile(ctx, c.pid, c.rec, c.path, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := VMFlags(ctx, 0); err == nil {
		t.Errorf("VMFlags(0): no error")
	}
}

func TestParseVMFlags(t *testing.T) {
	out := `12345:
     bool UseAES                                   = true                                      {product} {default}
    uintx MaxHeapSize                              := 536870912                                {product} {command line}
   ccstr OnError                                   =                                           {product} {default}
     bool UseSHA                                   = false                                     {product} {command line}
`
	got := parseVMFlags(out)
	want := map[string]string{"UseAES": "true", "MaxHeapSize": "536870912", "OnError": "", "UseSHA": "false"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	cl := `12345:
VM Arguments:
jvm_args: -Xmx512m -XX:+UnlockDiagnosticVMOptions -XX:-UseAESIntrinsics -XX:MaxGCPauseMillis=20 -Dx=-XX:+Nope
java_command: kafka.Kafka server.properties
`
	got = parseCommandLineFlags(cl)
	want = map[string]string{"UnlockDiagnosticVMOptions": "true", "UseAESIntrinsics": "false", "MaxGCPauseMillis": "20"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("command line: got %v, want %v", got, want)
	}
}

// FuzzReadProfile feeds damaged recordings to readProfile: no panic, no
// error on more than one line.
//
//	go test -run '^$' -fuzz FuzzReadProfile -fuzztime 5m -fuzzminimizetime 3s ./internal/jfr
func FuzzReadProfile(f *testing.F) {
	f.Add(validSynth().bytes())
	f.Add(busyTestdata(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		wd := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("readProfile has not finished after 10s on a %d-byte input", len(data)))
		})
		defer wd.Stop()
		pr := newProfile()
		err := readProfile(data, pr)
		if err != nil && (strings.Contains(err.Error(), panicked) || strings.Contains(err.Error(), "\n")) {
			t.Fatal(err)
		}
	})
}

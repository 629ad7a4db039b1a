package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/report"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// makeReportRecording writes a recording by hand: 600 produce requests and
// 200 fetches over 6 s, their writes to one device, jbd2 commits every
// second, and a 700 ms stall of the file system at 3 s that holds up the
// requests arriving in it.
func makeReportRecording(t *testing.T, dir string) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stallStart, stallEnd := t0.Add(3*time.Second), t0.Add(3700*time.Millisecond)
	acks := int16(-1)
	for i := range 600 {
		arr := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		ws := arr.Add(300 * time.Microsecond)
		wd := time.Duration(50+i%7*20) * time.Microsecond
		if !ws.Before(stallStart) && ws.Before(stallEnd) {
			wd = stallEnd.Sub(ws) + 200*time.Microsecond
		}
		end := ws.Add(wd + time.Duration(700+i%13*100)*time.Microsecond)
		r := &event.Request{Arrival: arr, End: end, LatencyMs: float64(end.Sub(arr)) / 1e6, BrokerMs: float64(end.Sub(arr)) / 1e6,
			Client: fmt.Sprintf("10.0.0.%d:%d", 1+i%3, 41000+i%3), Broker: "10.0.0.9:9092", API: "Produce", APIVersion: 9,
			CorrelationID: int32(i), ClientID: "<script>alert(1)</script>", Acks: &acks, Answered: true,
			Partitions: []event.Partition{{Topic: "orders", Partition: int32(i % 4), Records: 5, Bytes: 1000}}}
		if err := w.Request(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&event.Write{Start: ws, End: ws.Add(wd), LatencyMs: float64(wd) / 1e6, TID: 100 + i%3, Thread: "data-plane-kafk",
			Op: "write", Bytes: 1000, Offset: int64(i/4) * 1000, File: fmt.Sprintf("orders-%d/00000000000000000000.log", i%4),
			Topic: "orders", Partition: int32(i % 4), Dev: "7:3"}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			f := &event.Request{Arrival: arr.Add(time.Millisecond), End: arr.Add(time.Millisecond + 500*time.Millisecond/time.Duration(1+i%5)),
				Client: "10.0.0.5:42000", Broker: "10.0.0.9:9092", API: "Fetch", APIKey: 1, APIVersion: 13, CorrelationID: int32(i),
				ClientID: "consumer", Answered: true}
			f.LatencyMs = float64(f.End.Sub(f.Arrival)) / 1e6
			if err := w.Request(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for s := range 6 {
		cs := t0.Add(time.Duration(s) * time.Second)
		ce := cs.Add(3 * time.Millisecond)
		if s == 3 {
			ce = stallEnd
		}
		if err := w.Commit(&event.JournalCommit{Kind: event.KindJBD2Commit, Start: cs, End: ce, LatencyMs: float64(ce.Sub(cs)) / 1e6,
			Dev: "7:3", FS: "ext4", TID: uint32(1000 + s)}); err != nil {
			t.Fatal(err)
		}
	}
	meta := &recording.Meta{Tool: "kscope record", Host: "broker-1", Start: t0, End: t0.Add(6 * time.Second),
		Broker: recording.Broker{LogDirs: []recording.LogDir{{Path: "/data/kafka", Device: "7:3", FSType: "ext4", MountPoint: "/data"}}}}
	if err := w.Close(meta); err != nil {
		t.Fatal(err)
	}
}

func TestReportScreenshot(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		labtest.Unavailable(t, "chromium not found (apt-get install chromium)")
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "rec")
	makeReportRecording(t, dir)
	out := filepath.Join(tmp, "report.html")

	var stdout, stderr bytes.Buffer
	if code := cli.Main([]string{"report", dir, "-o", out, "--top", "20"}, &stdout, &stderr); code != 0 {
		t.Fatalf("kscope report: exit %d\n%s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("<script>alert(1)</script>")) {
		t.Fatal("client id not escaped")
	}
	for _, want := range []string{`id="` + report.ProduceHeatmapID + `"`, `id="slowest"`, `id="commits"`, `id="causes"`, "slow-write"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report has no %s", want)
		}
	}

	shot := filepath.Join(tmp, "shot.png")
	if d := os.Getenv("KSCOPE_REPORT_KEEP"); d != "" { // keep the screenshot there, to look at
		shot = filepath.Join(d, "report.png")
	}
	netlog := filepath.Join(tmp, "net.json")
	runChromium(t, chromium, filepath.Join(tmp, "profile"), netlog, shot, out)

	// The screenshot: the heatmap is drawn. The fullest cells are in the
	// ramp's last color, which nothing else on the page uses.
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	full := hexColor(t, report.HeatColors[len(report.HeatColors)-1])
	var fullest, colored, nonWhite int
	ramp := map[color.RGBA]bool{}
	for _, h := range report.HeatColors {
		ramp[hexColor(t, h)] = true
	}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			px := rgba(img, x, y)
			if px == full {
				fullest++
			}
			if ramp[px] {
				colored++
			}
			if px != (color.RGBA{255, 255, 255, 255}) {
				nonWhite++
			}
		}
	}
	t.Logf("screenshot %v: %d pixels of the fullest color, %d of the heat ramp, %d not white", bnd.Size(), fullest, colored, nonWhite)
	if fullest < 20 || colored < 500 || nonWhite < bnd.Dx()*bnd.Dy()/50 {
		t.Errorf("the heatmap is not drawn: %d fullest, %d heat pixels, %d non-white", fullest, colored, nonWhite)
	}

	// The net log: chromium itself talks to Google (updates, accounts),
	// but nothing was requested on the page's behalf: such requests are
	// keyed by the page's site, file://. A control page with one external
	// image shows that this check sees a page's request.
	if got := pageRequests(t, netlog); len(got) > 0 {
		t.Errorf("the report loaded from the network: %q", got)
	}
	control := filepath.Join(tmp, "control.html")
	if err := os.WriteFile(control, []byte(`<html><body><img src="https://example.com/x.png">x</body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	controlLog := filepath.Join(tmp, "control-net.json")
	runChromium(t, chromium, filepath.Join(tmp, "profile2"), controlLog, filepath.Join(tmp, "control.png"), control)
	if got := pageRequests(t, controlLog); len(got) == 0 {
		t.Errorf("the net log check does not see the control page's request")
	}
}

// runChromium screenshots page with a net log, resolving no host (nothing
// leaves the machine even if something is requested).
func runChromium(t *testing.T, chromium, profile, netlog, shot, page string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+profile, "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND",
		"--log-net-log="+netlog, "--net-log-capture-mode=Default",
		"--screenshot="+shot, "--window-size=1400,2400", "file://"+page)
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
}

// pageRequests returns the net log's evidence of requests made for a
// file:// page: cache keys and network partition keys of file://.
func pageRequests(t *testing.T, netlog string) []string {
	t.Helper()
	nl, err := os.ReadFile(netlog)
	if err != nil {
		t.Fatal(err)
	}
	var parsed map[string]any
	if err := json.Unmarshal(closeNetLog(nl), &parsed); err != nil {
		t.Fatalf("net log %s: %v", netlog, err)
	}
	re := regexp.MustCompile(`_dk_file://[^"]*|"network_anonymization_key":"file://[^"]*"|\\u003Cfile://[^"]*`)
	var out []string
	for _, m := range re.FindAll(nl, -1) {
		out = append(out, string(m))
	}
	return out
}

// closeNetLog makes a net log that chromium may have left unterminated
// valid JSON (it writes "events": [ ... and closes it on a clean exit).
func closeNetLog(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if bytes.HasSuffix(b, []byte("}")) && json.Valid(b) {
		return b
	}
	b = bytes.TrimSuffix(b, []byte(","))
	return append(b, []byte("]}")...)
}

func hexColor(t *testing.T, h string) color.RGBA {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(h, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

func rgba(img image.Image, x, y int) color.RGBA {
	r, g, b, a := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

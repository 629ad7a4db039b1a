package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/use"
)

// Element ids of the USE panel's charts.
const (
	UseCPUID   = "use-cpu"
	UseDisksID = "use-disks"
	UseNICsID  = "use-nics"
)

// Series is one figure over time in columns, keeping the largest value
// of each column (saturation shows as its peaks). Like Heatmap it
// merges pairs of columns when there would be more than MaxCols.
type Series struct {
	MaxCols int
	Origin  time.Time
	Step    time.Duration
	Vals    []float64 // NaN: no value in the column
}

func newSeries(origin time.Time, step time.Duration, maxCols int) *Series {
	return &Series{MaxCols: max(maxCols, 2), Origin: origin, Step: max(step, time.Millisecond)}
}

// Add puts v at time t; values before the origin are dropped.
func (s *Series) Add(t time.Time, v float64) {
	if t.IsZero() || math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if s.Origin.IsZero() {
		s.Origin = t.Truncate(s.Step)
	}
	if t.Before(s.Origin) {
		return
	}
	c := int(t.Sub(s.Origin) / s.Step)
	for c >= s.MaxCols {
		s.merge()
		c = int(t.Sub(s.Origin) / s.Step)
	}
	for len(s.Vals) <= c {
		s.Vals = append(s.Vals, math.NaN())
	}
	if math.IsNaN(s.Vals[c]) || v > s.Vals[c] {
		s.Vals[c] = v
	}
}

func (s *Series) merge() {
	out := make([]float64, (len(s.Vals)+1)/2)
	for i := range out {
		out[i] = s.Vals[2*i]
		if 2*i+1 < len(s.Vals) {
			if b := s.Vals[2*i+1]; math.IsNaN(out[i]) || b > out[i] {
				out[i] = b
			}
		}
	}
	s.Vals = out
	s.Step *= 2
}

// Max is the largest value, 0 for none.
func (s *Series) Max() float64 {
	m := 0.0
	for _, v := range s.Vals {
		if !math.IsNaN(v) {
			m = max(m, v)
		}
	}
	return m
}

// End is the end of the last column.
func (s *Series) End() time.Time { return s.Origin.Add(time.Duration(len(s.Vals)) * s.Step) }

// NamedSeries is a series of one device or interface.
type NamedSeries struct {
	Name   string
	Series *Series
}

// UseFinding is one resource and kind of the USE verdicts over the
// recording: in how many intervals, from when to when, and the reason
// given the first time.
type UseFinding struct {
	Resource    string
	Kind        string
	Intervals   int64
	First, Last time.Time
	Reason      string
}

// UsePanel is a recording's use.jsonl on the report's time axis.
type UsePanel struct {
	Samples    int64
	Saturated  int64 // intervals whose verdict named a saturated resource
	CPUs       int
	CPUUtil    *Series // %
	CPUPSI     *Series // PSI cpu some, %
	RunQueue   *Series // run queue per CPU, % (100: as many tasks as CPUs)
	IOPSI      *Series // PSI io full, %
	Disks      []NamedSeries
	Throttles  []NamedSeries // cgroup limit use per device, %, when limited
	NICDrops   []NamedSeries // drops (interface and qdisc) and errors per second
	NICs       int           // interfaces sampled
	TCPRetrans *Series       // %
	Findings   []UseFinding  // saturation first, then by intervals
}

// maxUseSeries bounds the devices and interfaces kept (a host with
// hundreds of veths is possible).
const maxUseSeries = 16

// readUse fills the USE panel from a use.jsonl file.
func (b *builder) readUse(path string) error {
	u := newUsePanelBuilder(func() *Series { return newSeries(b.origin, b.step, b.o.MaxCols) })
	if err := b.rd.ReadUse(path, u.add); err != nil {
		return fmt.Errorf("reading the USE samples: %w", err)
	}
	b.d.Use = u.panel()
	return nil
}

// usePanelBuilder accumulates USE samples into a UsePanel: the host's
// series, a series per disk, throttle and dropping NIC (at most
// maxUseSeries of each), and the verdicts' findings.
type usePanelBuilder struct {
	p     *UsePanel
	ser   func() *Series // a new series on the report's time axis
	nics  map[string]bool
	finds map[[2]string]*UseFinding // by resource and kind
}

func newUsePanelBuilder(ser func() *Series) *usePanelBuilder {
	p := &UsePanel{}
	p.CPUUtil, p.CPUPSI, p.RunQueue, p.IOPSI, p.TCPRetrans = ser(), ser(), ser(), ser(), ser()
	return &usePanelBuilder{p: p, ser: ser, nics: map[string]bool{}, finds: map[[2]string]*UseFinding{}}
}

// named returns list's series called name, added if there is room; nil
// once the list holds maxUseSeries.
func (u *usePanelBuilder) named(list *[]NamedSeries, name string) *Series {
	for _, n := range *list {
		if n.Name == name {
			return n.Series
		}
	}
	if len(*list) >= maxUseSeries {
		return nil
	}
	s := u.ser()
	*list = append(*list, NamedSeries{Name: name, Series: s})
	return s
}

// add takes one sample.
func (u *usePanelBuilder) add(s *use.Sample) error {
	p := u.p
	p.Samples++
	t := s.Time
	p.CPUs = max(p.CPUs, s.CPU.CPUs)
	p.CPUUtil.Add(t, s.CPU.UtilPct)
	if s.CPU.PSI != nil {
		p.CPUPSI.Add(t, s.CPU.PSI.SomePct)
	}
	if s.CPU.CPUs > 0 {
		p.RunQueue.Add(t, 100*s.CPU.RunQueue/float64(s.CPU.CPUs))
	}
	if s.IOPSI != nil && s.IOPSI.FullPct != nil {
		p.IOPSI.Add(t, *s.IOPSI.FullPct)
	}
	u.addDisks(t, s.Disks)
	u.addNICs(t, s)
	if s.TCP != nil && s.TCP.RetransPct != nil {
		p.TCPRetrans.Add(t, *s.TCP.RetransPct)
	}
	if len(s.Verdict.Saturated()) > 0 {
		p.Saturated++
	}
	u.addFindings(t, s.Verdict.Findings)
	return nil
}

// addDisks adds each disk's utilization and each of its cgroup I/O
// limits' use.
func (u *usePanelBuilder) addDisks(t time.Time, disks []use.Disk) {
	for _, d := range disks {
		if sr := u.named(&u.p.Disks, d.Name); sr != nil {
			sr.Add(t, d.UtilPct)
		}
		for _, th := range d.Throttles {
			if sr := u.named(&u.p.Throttles, d.Name+" "+th.Limit+" "+th.Cgroup); sr != nil {
				sr.Add(t, th.Pct)
			}
		}
	}
}

// addNICs counts the interfaces and adds the drops and errors per second
// of those that ever dropped (only they are drawn).
func (u *usePanelBuilder) addNICs(t time.Time, s *use.Sample) {
	for _, n := range s.NICs {
		u.nics[n.Name] = true
		bad := n.RxDrops + n.TxDrops + n.RxErrors + n.TxErrors
		if n.QdiscDrops != nil {
			bad += *n.QdiscDrops
		}
		if bad > 0 || slices.ContainsFunc(u.p.NICDrops, func(x NamedSeries) bool { return x.Name == n.Name }) {
			if sr := u.named(&u.p.NICDrops, n.Name); sr != nil && s.IntervalS > 0 {
				sr.Add(t, float64(bad)/s.IntervalS)
			}
		}
	}
}

// addFindings counts the intervals of each (resource, kind) finding, with
// its first and last time, at most 4*maxUseSeries of them.
func (u *usePanelBuilder) addFindings(t time.Time, findings []use.Finding) {
	for _, f := range findings {
		k := [2]string{f.Resource, f.Kind}
		uf := u.finds[k]
		if uf == nil {
			if len(u.finds) >= 4*maxUseSeries {
				continue
			}
			uf = &UseFinding{Resource: f.Resource, Kind: f.Kind, First: t, Reason: f.Reason}
			u.finds[k] = uf
		}
		uf.Intervals++
		uf.Last = t
	}
}

// panel is the panel of the samples added: findings by kind (saturation
// first), then by how long they lasted; named series by name.
func (u *usePanelBuilder) panel() *UsePanel {
	p := u.p
	p.NICs = len(u.nics)
	for _, f := range u.finds {
		p.Findings = append(p.Findings, *f)
	}
	kindOrder := map[string]int{use.KindSaturation: 0, use.KindErrors: 1, use.KindUtilization: 2}
	slices.SortFunc(p.Findings, func(a, b UseFinding) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(b.Intervals, a.Intervals), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Kind, b.Kind))
	})
	for _, l := range [][]NamedSeries{p.Disks, p.Throttles, p.NICDrops} {
		slices.SortFunc(l, func(a, b NamedSeries) int { return cmp.Compare(a.Name, b.Name) })
	}
	return p
}

// spanSeries are the panel's series, for the common time axis.
func (p *UsePanel) spanSeries() []*Series {
	out := []*Series{p.CPUUtil, p.CPUPSI, p.RunQueue, p.IOPSI, p.TCPRetrans}
	for _, l := range [][]NamedSeries{p.Disks, p.Throttles, p.NICDrops} {
		for _, n := range l {
			out = append(out, n.Series)
		}
	}
	return out
}

// Line is one series of a line chart.
type Line struct {
	Label string
	S     *Series
	Dash  string
}

// LinesSVG draws series over the time axis [start, end) on a linear y
// axis from 0 to the largest value (at least yMin), with unit on the
// ticks; ref, when above 0, is drawn as a dashed reference line (e.g.
// 100%: as many runnable tasks as CPUs).
func LinesSVG(id string, lines []Line, start, end time.Time, yMin float64, unit string, ref float64, refLabel string) template.HTML {
	const plotH = 200
	legendH := 20 * ((len(lines) + 3) / 4)
	H := marginT + plotH + marginB + legendH + 10
	a := axis{start, end}
	top := yMin
	for _, l := range lines {
		top = max(top, l.S.Max())
	}
	top = niceCeil(top)
	y := func(v float64) float64 { return marginT + plotH - min(max(v, 0), top)/top*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d">`, esc(id), chartW, H)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fff" stroke="#ccc"/>`, marginL, marginT, plotW, plotH)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		yy := y(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end" class="tick">%s</text>`,
			marginL, yy, chartW-marginR, yy, marginL-6, yy+4, esc(fmt.Sprintf("%g%s", math.Round(v*10)/10, unit)))
	}
	if ref > 0 && ref <= top {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c00" stroke-dasharray="4 4"><title>%s</title></line>`,
			marginL, y(ref), chartW-marginR, y(ref), esc(refLabel))
	}
	a.timeTicks(&b, marginT+plotH)
	for i, l := range lines {
		color := seriesColors[i%len(seriesColors)]
		var pts []string
		for c, v := range l.S.Vals {
			if math.IsNaN(v) {
				continue
			}
			mid := l.S.Origin.Add(time.Duration(c)*l.S.Step + l.S.Step/2)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", a.x(mid), y(v)))
		}
		if len(pts) == 1 {
			pts = append(pts, pts[0])
		}
		if len(pts) > 0 {
			dash := ""
			if l.Dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, l.Dash)
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"><title>%s</title></polyline>`,
				color, dash, strings.Join(pts, " "), esc(l.Label))
		}
		lx := marginL + (i%4)*220
		ly := marginT + plotH + marginB + 10 + (i/4)*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d" class="legend">%s (max %s%s)</text>`,
			lx, ly, lx+20, ly, color, lx+26, ly+4, esc(l.Label), esc(fmt.Sprintf("%.1f", l.S.Max())), esc(unit))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// usePage draws the panel's charts.
type usePage struct {
	*UsePanel
	CPUSVG, DisksSVG, NICsSVG template.HTML
}

func drawUse(p *UsePanel, start, end time.Time) *usePage {
	up := &usePage{UsePanel: p}
	cpu := []Line{{Label: "utilization", S: p.CPUUtil}, {Label: "run queue / CPUs", S: p.RunQueue}}
	if len(p.CPUPSI.Vals) > 0 {
		cpu = append(cpu, Line{Label: "PSI cpu some", S: p.CPUPSI, Dash: "6 3"})
	}
	up.CPUSVG = LinesSVG(UseCPUID, cpu, start, end, 100, "%", 100, "run queue = CPUs")
	var disks []Line
	for _, d := range p.Disks {
		disks = append(disks, Line{Label: d.Name + " util", S: d.Series})
	}
	for _, t := range p.Throttles {
		disks = append(disks, Line{Label: t.Name, S: t.Series, Dash: "2 2"})
	}
	if len(p.IOPSI.Vals) > 0 {
		disks = append(disks, Line{Label: "PSI io full", S: p.IOPSI, Dash: "6 3"})
	}
	up.DisksSVG = LinesSVG(UseDisksID, disks, start, end, 100, "%", 90, "saturated at 90%")
	if len(p.NICDrops) > 0 {
		var nics []Line
		for _, n := range p.NICDrops {
			nics = append(nics, Line{Label: n.Name, S: n.Series})
		}
		up.NICsSVG = LinesSVG(UseNICsID, nics, start, end, 1, "/s", 0, "")
	}
	return up
}

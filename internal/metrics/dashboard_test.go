package metrics

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/kscope-dev/kscope/internal/event"
)

const dashboardPath = "../../deploy/grafana/kscope-dashboard.json"

// The parts of Grafana's dashboard model the checks read.
type grafanaDashboard struct {
	SchemaVersion int            `json:"schemaVersion"`
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []grafanaVar `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         *int            `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	GridPos    *gridPos        `json:"gridPos"`
	Datasource *grafanaDSRef   `json:"datasource"`
	Targets    []grafanaTarget `json:"targets"`
	Panels     []grafanaPanel  `json:"panels"` // a collapsed row's
	Repeat     string          `json:"repeat"`
}

type gridPos struct{ X, Y, W, H int }

type grafanaDSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaTarget struct {
	RefID        string        `json:"refId"`
	Expr         string        `json:"expr"`
	Format       string        `json:"format"`
	LegendFormat string        `json:"legendFormat"`
	Datasource   *grafanaDSRef `json:"datasource"`
}

type grafanaVar struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *grafanaDSRef   `json:"datasource"`
}

// queryString is a variable's query: a string, or an object with one.
func (v grafanaVar) queryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

// exposedMetrics are the series names a registry holding everything the
// agent registers exposes after one event of every kind, each with its
// label names. A histogram is its _bucket (with le), _sum and _count.
func exposedMetrics(t testing.TB) map[string]map[string]bool {
	t.Helper()
	// The agent labels every series with its broker's identity
	// (agent.Identity): the same wrapping here.
	reg := prometheus.NewRegistry()
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"broker_id": "1", "cluster_id": "c"}, reg)
	s, err := New(wrapped, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wrapped.MustRegister(NewHealthCollector(func() Health {
		return Health{CaptureUp: true, TraceUp: true, BrokerPID: 1, Packets: 1, KernelDrops: 1, SkippedBytes: 1, Gaps: 1,
			DecodeErrors: 1, BatchErrors: 1, Evicted: 1, Connections: 1, InFlight: map[string]int{"Produce": 1},
			RingbufDrops: map[string]int64{"writes": 1}, Restarts: map[string]int64{"capture": 1},
			SlowRequests: 1, SlowDropped: 1, TracedEvents: 1, SlowLogErrors: 1}
	}), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	produce := req("Produce", "app", 2*time.Millisecond, 200, 50, event.Partition{Topic: "orders", Records: 1, Bytes: 100, ErrorCode: 6})
	produce.ErrorCode = i16(29)
	s.Request(produce)
	s.Request(req("Produce", "app", -1, 200, 0, part("orders", 0, 1, 100)))
	s.Write(&event.Write{Start: t0, End: t0.Add(time.Millisecond), Op: "write", Topic: "orders", Bytes: 100, Error: "EIO"})
	s.Sync(&event.FileSync{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0"})
	s.Commit(&event.JournalCommit{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Kind: event.KindJBD2Commit})
	s.Block(&event.BlockIO{Start: t0, End: t0.Add(time.Millisecond), Dev: "8:0", Op: "write", Bytes: 4096})

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	add := func(name string, labels map[string]bool, extra ...string) {
		set := maps.Clone(labels)
		for _, e := range extra {
			set[e] = true
		}
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		maps.Copy(out[name], set)
	}
	kscope := 0
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		name := mf.GetName()
		if strings.HasPrefix(name, Namespace+"_") {
			kscope++
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			add(name+"_bucket", labels, "le")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		case dto.MetricType_SUMMARY:
			add(name, labels, "quantile")
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	// Every family of the Set (15) and of the health collector (18) has a
	// series: the events above touch every kind.
	if kscope != 33 {
		t.Fatalf("%d kscope families gathered, want 33", kscope)
	}
	for _, name := range []string{"process_resident_memory_bytes", "process_cpu_seconds_total", "go_goroutines"} {
		if out[name] == nil {
			t.Fatalf("%s not exposed", name)
		}
	}
	return out
}

// selector is one vector selector of a PromQL expression.
type selector struct {
	metric string
	labels []string // the label names its matchers name
}

var (
	promAggregations = setOf("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
		"bottomk", "topk", "quantile", "limitk", "limit_ratio")
	promFunctions = setOf("abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
		"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time",
		"day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "exp", "floor",
		"histogram_avg", "histogram_count", "histogram_fraction", "histogram_quantile", "histogram_stddev",
		"histogram_stdvar", "histogram_sum", "holt_winters", "double_exponential_smoothing", "hour", "idelta",
		"increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
		"mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
		"present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
		"sort", "sort_desc", "sort_by_label", "sort_by_label_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
		"sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year")
	promGrouping = setOf("by", "without", "on", "ignoring", "group_left", "group_right")
	promKeywords = setOf("bool", "and", "or", "unless", "offset", "atan2", "inf", "nan", "start", "end")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

// promParse finds the metric names a PromQL expression (with Grafana
// variables) selects, with the labels of their matchers, and the labels
// its by, without, on, ignoring and group_* clauses name.
func promParse(expr string) (sels []selector, grouping []string, err error) {
	s := expr
	i := 0
	skipSpace := func() {
		for i < len(s) && strings.ContainsRune(" \t\r\n", rune(s[i])) {
			i++
		}
	}
	ident := func() string {
		j := i
		for i < len(s) && isIdent(s[i]) {
			i++
		}
		return s[j:i]
	}
	quoted := func() (string, error) { // at a quote
		q := s[i]
		j := i + 1
		for j < len(s) && s[j] != q {
			if s[j] == '\\' && q != '`' {
				j++
			}
			j++
		}
		if j >= len(s) {
			return "", fmt.Errorf("unterminated string at %d", i)
		}
		v := s[i+1 : j]
		i = j + 1
		return v, nil
	}
	labelList := func() ([]string, error) { // at '('
		i++
		var out []string
		for {
			skipSpace()
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated label list")
			}
			switch c := s[i]; {
			case c == ')':
				i++
				return out, nil
			case c == ',':
				i++
			case c == '"':
				v, err := quoted()
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			case isIdentStart(c):
				out = append(out, ident())
			default:
				return nil, fmt.Errorf("unexpected %q in a label list at %d", c, i)
			}
		}
	}
	matchers := func() ([]string, error) { // at '{'
		i++
		var names []string
		for {
			skipSpace()
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated matchers")
			}
			if s[i] == '}' {
				i++
				return names, nil
			}
			if s[i] == ',' {
				i++
				continue
			}
			if !isIdentStart(s[i]) {
				return nil, fmt.Errorf("unexpected %q in matchers at %d", s[i], i)
			}
			names = append(names, ident())
			skipSpace()
			j := i
			for i < len(s) && strings.ContainsRune("=!~", rune(s[i])) {
				i++
			}
			if op := s[j:i]; op != "=" && op != "!=" && op != "=~" && op != "!~" {
				return nil, fmt.Errorf("bad matcher operator %q at %d", op, j)
			}
			skipSpace()
			if i >= len(s) || !strings.ContainsRune("\"'`", rune(s[i])) {
				return nil, fmt.Errorf("matcher value not quoted at %d", i)
			}
			if _, err := quoted(); err != nil {
				return nil, err
			}
		}
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := quoted(); err != nil {
				return nil, nil, err
			}
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '[': // a range or subquery's duration, maybe a Grafana variable
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, nil, fmt.Errorf("unterminated [ at %d", i)
			}
			i += j + 1
		case c == '$': // $name, ${name}, ${name:format}
			i++
			if i < len(s) && s[i] == '{' {
				j := strings.IndexByte(s[i:], '}')
				if j < 0 {
					return nil, nil, fmt.Errorf("unterminated ${ at %d", i)
				}
				i += j + 1
			} else {
				ident()
			}
		case c == '{':
			return nil, nil, fmt.Errorf("selector without a metric name at %d", i)
		case '0' <= c && c <= '9' || c == '.' && i+1 < len(s) && '0' <= s[i+1] && s[i+1] <= '9':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			name := ident()
			skipSpace()
			next := byte(0)
			if i < len(s) {
				next = s[i]
			}
			switch {
			case promGrouping[name]:
				if next == '(' {
					ls, err := labelList()
					if err != nil {
						return nil, nil, err
					}
					grouping = append(grouping, ls...)
				} else if name != "group_left" && name != "group_right" {
					return nil, nil, fmt.Errorf("%s without a label list", name)
				}
			case promKeywords[name] || promAggregations[name]:
			case next == '(':
				if !promFunctions[name] {
					return nil, nil, fmt.Errorf("unknown function %s", name)
				}
			default:
				sel := selector{metric: name}
				if next == '{' {
					ls, err := matchers()
					if err != nil {
						return nil, nil, err
					}
					sel.labels = ls
				}
				sels = append(sels, sel)
			}
		default:
			i++
		}
	}
	return sels, grouping, nil
}

var (
	legendLabelRe = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	labelValuesRe = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	// Labels Prometheus adds to every scraped series.
	targetLabels = setOf("instance", "job")
)

// checkExpr checks that expr selects only exposed metrics, with their
// labels, and that its grouping and legend name labels it has.
func checkExpr(expr, legend string, exposed map[string]map[string]bool) []error {
	sels, grouping, err := promParse(expr)
	if err != nil {
		return []error{fmt.Errorf("%q: %v", expr, err)}
	}
	if len(sels) == 0 {
		return []error{fmt.Errorf("%q selects no metric", expr)}
	}
	var errs []error
	have := maps.Clone(targetLabels)
	for _, sel := range sels {
		labels, ok := exposed[sel.metric]
		if !ok {
			errs = append(errs, fmt.Errorf("%q: metric %s is not exposed", expr, sel.metric))
			continue
		}
		maps.Copy(have, labels)
		for _, l := range sel.labels {
			if !labels[l] && !targetLabels[l] {
				errs = append(errs, fmt.Errorf("%q: %s has no label %s", expr, sel.metric, l))
			}
		}
	}
	for _, l := range grouping {
		if !have[l] {
			errs = append(errs, fmt.Errorf("%q: groups by %s, which none of its metrics has", expr, l))
		}
	}
	// After an aggregation only its by labels are left (histogram_quantile
	// then drops le); without one, the selected series' labels.
	legendHave := have
	if strings.Contains(expr, " by ") || strings.Contains(expr, " by(") {
		legendHave = setOf(grouping...)
	}
	for _, m := range legendLabelRe.FindAllStringSubmatch(legend, -1) {
		if !legendHave[m[1]] {
			errs = append(errs, fmt.Errorf("%q: legend %q names %s, which the result has not", expr, legend, m[1]))
		}
	}
	return errs
}

// checkDashboard checks a dashboard's structure and every query in it
// against the exposed metrics.
func checkDashboard(data []byte, exposed map[string]map[string]bool) []error {
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return []error{fmt.Errorf("not JSON: %v", err)}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.SchemaVersion < 39 {
		fail("schemaVersion %d, want 39 or later", d.SchemaVersion)
	}
	if d.Title == "" || d.UID == "" {
		fail("title %q, uid %q: both needed", d.Title, d.UID)
	}

	vars := map[string]grafanaVar{}
	for _, v := range d.Templating.List {
		if _, dup := vars[v.Name]; dup {
			fail("variable %s twice", v.Name)
		}
		vars[v.Name] = v
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || v.queryString() != "prometheus" {
		fail("no datasource variable of type prometheus: %+v", v)
	}
	if v := vars["cluster"]; v.Type != "query" || strings.ReplaceAll(v.queryString(), " ", "") != "label_values(kscope_agent_up,cluster_id)" {
		fail("cluster variable: %s %q, want a query label_values(kscope_agent_up, cluster_id)", v.Type, v.queryString())
	}
	if v := vars["broker"]; v.Type != "query" || !strings.HasSuffix(strings.ReplaceAll(v.queryString(), " ", ""), ",broker_id)") {
		fail("broker variable: %s %q, want a query of broker_id values", v.Type, v.queryString())
	}
	if v := vars["topic"]; v.Type != "query" {
		fail("no topic query variable")
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			fail("variable %s: datasource %+v, want ${datasource}", v.Name, v.Datasource)
		}
		m := labelValuesRe.FindStringSubmatch(v.queryString())
		if m == nil {
			fail("variable %s: query %q is not label_values(selector, label)", v.Name, v.queryString())
			continue
		}
		sels, _, err := promParse(m[1])
		if err != nil || len(sels) != 1 {
			fail("variable %s: selector %q: %v", v.Name, m[1], err)
			continue
		}
		for _, err := range checkExpr(m[1], "", exposed) {
			fail("variable %s: %v", v.Name, err)
		}
		if l := m[2]; !exposed[sels[0].metric][l] && !targetLabels[l] {
			fail("variable %s: %s has no label %s", v.Name, sels[0].metric, l)
		}
	}

	var all []grafanaPanel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	if len(all) == 0 {
		fail("no panels")
	}
	ids := map[int]string{}
	var placed []grafanaPanel
	knownTypes := setOf("row", "timeseries", "heatmap", "stat", "gauge", "bargauge", "table", "text", "state-timeline")
	for _, p := range all {
		name := fmt.Sprintf("panel %q", p.Title)
		if p.ID == nil || *p.ID <= 0 {
			fail("%s: no id", name)
		} else if other, dup := ids[*p.ID]; dup {
			fail("%s: id %d also used by %q", name, *p.ID, other)
		} else {
			ids[*p.ID] = p.Title
		}
		if !knownTypes[p.Type] {
			fail("%s: type %q", name, p.Type)
		}
		if g := p.GridPos; g == nil || g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			fail("%s: gridPos %+v", name, p.GridPos)
		} else {
			placed = append(placed, p)
		}
		if p.Repeat != "" && vars[p.Repeat].Name == "" {
			fail("%s: repeats over unknown variable %s", name, p.Repeat)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				fail("%s: a row with targets", name)
			}
			continue
		}
		if p.Title == "" {
			fail("panel %d: no title", *p.ID)
		}
		if len(p.Targets) == 0 {
			fail("%s: no targets", name)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.RefID == "" || refs[tg.RefID] {
				fail("%s: refId %q missing or repeated", name, tg.RefID)
			}
			refs[tg.RefID] = true
			ds := tg.Datasource
			if ds == nil {
				ds = p.Datasource
			}
			if ds == nil || ds.UID != "${datasource}" {
				fail("%s: datasource %+v, want the ${datasource} variable", name, ds)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				fail("%s: target %s has no expr", name, tg.RefID)
				continue
			}
			for _, err := range checkExpr(tg.Expr, tg.LegendFormat, exposed) {
				fail("%s: %v", name, err)
			}
		}
	}
	// Panels of the top level (rows included) do not overlap.
	for i, a := range placed {
		for _, b := range placed[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
				fail("panels %q %+v and %q %+v overlap", a.Title, *ga, b.Title, *gb)
			}
		}
	}
	return errs
}

func readDashboard(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDashboard(t *testing.T) {
	data := readDashboard(t)
	for _, err := range checkDashboard(data, exposedMetrics(t)) {
		t.Error(err)
	}
}

// TestDashboardContent: the dashboard shows what it is for.
func TestDashboardContent(t *testing.T) {
	var d grafanaDashboard
	if err := json.Unmarshal(readDashboard(t), &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	heatmap := false
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
			e := strings.ReplaceAll(tg.Expr, " ", "")
			if p.Type == "heatmap" && tg.Format == "heatmap" && p.Repeat == "broker" &&
				strings.HasPrefix(e, `sumby(le)(rate(kscope_request_duration_seconds_bucket{api="Produce",cluster_id=~"$cluster",broker_id=~"$broker"}[$__rate_interval]))`) {
				heatmap = true
			}
		}
	}
	if !heatmap {
		t.Error("no produce latency heatmap per broker (sum by (le) of the Produce buckets, format heatmap, repeated by broker)")
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"histogram_quantile(0.99, sum by (le, topic) (rate(kscope_request_duration_seconds_bucket{",
		"histogram_quantile(0.999, sum by (le, topic) (rate(kscope_request_duration_seconds_bucket{",
		"kscope_requests_total", "kscope_record_bytes_total", "kscope_request_errors_total",
		"sum by (le, topic, partition) (rate(kscope_write_duration_seconds_bucket",
		"kscope_fs_sync_duration_seconds_bucket", "kscope_journal_commit_duration_seconds_bucket",
		"kscope_block_io_duration_seconds_bucket", "kscope_agent_up", "kscope_agent_capture_drops_total",
		"kscope_agent_ringbuf_drops_total", "kscope_agent_skipped_bytes_total", "kscope_agent_decode_errors_total",
		"kscope_agent_restarts_total", "kscope_agent_slow_requests_dropped_total", "process_resident_memory_bytes",
		"rate(process_cpu_seconds_total",
		// The cluster view: every broker side by side.
		"histogram_quantile(0.99, sum by (le, broker_id) (rate(kscope_request_duration_seconds_bucket{api=\"Produce\",cluster_id=~\"$cluster\"}",
		"sum by (le, broker_id) (rate(kscope_write_duration_seconds_bucket{cluster_id=~\"$cluster\"",
		"kscope_agent_up{cluster_id=~\"$cluster\"}",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no query with %s", want)
		}
	}
}

func TestPromParse(t *testing.T) {
	tests := []struct {
		expr     string
		sels     []selector
		grouping []string
		err      bool
	}{
		{expr: `sum by (le) (rate(kscope_request_duration_seconds_bucket{api="Produce",instance=~"$instance"}[$__rate_interval]))`,
			sels: []selector{{"kscope_request_duration_seconds_bucket", []string{"api", "instance"}}}, grouping: []string{"le"}},
		{expr: `histogram_quantile(0.99, sum(rate(a_bucket[5m])) by (le, topic))`,
			sels: []selector{{"a_bucket", nil}}, grouping: []string{"le", "topic"}},
		{expr: `rate(foo_total{x!~"a}b,c"}[5m] offset 1h) / on (instance) group_left (y) bar > bool 1e-3`,
			sels: []selector{{"foo_total", []string{"x"}}, {"bar", nil}}, grouping: []string{"instance", "y"}},
		{expr: `sum without(job)(up) and ${ds_var} * .5`, sels: []selector{{"up", nil}}, grouping: []string{"job"}},
		{expr: "process_resident_memory_bytes{instance=~\"$instance\"}\n# a comment naming not_a_metric",
			sels: []selector{{"process_resident_memory_bytes", []string{"instance"}}}},
		{expr: `topk(5, kscope_bogus_total)`, sels: []selector{{"kscope_bogus_total", nil}}},
		{expr: `hist_quantile(0.9, x)`, err: true},
		{expr: `{__name__="x"}`, err: true},
		{expr: `rate(x{a="b}[5m])`, err: true},
	}
	for _, tc := range tests {
		sels, grouping, err := promParse(tc.expr)
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v, want error %v", tc.expr, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if !slices.EqualFunc(sels, tc.sels, func(a, b selector) bool { return a.metric == b.metric && slices.Equal(a.labels, b.labels) }) {
			t.Errorf("%q: selectors %v, want %v", tc.expr, sels, tc.sels)
		}
		if !slices.Equal(grouping, tc.grouping) {
			t.Errorf("%q: grouping %v, want %v", tc.expr, grouping, tc.grouping)
		}
	}
}

// TestDashboardCheckFails: the check catches a metric that does not
// exist, a wrong label, a duplicate id, a missing gridPos and a variable
// on an unknown metric.
func TestDashboardCheckFails(t *testing.T) {
	exposed := exposedMetrics(t)
	data := readDashboard(t)
	if errs := checkDashboard(data, exposed); len(errs) != 0 {
		t.Fatalf("the dashboard itself fails the check, so its edits prove nothing: %v", errs)
	}
	tests := []struct {
		name    string
		edit    func(d map[string]any)
		wantErr string
	}{
		{"unknown metric", func(d map[string]any) {
			target(d, 2)["expr"] = `histogram_quantile(0.99, sum by (le) (rate(kscope_produce_latency_seconds_bucket[5m])))`
		}, "kscope_produce_latency_seconds_bucket is not exposed"},
		{"histogram base name", func(d map[string]any) {
			target(d, 2)["expr"] = `rate(kscope_write_duration_seconds{op="write"}[5m])`
		}, "kscope_write_duration_seconds is not exposed"},
		{"wrong label", func(d map[string]any) {
			target(d, 2)["expr"] = `sum by (le) (rate(kscope_journal_commit_duration_seconds_bucket{dev="8:0"}[5m]))`
		}, "has no label dev"},
		{"legend label the result lacks", func(d map[string]any) {
			target(d, 2)["legendFormat"] = "{{client_id}}"
		}, "names client_id"},
		{"duplicate id", func(d map[string]any) {
			panels(d)[3].(map[string]any)["id"] = panels(d)[2].(map[string]any)["id"]
		}, "also used by"},
		{"no gridPos", func(d map[string]any) { delete(panels(d)[2].(map[string]any), "gridPos") }, "gridPos"},
		{"no targets", func(d map[string]any) { panels(d)[2].(map[string]any)["targets"] = []any{} }, "no targets"},
		{"overlap", func(d map[string]any) {
			panels(d)[3].(map[string]any)["gridPos"] = panels(d)[2].(map[string]any)["gridPos"]
		}, "overlap"},
		{"variable on an unknown metric", func(d map[string]any) {
			v := d["templating"].(map[string]any)["list"].([]any)[1].(map[string]any)
			v["query"] = map[string]any{"query": "label_values(kscope_up, instance)", "refId": "A"}
		}, "kscope_up is not exposed"},
		{"old schema", func(d map[string]any) { d["schemaVersion"] = 27 }, "schemaVersion"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(data, &d); err != nil {
				t.Fatal(err)
			}
			tc.edit(d)
			edited, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			errs := checkDashboard(edited, exposed)
			found := false
			for _, err := range errs {
				found = found || strings.Contains(err.Error(), tc.wantErr)
			}
			if !found {
				t.Errorf("no error with %q; got %v", tc.wantErr, errs)
			}
		})
	}
}

func panels(d map[string]any) []any { return d["panels"].([]any) }

// target is the first target of top-level panel i.
func target(d map[string]any, i int) map[string]any {
	return panels(d)[i].(map[string]any)["targets"].([]any)[0].(map[string]any)
}

package clients

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kscope-dev/kscope/internal/output"
)

// Formats are the output formats Write takes.
func Formats() []string { return []string{"table", "json", "csv"} }

// Write writes the report as a table (findings, then clients, producers
// and consumers; top rows of each), one JSON object, or CSV (one line
// per client).
func Write(w io.Writer, r *Report, format string, top int) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "csv":
		return writeCSV(w, r)
	case "table", "":
		return writeTable(w, r, top)
	}
	return output.UnknownFormat(format)
}

func writeTable(w io.Writer, r *Report, top int) error {
	bw := &output.ErrWriter{W: w}
	fmt.Fprintf(bw, "%d clients, %d requests in %s", len(r.Clients), r.Requests, secs(r.Seconds))
	if r.Target != "" {
		fmt.Fprintf(bw, "; checked against Kafka %s", r.Target)
	}
	fmt.Fprintln(bw)
	writeFindings(bw, r.Findings, top)
	rows := r.Clients
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	fmt.Fprintln(bw, "\nCLIENTS")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tADDRESS\tPRINCIPAL\tSOFTWARE\tROLES\tCONNS\tREQ/S\tSHARE\tFAILED\tAPIS (VERSIONS)\tREJECTED")
	for i := range rows {
		c := &rows[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%.1f\t%s\t%d\t%s\t%s\n", cell(c.ClientID), cell(c.Address), cell(c.Principal),
			cell(software(c)), strings.Join(c.Roles, ","), c.Connections, c.RequestsPerSec, pct(c.RequestShare), c.Failed,
			apiCell(c.APIs), rejectedCell(c.Rejected, r.Target))
	}
	tw.Flush()
	writeProducers(bw, rows)
	writeConsumers(bw, rows)
	if len(r.Clients) > len(rows) {
		fmt.Fprintf(bw, "\n%d more clients (--top, or --format json for all)\n", len(r.Clients)-len(rows))
	}
	return bw.Err
}

func writeFindings(w io.Writer, fs []Finding, top int) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "\nno findings: no rule fired (kscope clients --rules lists them)")
		return
	}
	fmt.Fprintln(w, "\nFINDINGS")
	for i, f := range fs {
		if top > 0 && i == top {
			fmt.Fprintf(w, "  ... %d more (--format json for all)\n", len(fs)-top)
			break
		}
		fmt.Fprintf(w, "%2d. [%s] %s\n      %s (rule %s)\n", i+1, f.Severity, f.Title, f.Evidence, f.Rule)
	}
}

func writeProducers(w io.Writer, rows []Client) {
	if !slices.ContainsFunc(rows, func(c Client) bool { return c.Producer != nil }) {
		return
	}
	fmt.Fprintln(w, "\nPRODUCERS")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tTOPIC\tREQ/S\tACKS\tCODEC\tIDEMPOTENT\tTXN\tRECORDS/BATCH p50 p90\tBYTES/BATCH p50 p90\tBATCHES/REQ\tPARTS/REQ\tGAP p50 ms\tLINGER≈ ms\tTHROTTLED\tFAILED")
	for i := range rows {
		c := &rows[i]
		p := c.Producer
		if p == nil {
			continue
		}
		for j, t := range p.Topics {
			if j == 5 {
				fmt.Fprintf(tw, "%s\t%d more topics\n", cell(c.ClientID), len(p.Topics)-5)
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%.0f %.0f\t%.0f %.0f\t%.0f\t%.0f\t%.1f\t%s\t%s\t%d\n", cell(c.ClientID), cell(t.Topic),
				p.PerSec, acksCell(p.Acks), cell(countsCell(p.Codecs)), share2(p.Idempotent, p.Requests), share2(p.Transactional, p.Requests),
				t.RecordsPerBatch.P50, t.RecordsPerBatch.P90, t.BytesPerBatch.P50, t.BytesPerBatch.P90,
				p.BatchesPerRequest.P50, p.PartitionsPerRequest.P50, p.GapMs.P50, lingerCell(p), pct(p.ThrottledShare), p.Failed)
		}
	}
	tw.Flush()
}

func writeConsumers(w io.Writer, rows []Client) {
	if !slices.ContainsFunc(rows, func(c Client) bool { return c.Consumer != nil || len(c.Groups) > 0 }) {
		return
	}
	fmt.Fprintln(w, "\nCONSUMERS")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tFETCH/S\tEMPTY\tMAX_WAIT_MS\tMIN_BYTES\tMAX_BYTES\tRESPONSE BYTES p50\tGROUPS (PROTOCOL, MEMBERS)")
	for i := range rows {
		c := &rows[i]
		cs := c.Consumer
		if cs == nil {
			cs = &Consumer{}
		}
		var gs []string
		for _, g := range c.Groups {
			gs = append(gs, fmt.Sprintf("%s (%s, %d)", cell(g.Group), orDash(g.Protocol), len(g.Members)))
		}
		if cs.Fetches == 0 && len(gs) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%s\t%.0f\t%s\n", cell(c.ClientID), cs.PerSec, pct(cs.EmptyShare),
			countsCell(cs.MaxWaitMs), countsCell(cs.MinBytes), countsCell(cs.MaxBytes), cs.ResponseBytes.P50, orDash(strings.Join(gs, ", ")))
	}
	tw.Flush()
}

func writeCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"client_id", "address", "principal", "software", "roles", "connections", "requests", "requests_per_sec",
		"request_share", "bytes", "failed", "apis", "rejected", "acks", "codecs", "idempotent_share", "records_per_batch_p50",
		"bytes_per_batch_p50", "inferred_linger_ms", "throttled_share", "fetches_per_sec", "empty_fetch_share", "max_wait_ms",
		"min_bytes", "groups", "metadata_per_sec", "all_topics_metadata_per_sec", "connections_per_min"})
	for i := range r.Clients {
		c := &r.Clients[i]
		rec := []string{output.Escape(c.ClientID), output.Escape(c.Address), output.Escape(c.Principal), output.Escape(strings.Join(c.Software, " ")), strings.Join(c.Roles, " "),
			strconv.Itoa(c.Connections), itoa(c.Requests), ftoa(c.RequestsPerSec), ftoa(c.RequestShare), itoa(c.Bytes),
			itoa(c.Failed), output.Escape(apiCell(c.APIs)), rejectedCell(c.Rejected, r.Target)}
		rec = append(rec, producerCSV(c.Producer)...)
		rec = append(rec, consumerCSV(c)...)
		rec = append(rec, ftoa(c.MetadataPerSec), ftoa(c.AllTopicsMetadataPerSec), ftoa(c.ConnectionsPerMin))
		_ = cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

func producerCSV(p *Producer) []string {
	if p == nil {
		return make([]string, 6)
	}
	var rpb, bpb float64
	if len(p.Topics) > 0 {
		rpb, bpb = p.Topics[0].RecordsPerBatch.P50, p.Topics[0].BytesPerBatch.P50
	}
	return []string{acksCell(p.Acks), output.Escape(countsCell(p.Codecs)), ftoa(share(p.Idempotent, p.Requests)), ftoa(rpb), ftoa(bpb), ftoa(p.InferredLingerMs)}
}

func consumerCSV(c *Client) []string {
	var gs []string
	for _, g := range c.Groups {
		gs = append(gs, output.Escape(g.Group)+":"+g.Protocol)
	}
	out := []string{"", "", "", "", "", strings.Join(gs, " ")}
	if p := c.Producer; p != nil {
		out[0] = ftoa(p.ThrottledShare)
	}
	if cs := c.Consumer; cs != nil {
		out[1], out[2], out[3], out[4] = ftoa(cs.PerSec), ftoa(cs.EmptyShare), countsCell(cs.MaxWaitMs), countsCell(cs.MinBytes)
	}
	return out
}

// software is the first announced software, or a dash.
func software(c *Client) string {
	if len(c.Software) == 0 {
		return "unknown"
	}
	s := c.Software[0]
	if len(c.Software) > 1 {
		s += fmt.Sprintf(" (+%d)", len(c.Software)-1)
	}
	return s
}

// apiCell lists APIs with their versions: "Produce v9, Fetch v11-12".
func apiCell(apis []APIUse) string {
	var out []string
	for _, a := range apis {
		lo, hi := a.Versions[0].Version, a.Versions[len(a.Versions)-1].Version
		v := "v" + itoa(int64(lo))
		if hi != lo {
			v += "-" + itoa(int64(hi))
		}
		out = append(out, a.API+" "+v)
	}
	return strings.Join(out, ", ")
}

func rejectedCell(rs []Rejection, target string) string {
	if target == "" {
		return "-"
	}
	if len(rs) == 0 {
		return "none"
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s v%d", r.API, r.Version))
	}
	return strings.Join(out, ", ")
}

func acksCell(m map[int16]int64) string {
	var out []string
	for _, k := range sortedKeys(m) {
		name := itoa(int64(k))
		if k == -1 {
			name = "all"
		}
		out = append(out, name)
	}
	return orDash(strings.Join(out, ","))
}

// countsCell lists a map's keys, most used first.
func countsCell[K int32 | string](m map[K]int64) string {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		if a < b {
			return -1
		}
		return 1
	})
	var out []string
	for i, k := range keys {
		if i == 3 {
			out = append(out, "...")
			break
		}
		out = append(out, fmt.Sprint(k))
	}
	return orDash(strings.Join(out, ","))
}

func sortedKeys(m map[int16]int64) []int16 {
	keys := make([]int16, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func lingerCell(p *Producer) string {
	if p.GapMs.N == 0 {
		return "-"
	}
	if p.InferredLingerMs == 0 {
		return "batch-bound"
	}
	return strconv.FormatFloat(p.InferredLingerMs, 'f', 1, 64)
}

func share2(n, of int64) string { return pct(share(n, of)) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cell is a client-chosen name, escaped for the terminal, tabs included.
func cell(s string) string {
	return orDash(strings.ReplaceAll(output.Escape(s), "\t", `\t`))
}

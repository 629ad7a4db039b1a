package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
)

//go:embed templates/report.html.tmpl
var templates embed.FS

var pageTmpl = template.Must(template.ParseFS(templates, "templates/report.html.tmpl"))

// Element ids of the charts (for tests and links).
const (
	ProduceHeatmapID = "produce-heatmap"
	PercentilesID    = "percentiles"
	CausesID         = "causes"
)

// page is what the template sees: the data, and the charts drawn.
type page struct {
	*Data
	ProduceSVG     template.HTML
	ProduceStep    string
	ProduceMax     int64
	Ramp           []string
	PercentilesSVG template.HTML
	PercentileAPIs []APISeries
	CausesSVG      template.HTML
	Stalls         []explain.Stall
	Devices        []devicePage
	Use            *usePage
	// AlarmMs is the findings' alarm threshold.
	AlarmMs float64
}

type devicePage struct {
	Dev        string
	Mount      string
	Writes     int64
	Commits    int64
	SVG        template.HTML
	CommitsSVG template.HTML
}

// WriteHTML writes d as one self-contained HTML page.
func WriteHTML(w io.Writer, d *Data) error {
	p := page{Data: d, Ramp: HeatColors, ProduceMax: d.Produce.MaxCount(), ProduceStep: d.Produce.Step.String(), AlarmMs: d.AlarmMs}
	start, end := d.Start, d.End
	if !end.After(start) {
		start, end = time.Unix(0, 0), time.Unix(1, 0)
	}
	p.ProduceSVG = HeatmapSVG(ProduceHeatmapID, d.Produce, start, end)
	p.PercentileAPIs = d.APIs[:min(len(d.APIs), maxSeries)]
	p.PercentilesSVG = PercentilesSVG(PercentilesID, d.APIs, start, end)
	if s := d.Summary; s != nil {
		var bars []Bar
		for _, c := range s.Causes {
			if c.Requests == 0 {
				continue
			}
			bars = append(bars, Bar{Label: c.Cause, Value: c.Share,
				Note: fmt.Sprintf("%.0f%% (%d requests, %.0f ms)", c.Share*100, c.Requests, c.LatencyMs)})
		}
		p.CausesSVG = BarsSVG(CausesID, bars)
		p.Stalls = s.Stalls
	}
	for i, dv := range d.Devices {
		dp := devicePage{Dev: dv.Dev, Writes: dv.Writes.Total, Commits: dv.Commits.Total}
		if d.Meta != nil {
			for _, ld := range d.Meta.Broker.LogDirs {
				if ld.Device == dv.Dev {
					dp.Mount = ld.MountPoint + " " + ld.FSType
				}
			}
		}
		dp.SVG = HeatmapSVG(fmt.Sprintf("writes-heatmap-%d", i), dv.Writes, start, end)
		if dv.Commits.Total > 0 {
			dp.CommitsSVG = HeatmapSVG(fmt.Sprintf("commits-heatmap-%d", i), dv.Commits, start, end)
		}
		p.Devices = append(p.Devices, dp)
	}
	if d.Use != nil {
		p.Use = drawUse(d.Use, start, end)
	}
	return pageTmpl.Execute(w, p)
}

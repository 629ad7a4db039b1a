package profile

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/output"
)

// Node is a frame of the call tree the flame graph draws: the root is
// "all", its children the outermost frames.
type Node struct {
	Name     string
	Category string // the frame's own category ("" when no rule names it)
	Weight   float64
	Self     float64
	Samples  int64
	Children []*Node
	index    map[string]*Node
}

func newNode(name string) *Node { return &Node{Name: name} }

func (n *Node) child(name, category string) *Node {
	if c := n.index[name]; c != nil {
		return c
	}
	if n.index == nil {
		n.index = map[string]*Node{}
	}
	c := &Node{Name: name, Category: category}
	n.index[name] = c
	n.Children = append(n.Children, c)
	return c
}

// add adds a stack (innermost frame first) of weight w under n.
func (n *Node) add(st *jfr.Stack, w float64, cats *categorizer) {
	n.Weight += w
	n.Samples++
	cur := n
	if st.Truncated {
		cur = cur.child("[truncated]", "")
		cur.Weight += w
		cur.Samples++
	}
	for i := len(st.Frames) - 1; i >= 0; i-- {
		f := st.Frames[i]
		cur = cur.child(frameName(f), cats.frame(f))
		cur.Weight += w
		cur.Samples++
	}
	cur.Self += w
}

// Colors of the flame graph by category group; frames no rule names are
// beige.
var flameColors = map[string]string{
	"compression": "#e45756",
	"checksum":    "#f58518",
	"crypto":      "#b279a2",
	Network:       "#4c78a8",
	Log:           "#54a24b",
	Replicate:     "#72b7b2",
	Request:       "#eeca3b",
	GC:            "#9d755d",
	JIT:           "#bab0ac",
	Unsampled:     "#dddddd",
	Other:         "#e8e0d0",
	"":            "#efe6cf",
}

func flameColor(category string) string {
	group, _, _ := strings.Cut(category, "/")
	if c, ok := flameColors[group]; ok {
		return c
	}
	return flameColors[""]
}

// Flame graph geometry.
const (
	flameW       = 1200
	flameRowH    = 16
	flameTop     = 24 // room for the title
	flameMaxRows = 400
	flameMinPx   = 0.5 // narrower frames (and what they call) are left out
	flameCharPx  = 6.6 // width of a character at font-size 11
)

// FlameSVG draws the report's call tree as a self-contained SVG flame
// graph: the root at the bottom, callers below callees, width by share of
// the estimated CPU, colors by category; every frame has a <title> (the
// tooltip) with its name, share and category. No script.
func FlameSVG(w io.Writer, r *Report) error {
	root := r.Flame
	if root == nil {
		root = newNode("all")
	}
	depth := min(treeDepth(root, 0), flameMaxRows)
	height := flameTop + (depth+1)*flameRowH + 4
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="11">`+"\n",
		flameW, height, flameW, height)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", flameW, height)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" text-anchor="middle">%s</text>`+"\n", flameW/2,
		xmlText(fmt.Sprintf("kscope profile: CPU flame graph (%s, %d samples)", r.Method, r.Samples.Busy)))
	if root.Weight > 0 {
		scale := float64(flameW) / root.Weight
		var draw func(n *Node, x float64, row int)
		draw = func(n *Node, x float64, row int) {
			wpx := n.Weight * scale
			if wpx < flameMinPx || row > flameMaxRows {
				return
			}
			y := height - 4 - (row+1)*flameRowH
			title := fmt.Sprintf("%s: %s of CPU (self %s), %d samples", n.Name, pct(n.Weight/root.Weight), pct(n.Self/root.Weight), n.Samples)
			if n.Category != "" {
				title += ", " + n.Category
			}
			fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="#ffffff" stroke-width="0.5"/>`,
				xmlText(title), x, y, wpx, flameRowH-1, flameColor(n.Category))
			if label := fit(shortName(n.Name), wpx); label != "" {
				fmt.Fprintf(&b, `<text x="%.2f" y="%d">%s</text>`, x+3, y+flameRowH-4, xmlText(label))
			}
			b.WriteString("</g>\n")
			kids := slices.Clone(n.Children)
			slices.SortFunc(kids, func(a, b *Node) int { return cmp.Compare(a.Name, b.Name) })
			cx := x
			for _, c := range kids {
				draw(c, cx, row+1)
				cx += c.Weight * scale
			}
		}
		draw(root, 0, 0)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// FlameHTML writes a self-contained HTML page (nothing loaded, no
// script, a Content-Security-Policy that allows neither) with the flame
// graph and the categories.
func FlameHTML(w io.Writer, r *Report) error {
	var svg strings.Builder
	if err := FlameSVG(&svg, r); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>kscope profile</title>
<style>
body { font-family: sans-serif; margin: 20px; color: #222; }
svg { width: 100%; max-width: 1200px; height: auto; display: block; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
td.num { text-align: right; }
.note { color: #666; font-size: 12px; }
</style>
</head>
<body>
<h1>kscope profile</h1>
`)
	fmt.Fprintf(&b, "<p class=\"note\">%s to %s UTC (%.1f s); %d busy samples (%d Java, %d native of which %d idle); shares are of the JVM's CPU, estimated by %s. Hover over a frame for its share.</p>\n",
		html.EscapeString(r.Start.UTC().Format("2006-01-02 15:04:05")), html.EscapeString(r.End.UTC().Format("15:04:05")), r.DurationSec,
		r.Samples.Busy, r.Samples.Java, r.Samples.Native, r.Samples.Idle, html.EscapeString(r.Method))
	b.WriteString(svg.String())
	b.WriteString("<h2>CPU by category</h2>\n<table><tr><th>category</th><th>CPU</th><th>samples</th><th>deciding frames</th></tr>\n")
	for _, c := range r.Categories {
		var fs []string
		for _, f := range c.Frames {
			fs = append(fs, fmt.Sprintf("%s (%d)", f.Frame, f.Samples))
		}
		fmt.Fprintf(&b, "<tr><td><span style=\"background:%s\">&nbsp;&nbsp;&nbsp;</span> %s</td><td class=\"num\">%s</td><td class=\"num\">%d</td><td>%s</td></tr>\n",
			flameColor(c.Name), xmlText(c.Name), pct(c.Share), c.Samples, xmlText(strings.Join(fs, ", ")))
	}
	b.WriteString("</table>\n")
	if len(r.Hints) > 0 {
		b.WriteString("<h2>Hints</h2>\n<ul>\n")
		for _, h := range r.Hints {
			fmt.Fprintf(&b, "<li>%s</li>\n", xmlText(h.Text))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// shortName drops the package of a Class.method name: Selector.poll.
func shortName(name string) string {
	if strings.HasPrefix(name, "[") {
		return name
	}
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return name
	}
	if pkg := strings.LastIndexByte(name[:dot], '.'); pkg >= 0 {
		return name[pkg+1:]
	}
	return name
}

func treeDepth(n *Node, d int) int {
	if d >= flameMaxRows {
		return d
	}
	m := d
	for _, c := range n.Children {
		m = max(m, treeDepth(c, d+1))
	}
	return m
}

// fit shortens a frame's name to what a box of wpx pixels shows: the
// method and as much of the class as fits, "" when nothing useful does.
func fit(name string, wpx float64) string {
	n := int((wpx - 6) / flameCharPx)
	if n < 3 {
		return ""
	}
	if utf8.RuneCountInString(name) <= n {
		return name
	}
	r := []rune(name)
	return "…" + string(r[len(r)-(n-1):])
}

// xmlText escapes text from the recording for XML and HTML: control
// characters and invalid UTF-8 (which XML cannot hold) become visible
// escapes first.
func xmlText(s string) string { return html.EscapeString(output.Escape(s)) }

package output

import (
	"html"
	"html/template"
)

// HTMLHead is the head of kscope's self-contained HTML pages (inline SVG,
// no script, nothing fetched): the Content-Security-Policy that allows
// none of those, the title, and the style the pages share.
func HTMLHead(title string) template.HTML {
	return template.HTML(`<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>` + html.EscapeString(title) + `</title>
<style>
body { font-family: sans-serif; margin: 20px; color: #222; max-width: 1300px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
h3 { font-size: 14px; margin: 18px 0 4px; }
.meta { color: #555; font-size: 13px; }
.note { color: #666; font-size: 12px; }
.warn { color: #a40; }
svg.chart { width: 100%; max-width: 1000px; height: auto; display: block; }
svg text { font-size: 12px; fill: #333; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.better { background: #e3f4e3; } td.worse { background: #fbe3e3; }
</style>`) // the title is escaped; the rest is constant
}

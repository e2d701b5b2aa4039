package report

import (
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/spillway/spillway/internal/words"
)

// HTML writes the report as one self-contained page: inline CSS and SVG,
// no script and nothing fetched, so that it opens anywhere, offline.
func HTML(w io.Writer, r Result) error {
	type cell struct {
		X, Y              int
		Fill, Title, Rate string
		Day, Hour         int
	}
	type bar struct {
		Y                int
		W                float64
		Label, Value     string
		CapW, Rate, Name string
	}
	type point struct{ X, Y float64 }
	var cells []cell
	fills := Fills(r)
	for d := range r.Heatmap {
		for h := range r.Heatmap[d] {
			c := r.Heatmap[d][h]
			rt := cellValue(r, c)
			fill, title, rs := "#ffffff", fmt.Sprintf("%s %02d:00 — no attempts", Weekdays[d], h), "-1"
			if rt >= 0 {
				fill = fills[d][h]
				title = fmt.Sprintf("%s %02d:00 — %s, %d capacity (%s)", Weekdays[d], h, words.Count(c.Attempts, "attempt"), c.Capacity, pct(rt))
				rs = fmt.Sprintf("%.4f", rt)
			}
			cells = append(cells, cell{X: 40 + h*26, Y: 20 + d*26, Fill: fill, Title: title, Rate: rs, Day: d, Hour: h})
		}
	}
	var bars []bar
	for i, m := range r.Models {
		if i == 20 {
			break
		}
		bars = append(bars, bar{Y: i * 24, W: math.Max(1, m.Rate*400), CapW: fmt.Sprintf("%.1f", math.Max(0, m.Capacity*400)),
			Label: m.Model, Value: fmt.Sprintf("%s failed, %s capacity, %s", pct(m.Rate), pct(m.Capacity), words.Count(m.Attempts, "attempt")), Name: m.Model})
	}
	var curve []point
	var sizes []SizeBucket
	maxSize := 0.0
	for _, b := range r.Sizes {
		if b.Attempts > 0 {
			sizes = append(sizes, b)
			maxSize = math.Max(maxSize, b.Rate)
		}
	}
	for i, b := range sizes {
		y := 180.0
		if maxSize > 0 {
			y = 180 - b.Rate/maxSize*160
		}
		curve = append(curve, point{X: 40 + float64(i)*(560/math.Max(1, float64(len(sizes)-1))), Y: y})
	}
	points := ""
	for _, p := range curve {
		points += fmt.Sprintf("%.1f,%.1f ", p.X, p.Y)
	}
	labels := make([]string, len(sizes))
	for i, b := range sizes {
		labels[i] = sizeLabel(b)
	}
	data := map[string]any{"R": r, "Cells": cells, "Bars": bars, "BarsH": len(bars)*24 + 10, "Curve": curve, "Points": points,
		"Sizes": sizes, "Labels": labels, "Weekdays": Weekdays, "Hours": hoursList(), "Pct": pct, "Inputs": InputLines(r)}
	return page.Execute(w, data)
}

func hoursList() []int {
	h := make([]int, 24)
	for i := range h {
		h[i] = i
	}
	return h
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":   pct,
	"label": sizeLabel,
	"add":   func(a, b int) int { return a + b },
	"mul":   func(a, b int) int { return a * b },
	"deref": func(p *float64) float64 { return *p },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>spillway report</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; text-align: right; } th { border-bottom: 1px solid #ccc; }
td:first-child, th:first-child { text-align: left; }
.muted { color: #777; } svg text { font: 11px system-ui, sans-serif; fill: #444; }
li { margin: .3em 0; }
</style>
</head>
<body>
<h1>spillway report</h1>
<p class="muted">{{if .R.From}}{{.R.From.Format "Mon 2006-01-02 15:04"}} to {{.R.To.Format "Mon 2006-01-02 15:04"}} ({{.R.TZ}}); {{end}}{{.R.Totals.Attempts}} attempts, {{.R.Totals.Capacity}} at capacity, {{.R.Totals.RateLimit}} rate limits, {{.R.Totals.Quota}} quota errors.</p>
<h2>Read</h2>
<ul id="inputs">{{range .Inputs}}<li>{{.}}</li>{{end}}</ul>
<h2>Findings</h2>
<ul id="findings">{{range .R.Findings}}<li>{{.}}</li>{{end}}</ul>
<h2>Capacity errors by weekday and hour</h2>
<p class="muted">Share of attempts that hit capacity; darker is worse, white is no data.</p>
<svg id="heatmap" width="670" height="210" viewBox="0 0 670 210" role="img" aria-label="capacity errors by weekday and hour">
{{range .Hours}}<text x="{{add 43 (mul . 26)}}" y="14">{{printf "%02d" .}}</text>{{end}}
{{range $i, $d := .Weekdays}}<text x="4" y="{{add 37 (mul $i 26)}}">{{$d}}</text>{{end}}
{{range .Cells}}<rect class="cell" x="{{.X}}" y="{{.Y}}" width="24" height="24" fill="{{.Fill}}" stroke="#ddd" data-weekday="{{.Day}}" data-hour="{{.Hour}}" data-rate="{{.Rate}}"><title>{{.Title}}</title></rect>
{{end}}</svg>
<h2>Models</h2>
<svg id="models" width="900" height="{{.BarsH}}" viewBox="0 0 900 {{.BarsH}}" role="img" aria-label="failure rate per model">
{{range .Bars}}<g transform="translate(0,{{.Y}})"><text x="0" y="15">{{.Label}}</text><rect class="bar" x="160" y="3" width="{{printf "%.1f" .W}}" height="16" fill="#e8b4a8"></rect><rect x="160" y="3" width="{{.CapW}}" height="16" fill="#a3120f"></rect><text x="570" y="15">{{.Value}}</text></g>
{{end}}</svg>
<table>
<tr><th>model</th><th>attempts</th><th>failed</th><th>capacity</th><th>fallbacks</th><th>retries/request</th><th>waited (ms)</th><th>p50 (ms)</th><th>p95 (ms)</th></tr>
{{range .R.Models}}<tr><td>{{.Model}}</td><td>{{.Attempts}}</td><td>{{pct .Rate}}</td><td>{{pct .Capacity}}</td><td>{{.Fallbacks}}</td><td>{{if .RetriesPerRequest}}{{printf "%.2f" (deref .RetriesPerRequest)}}{{else}}-{{end}}</td><td>{{.WaitMS}}</td><td>{{if .LatencyP50}}{{printf "%.0f" (deref .LatencyP50)}}{{else}}-{{end}}</td><td>{{if .LatencyP95}}{{printf "%.0f" (deref .LatencyP95)}}{{else}}-{{end}}</td></tr>
{{end}}</table>
<h2>Capacity errors by request size</h2>
{{if .Sizes}}<svg id="sizes" width="640" height="220" viewBox="0 0 640 220" role="img" aria-label="capacity rate by request size">
<line x1="40" y1="180" x2="600" y2="180" stroke="#999"></line>
<polyline fill="none" stroke="#a3120f" stroke-width="2" points="{{.Points}}"></polyline>
{{range $i, $p := .Curve}}<circle cx="{{printf "%.1f" $p.X}}" cy="{{printf "%.1f" $p.Y}}" r="3" fill="#a3120f"></circle><text x="{{printf "%.1f" $p.X}}" y="198" text-anchor="middle">{{index $.Labels $i}}</text>{{end}}
</svg>{{end}}
<p class="muted">{{if .R.Threshold}}Above {{.R.Threshold.Tokens}} input tokens: {{pct .R.Threshold.BelowRate}} → {{pct .R.Threshold.AboveRate}} ({{.R.Threshold.Confidence}} confidence).{{else}}{{.R.SizeNote}}{{end}}</p>
<h2>By day</h2>
<table><tr><th>date</th><th>attempts</th><th>capacity</th><th>quota</th></tr>
{{range .R.Days}}<tr><td>{{.Date}}</td><td>{{.Attempts}}</td><td>{{pct .Rate}}</td><td>{{.Quota}}</td></tr>
{{end}}</table>
</body>
</html>
`))

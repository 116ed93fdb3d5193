package timeline

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/linearizability"
)

// The SVG's structure, stable for browser tests:
//
//	<svg id="timeline">                       the picture
//	  <g class="header">                      title, verdicts (data-verdict on each), run parameters
//	  <g class="lane faults">                 faults on no single lane (targets such as "any"), when any
//	  <g class="lane client" data-client="N"> one per client, 0..N (a job queue's producer is the last);
//	                                          beyond maxClientLanes, those that tell the story
//	                                          (bound.go)
//	  <g class="lane server" data-server="S"> one per lock server, in Meta.Servers order
//	  <g class="lane store">                  the protected store
//	  <g class="violation">                   only when a property is illegal: bands, markers
//	  <g class="axis">                        time in seconds since the run's base
//	  <g class="crop">                        what a cropped picture leaves out, when cropped;
//	                                          text.omitted: the clients and keys not drawn
//	  <g class="caption">                     each illegal property's explanation, the first highlighted
//	  <g class="legend">
//
// Inside lanes: rect.belief, rect.danger, rect.lease (.unsure when dashed), .fault,
// g.mark.write.ok / .write.fail / .write.unknown, line.jump.

const (
	width    = 1200.0
	plotL    = 112.0
	plotR    = width - 24
	textRow  = 12.0 // a lane's label rows
	barRow   = 18.0
	barH     = 12.0
	charW    = 6.1 // average width of an 11 px sans-serif character
	fontSize = 11
)

// palette colours clients; a client's beliefs and leases share its colour. It keeps
// away from the hues the legend gives meanings to (green ok, red refused and danger,
// orange unknown, yellow fault): a client drawn in one of them would read as that
// meaning (TestClientColoursMeanNothing holds it there).
var palette = [...]string{"#3366cc", "#16a2a2", "#8e44ad", "#d6489b", "#8c564b", "#1b1f5e", "#555555", "#7fa7ff"}

func colour(client int) string { return palette[client%len(palette)] }

const (
	okColour      = "#2e9d3a"
	failColour    = "#d62728"
	unknownColour = "#e67e00"
	faultColour   = "#b08800"
)

// canvas accumulates the SVG text and maps time to x.
type canvas struct {
	b    strings.Builder
	view span
}

func (c *canvas) p(format string, args ...any) { fmt.Fprintf(&c.b, format, args...) }

func (c *canvas) x(t int64) float64 {
	f := float64(t-c.view.from) / float64(c.view.to-c.view.from)
	return plotL + math.Max(-0.02, math.Min(1.02, f))*(plotR-plotL)
}

// esc escapes text for XML content and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

func textWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * charW }

// labeler places labels on a lane's two text rows without overlap; a label that fits
// nowhere is left out (its mark keeps its tooltip).
type labeler struct{ ends [2]float64 }

func (l *labeler) place(x float64, s string) (float64, int) {
	w := textWidth(s)
	x = math.Max(plotL+1, math.Min(x, plotR-w))
	for r := range l.ends {
		if l.ends[r] == 0 || x >= l.ends[r]+4 {
			l.ends[r] = x + w
			return x, r
		}
	}
	return 0, -1
}

// label is a text waiting for a place, most important first.
type label struct {
	prio   int
	x      float64
	text   string
	colour string
}

func (c *canvas) labels(y float64, ls []label) {
	slices.SortStableFunc(ls, func(a, b label) int { return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(a.x, b.x)) })
	var lb labeler
	for _, l := range ls {
		if x, r := lb.place(l.x, l.text); r >= 0 {
			c.p(`<text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", x, y+textRow*float64(r+1), l.colour, esc(l.text))
		}
	}
}

// rows packs intervals greedily into rows; it returns each one's row and the count.
func rows(spans []span) ([]int, int) {
	var ends []int64
	out := make([]int, len(spans))
	for i, s := range spans {
		r := slices.IndexFunc(ends, func(e int64) bool { return e <= s.from })
		if r < 0 {
			r = len(ends)
			ends = append(ends, 0)
		}
		ends[r], out[i] = s.to, r
	}
	return out, max(1, len(ends))
}

// shows reports whether the stretch from–to overlaps the view: only what does is drawn
// (the rest is summarised beside the axis), so that a long run's picture stays small.
func (c *canvas) shows(from, to int64) bool { return c.view.overlaps(from, to) }

func laneHeight(nrows int) float64 { return 2*textRow + 6 + float64(nrows)*barRow + 4 }

// render draws m.
func render(m *model) []byte {
	c := &canvas{view: m.view}
	var body canvas
	body.view = m.view
	y := c.header(m)
	if len(m.violations) > 0 {
		y += 18 // the violation markers' row
	}
	top := y
	if len(m.global) > 0 {
		y = body.faultLane(m, y)
	}
	for _, l := range m.clients {
		y = body.clientLane(m, l, y)
	}
	for _, l := range m.servers {
		y = body.serverLane(l, m.multiKey, y)
	}
	y = body.storeLane(m, y)
	bottom := y
	var tail canvas
	tail.view = m.view
	for _, f := range m.global {
		x0, x1 := tail.x(f.from), tail.x(f.to)
		tail.p(`<rect class="fault global" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.08" clip-path="url(#plot)"/>`+"\n", x0, top, math.Max(x1-x0, 2), bottom-top, faultColour)
	}
	tail.violations(m, top, bottom)
	y = tail.axis(m, top, bottom)
	y = tail.caption(m, y)
	height := tail.legend(m, y) + 12
	var out strings.Builder
	fmt.Fprintf(&out, `<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="%d">`+"\n",
		width, height, width, height, fontSize)
	out.WriteString(defs(top, bottom))
	out.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	out.WriteString(c.b.String())
	out.WriteString(body.b.String())
	out.WriteString(tail.b.String())
	out.WriteString("</svg>\n")
	return []byte(out.String())
}

func defs(top, bottom float64) string {
	return fmt.Sprintf(`<defs>
<pattern id="hatch-danger" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#fde0e0"/><line x1="0" y1="0" x2="0" y2="6" stroke="%s" stroke-width="2.5"/></pattern>
<pattern id="hatch-fault" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" fill="#fff6d6"/><line x1="0" y1="0" x2="0" y2="8" stroke="#e8cf7a" stroke-width="2"/></pattern>
<clipPath id="plot"><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"/></clipPath>
</defs>
`, failColour, plotL, top-20, plotR-plotL, bottom-top+20)
}

// header draws the title, the verdicts and the run's parameters; it returns the y below.
func (c *canvas) header(m *model) float64 {
	c.p(`<g class="header">` + "\n")
	c.p(`<text x="16" y="26" font-size="17" font-weight="bold">%s</text>`+"\n", esc(m.title))
	c.p(`<text x="16" y="48" font-size="13">`)
	first := true
	for _, p := range m.result.Properties {
		if (p.Property == linearizability.P4 || p.Property == linearizability.P5) && p.Verdict == linearizability.NA {
			continue
		}
		dx := 0
		if !first {
			c.p(`<tspan fill="#999" dx="6">·</tspan>`)
			dx = 6
		}
		first = false
		fill, weight, text := "#555", "normal", string(p.Verdict)
		switch p.Verdict {
		case linearizability.Illegal:
			fill, weight = failColour, "bold"
		case linearizability.OK:
			fill = okColour
		case linearizability.Unknown:
			fill, weight, text = unknownColour, "bold", "unknown (checker timed out)"
		}
		title := fmt.Sprintf("%s %s: %s", p.Property, p.Property.Name(), p.Verdict)
		if p.Explanation != "" {
			title += " — " + p.Explanation
		}
		c.p(`<tspan class="verdict" dx="%d" data-property="%s" data-verdict="%s" fill="%s" font-weight="%s">%s %s<title>%s</title></tspan>`,
			dx, p.Property, esc(string(p.Verdict)), fill, weight, p.Property, esc(text), esc(title))
	}
	if first {
		c.p(`<tspan fill="#555">not checked</tspan>`)
	}
	c.p("</text>\n")
	meta := m.meta
	parts := []string{"impl " + cmp.Or(meta.Impl, "?"), "fencing " + cmp.Or(meta.Fencing, m.result.Fencing, "?")}
	if meta.TTL > 0 {
		parts = append(parts, "TTL "+meta.TTL.String())
	}
	if meta.Topology != "" {
		parts = append(parts, "topology "+meta.Topology)
	}
	if meta.Seed != 0 {
		parts = append(parts, fmt.Sprintf("seed %d", meta.Seed))
	}
	c.p(`<text x="16" y="68" fill="#444">%s</text>`+"\n", esc(strings.Join(parts, " · ")))
	c.p("</g>\n")
	return 82
}

// laneFrame draws a lane's name, separator and fault bands; it returns the labels the
// faults want.
func (c *canvas) laneFrame(name, colourOf string, y, h float64, faults []fault) []label {
	c.p(`<line x1="8" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotR, y+h, y+h)
	c.p(`<text x="12" y="%.1f" font-size="12" font-weight="bold" fill="%s">%s</text>`+"\n", y+2*textRow+6+barH-1, colourOf, esc(name))
	var ls []label
	for _, f := range faults {
		if !c.shows(f.from, f.to) {
			continue
		}
		x0, x1 := c.x(f.from), c.x(f.to)
		c.p(`<rect class="fault" data-kind="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#hatch-fault)" fill-opacity="0.7" stroke="%s" stroke-width="0.5" clip-path="url(#plot)"><title>%s</title></rect>`+"\n",
			esc(f.w.Kind), x0, y+2, math.Max(x1-x0, 2), h-4, faultColour, esc(f.title))
		ls = append(ls, label{0, x0 + 2, f.label, faultColour})
	}
	return ls
}

func (c *canvas) faultLane(m *model, y float64) float64 {
	h := laneHeight(1)
	c.p(`<g class="lane faults">` + "\n")
	ls := c.laneFrame("faults", faultColour, y, h, m.global)
	c.labels(y, ls)
	c.p("</g>\n")
	return y + h
}

func (c *canvas) clientLane(m *model, l clientLane, y float64) float64 {
	l.beliefs = slices.DeleteFunc(slices.Clone(l.beliefs), func(b belief) bool { return !c.shows(b.start, b.end) })
	spans := make([]span, len(l.beliefs))
	for i, b := range l.beliefs {
		spans[i] = span{b.start, b.end}
	}
	row, n := rows(spans)
	h := laneHeight(n)
	col := colour(l.client)
	c.p(`<g class="lane client" data-client="%d">`+"\n", l.client)
	ls := c.laneFrame(fmt.Sprintf("client %d", l.client), col, y, h, l.faults)
	barsTop := y + 2*textRow + 6
	for i, b := range l.beliefs {
		by := barsTop + float64(row[i])*barRow
		x0, x1 := c.x(b.start), c.x(b.end)
		ender := "lasted to the end of the run"
		if b.ender != "" {
			ender = "ended by " + string(b.ender)
		}
		fence := ""
		if b.fence > 0 {
			fence = fmt.Sprintf(", fence %d", b.fence)
		}
		c.p(`<rect class="belief" x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" fill-opacity="0.28" stroke="%s" clip-path="url(#plot)"><title>client %d (process %d) believed it held %s %s–%s%s; %s</title></rect>`+"\n",
			x0, by, math.Max(x1-x0, 1), barH, col, col, b.client, b.process, esc(b.key), secs(b.start), secs(b.end), fence, esc(ender))
		for _, d := range b.danger {
			d0, d1 := c.x(d.from), c.x(d.to)
			c.p(`<rect class="danger" x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="url(#hatch-danger)" stroke="%s" clip-path="url(#plot)"><title>danger: client %d believes it holds %s, but no server holds its lease any more (%s–%s)</title></rect>`+"\n",
				d0, by, math.Max(d1-d0, 1.5), barH, failColour, b.client, esc(b.key), secs(d.from), secs(d.to))
		}
		if m.multiKey && x1-x0 > textWidth(b.key)+6 {
			c.p(`<text x="%.1f" y="%.1f" font-size="10" fill="#222" clip-path="url(#plot)">%s</text>`+"\n", x0+3, by+barH-2.5, esc(b.key))
		}
	}
	ls = append(ls, c.marks(l.marks, barsTop, y+h-4, col)...)
	c.labels(y, ls)
	c.p("</g>\n")
	return y + h
}

// marks draws operations between y0 and y1 and returns their labels.
func (c *canvas) marks(ms []mark, y0, y1 float64, col string) []label {
	minor := 0
	for _, mk := range ms {
		if mk.class == "minor" && mk.at >= c.view.from && mk.at <= c.view.to {
			minor++
		}
	}
	dense := float64(minor) > (plotR-plotL)/3 // refused attempts and reads: ticks only while they stay apart
	var ls []label
	for _, mk := range ms {
		if mk.until < c.view.from || mk.at > c.view.to {
			continue
		}
		x := c.x(mk.at)
		fill := map[string]string{"ok": okColour, "fail": failColour, "unknown": unknownColour}[mk.class]
		switch {
		case mk.class == "minor":
			if dense {
				continue
			}
			c.p(`<line class="mark minor" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#aaa"><title>%s</title></line>`+"\n", x, x, y1-5, y1, esc(mk.title))
		case mk.kind == histories.Write || mk.kind == histories.Effect:
			x1 := math.Max(c.x(mk.until), x+4)
			c.p(`<g class="mark write %s"><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="#222" stroke-width="0.5"/></g>`+"\n",
				mk.class, esc(mk.title), x, (y0+y1)/2-5, x1-x, 10.0, fill)
			prio := 0 // a refused or unknown write is the news
			if mk.outcome == histories.OK {
				prio = 1
			}
			ls = append(ls, label{prio, x - 2, mk.label, fill})
		case mk.kind == histories.Crash:
			c.p(`<g class="mark crash"><title>%s</title><text x="%.1f" y="%.1f" font-size="16" fill="%s" text-anchor="middle">✕</text></g>`+"\n", esc(mk.title), x, (y0+y1)/2+6, failColour)
			ls = append(ls, label{1, x - 4, mk.label, failColour})
		case mk.kind == histories.Read:
			c.p(`<line class="mark read %s" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>%s</title></line>`+"\n", mk.class, x, x, y1-8, y1, fill, esc(mk.title))
		default:
			stroke, dash, prio := "#444", "", 3
			switch {
			case mk.kind == histories.Acquire && mk.outcome == histories.OK:
				stroke, prio = col, 2
			case mk.outcome == histories.Unknown:
				stroke, dash, prio = unknownColour, ` stroke-dasharray="3 2"`, 1
			case mk.outcome == histories.Fail:
				stroke, prio = failColour, 2
			}
			c.p(`<line class="mark %s %s" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"%s><title>%s</title></line>`+"\n",
				mk.kind, mk.class, x, x, y0-3, y1, stroke, dash, esc(mk.title))
			if mk.label != "" {
				ls = append(ls, label{prio, x - 2, mk.label, stroke})
			}
		}
	}
	return ls
}

func (c *canvas) serverLane(l serverLane, multiKey bool, y float64) float64 {
	l.leases = slices.DeleteFunc(slices.Clone(l.leases), func(le lease) bool { return !c.shows(le.start, le.end()) })
	spans := make([]span, len(l.leases))
	for i, ls := range l.leases {
		spans[i] = span{ls.start, ls.end()}
	}
	row, n := rows(spans)
	h := laneHeight(n)
	c.p(`<g class="lane server" data-server="%s">`+"\n", esc(l.name))
	ls := c.laneFrame(l.name, "#222", y, h, l.faults)
	barsTop := y + 2*textRow + 6
	for i, le := range l.leases {
		by := barsTop + float64(row[i])*barRow
		x0, x1 := c.x(le.start), c.x(le.end())
		col := colour(le.client)
		class, style, text := "lease", fmt.Sprintf(`fill="%s" fill-opacity="0.8" stroke="%s"`, col, col), "white"
		if le.unsure {
			class, style, text = "lease unsure", fmt.Sprintf(`fill="%s" fill-opacity="0.18" stroke="%s" stroke-dasharray="4 2"`, col, col), "#222"
		}
		name := fmt.Sprintf("c%d", le.client)
		if le.fence > 0 {
			name += fmt.Sprintf(" f%d", le.fence)
		}
		if multiKey {
			name += " " + le.key
		}
		end := "until " + secs(le.end())
		if le.end() >= never {
			end = "to the end"
		}
		c.p(`<g class="%s" data-client="%d"><title>%s held %s for client %d (process %d%s) from %s %s: %s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" %s clip-path="url(#plot)"/>`,
			class, le.client, esc(l.name), esc(le.key), le.client, le.process, fenceText(le.fence), secs(le.start), end, esc(le.why), x0, by, math.Max(x1-x0, 1), barH, style)
		if x1-x0 > textWidth(name)+4 {
			c.p(`<text x="%.1f" y="%.1f" font-size="10" fill="%s" clip-path="url(#plot)">%s</text>`, math.Max(x0, plotL)+3, by+barH-2.5, text, esc(name))
		}
		c.p("</g>\n")
	}
	for _, mk := range l.marks {
		x := c.x(mk.at)
		c.p(`<line class="jump" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="4 2"><title>%s</title></line>`+"\n", x, x, y+4, y+h-4, faultColour, esc(mk.title))
		if mk.label != "" {
			ls = append(ls, label{0, x + 3, mk.label, faultColour})
		}
	}
	c.labels(y, ls)
	c.p("</g>\n")
	return y + h
}

func fenceText(f int64) string {
	if f > 0 {
		return fmt.Sprintf(", fence %d", f)
	}
	return ""
}

func (c *canvas) storeLane(m *model, y float64) float64 {
	h := laneHeight(1)
	c.p(`<g class="lane store">` + "\n")
	ls := c.laneFrame("store", "#222", y, h, m.store.faults)
	ls = append(ls, c.marks(m.store.marks, y+2*textRow+6, y+h-4, "#222")...)
	c.labels(y, ls)
	c.p("</g>\n")
	return y + h
}

// violations draws a band over every lane for each placed violation and its marker.
func (c *canvas) violations(m *model, top, bottom float64) {
	if len(m.violations) == 0 {
		return
	}
	c.p(`<g class="violation">` + "\n")
	for i := len(m.violations) - 1; i >= 0; i-- { // the first drawn last, on top
		v := m.violations[i]
		if !v.placed || v.to < c.view.from || v.from > c.view.to {
			continue
		}
		x0, x1 := c.x(v.from), c.x(v.to)
		opacity, class := 0.08, "band"
		if v.n == 1 {
			opacity, class = 0.15, "band first"
		}
		title := fmt.Sprintf("%s %s violated %s–%s: %s", v.prop.Property, v.prop.Property.Name(), secs(v.from), secs(v.to), v.prop.Explanation)
		c.p(`<rect class="%s" data-property="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%.2f" stroke="%s" stroke-opacity="0.6"><title>%s</title></rect>`+"\n",
			class, v.prop.Property, x0, top, math.Max(x1-x0, 4), bottom-top, failColour, opacity, failColour, esc(title))
		c.p(`<g class="marker"><title>%s</title><circle cx="%.1f" cy="%.1f" r="8" fill="%s"/><text x="%.1f" y="%.1f" fill="white" font-weight="bold" text-anchor="middle">%d</text></g>`+"\n",
			esc(title), x0, top-10, failColour, x0, top-6, v.n)
	}
	c.p("</g>\n")
}

// axis draws ticks in seconds since the base and the crop lines; it returns the y below.
func (c *canvas) axis(m *model, top, y float64) float64 {
	c.p(`<g class="axis">` + "\n")
	c.p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", plotL, plotR, y, y)
	step := niceStep(c.view.to - c.view.from)
	for t := (c.view.from + step - 1) / step * step; t <= c.view.to; t += step {
		x := c.x(t)
		c.p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/><text x="%.1f" y="%.1f" text-anchor="middle" fill="#333">%s</text>`+"\n",
			x, x, y, y+5, x, y+17, tickText(t, step))
	}
	c.p(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#666">seconds</text>`+"\n", plotL-14, y+17)
	c.p("</g>\n")
	y += 34
	omitted := m.omitted.lines()
	if m.before != nil || m.after != nil || len(omitted) > 0 {
		c.p(`<g class="crop">` + "\n")
		for _, s := range []struct {
			sum  *summary
			x    float64
			text string
		}{{m.before, plotL, "◀ "}, {m.after, plotR, "▶ "}} {
			if s.sum == nil {
				continue
			}
			c.p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="2 3"/>`+"\n", s.x, s.x, top-18, y-34)
			c.p(`<text x="16" y="%.1f" fill="#555">%s</text>`+"\n", y, esc(s.text+s.sum.String()))
			y += 16
		}
		for _, line := range omitted {
			c.p(`<text class="omitted" x="16" y="%.1f" fill="#555">%s</text>`+"\n", y, esc(line))
			y += 16
		}
		c.p("</g>\n")
	}
	return y
}

// niceStep is a tick step of 1, 2 or 5 times a power of ten giving about ten ticks.
func niceStep(d int64) int64 {
	step := int64(1000)
	for {
		for _, k := range []int64{1, 2, 5} {
			if d/(step*k) <= 12 {
				return step * k
			}
		}
		step *= 10
	}
}

func tickText(t, step int64) string {
	digits := 0
	for s := int64(1e9); s > step && digits < 6; s /= 10 {
		digits++
	}
	return fmt.Sprintf("%.*f", digits, float64(t)/1e9)
}

type captionText struct {
	text, colour string
	first        bool
}

func captionTexts(m *model) []captionText {
	var out []captionText
	for _, v := range m.violations {
		where := fmt.Sprintf("%s–%s", secs(v.from), secs(v.to))
		if !v.placed {
			where = "span not recorded"
		}
		out = append(out, captionText{fmt.Sprintf("%d  %s %s (%s): %s", v.n, v.prop.Property, v.prop.Property.Name(), where, v.prop.Explanation), "#333", v.n == 1})
	}
	for _, p := range m.result.Properties {
		if p.Verdict == linearizability.Unknown {
			out = append(out, captionText{fmt.Sprintf("%s %s unknown: %s", p.Property, p.Property.Name(), p.Explanation), unknownColour, false})
		}
	}
	return out
}

func (c *canvas) caption(m *model, y float64) float64 {
	texts := captionTexts(m)
	if len(texts) == 0 {
		return y
	}
	c.p(`<g class="caption">` + "\n")
	y += 8
	for _, t := range texts {
		col, weight := t.colour, "normal"
		if t.first {
			col, weight = failColour, "bold"
		}
		for _, line := range wrap(t.text, captionWidth) {
			y += 15
			c.p(`<text x="16" y="%.1f" fill="%s" font-weight="%s">%s</text>`+"\n", y, col, weight, esc(line))
		}
	}
	c.p("</g>\n")
	return y
}

// wrap breaks s into lines of at most n characters at spaces.
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > n {
			lines = append(lines, line)
			line = "    " + w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

func (c *canvas) legend(m *model, y float64) float64 {
	y += 14
	c.p(`<g class="legend">` + "\n")
	x := 16.0
	item := func(attrs, text string) {
		c.p(`<rect x="%.1f" y="%.1f" width="22" height="11" %s/>`+"\n", x, y, attrs)
		c.p(`<text x="%.1f" y="%.1f" fill="#333">%s</text>`+"\n", x+28, y+10, esc(text))
		x += 28 + textWidth(text) + 18
	}
	// Beliefs and leases are drawn in their client's colour: client 0's stands for any.
	client := colour(0)
	item(fmt.Sprintf(`fill="%s" fill-opacity="0.28" stroke="%s"`, client, client), "belief (client thinks it holds the lock)")
	item(fmt.Sprintf(`fill="%s" fill-opacity="0.8"`, client), "lease on the server")
	item(fmt.Sprintf(`fill="url(#hatch-danger)" stroke="%s"`, failColour), "danger: believed, not held")
	item(fmt.Sprintf(`fill="%s" stroke="#222" stroke-width="0.5"`, okColour), "write accepted ✓")
	item(fmt.Sprintf(`fill="%s" stroke="#222" stroke-width="0.5"`, failColour), "refused ✗")
	y += 18
	x = 16
	item(fmt.Sprintf(`fill="%s" stroke="#222" stroke-width="0.5"`, unknownColour), "outcome unknown ?")
	item(fmt.Sprintf(`fill="url(#hatch-fault)" stroke="%s" stroke-width="0.5"`, faultColour), "fault")
	item(fmt.Sprintf(`fill="%s" fill-opacity="0.15" stroke="%s"`, failColour, failColour), "first violation")
	item(fmt.Sprintf(`fill="%s" fill-opacity="0.18" stroke="%s" stroke-dasharray="4 2"`, client, client), "lease, servers not recorded")
	for _, n := range m.notes {
		y += 15
		c.p(`<text x="16" y="%.1f" fill="#555">%s</text>`+"\n", y+10, esc("• "+n))
	}
	c.p("</g>\n")
	return y + 14
}

// captionWidth is the caption's line length in characters.
const captionWidth = 172

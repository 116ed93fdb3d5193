package timeline

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// minMeaningDistance is how far (CIE76 ΔE in L*a*b*) a client's colour must stay from
// every colour the legend gives a meaning to. Client 1's old orange was 9 from "outcome
// unknown": the same colour to the eye in a 12 px bar. At 40 two colours are different
// hues or very different shades at a glance.
const minMeaningDistance = 40

// TestClientColoursMeanNothing: no client is drawn in (or near) a colour the legend or
// the verdicts give a meaning to, read from a picture as drawn: every swatch of the
// legend but those that show a client's colour (beliefs and leases), the patterns they
// fill with, and the verdict colours of the header and captions.
func TestClientColoursMeanNothing(t *testing.T) {
	svg := renderString(t, pausePastTTL())
	meanings := map[string]string{
		okColour: "verdict ok", failColour: "verdict ILLEGAL", unknownColour: "verdict unknown", faultColour: "fault",
	}
	legend := between(t, svg, `<g class="legend">`, "</g>")
	swatch := regexp.MustCompile(`<rect [^>]*/>\n<text [^>]*>([^<]*)</text>`)
	items := swatch.FindAllStringSubmatch(legend, -1)
	if len(items) < 8 {
		t.Fatalf("found %d legend items, want the 9 the legend draws:\n%s", len(items), legend)
	}
	clientItems := 0
	for _, it := range items {
		rect, text := it[0], it[1]
		if strings.HasPrefix(text, "belief") || strings.HasPrefix(text, "lease") {
			clientItems++
			for _, c := range colours(rect) {
				if c != colour(0) {
					t.Errorf("legend item %q shows %s, not client 0's colour %s", text, c, colour(0))
				}
			}
			continue
		}
		// The thin dark outline of a mark swatch is the marks' frame, not a meaning.
		rect = strings.ReplaceAll(rect, `stroke="#222"`, "")
		for _, c := range colours(rect) {
			meanings[c] = text
		}
		if m := regexp.MustCompile(`url\(#([a-z-]+)\)`).FindStringSubmatch(rect); m != nil {
			for _, c := range colours(between(t, svg, `<pattern id="`+m[1]+`"`, "</pattern>")) {
				meanings[c] = text + " (its pattern)"
			}
		}
	}
	if clientItems != 3 {
		t.Errorf("%d legend items in a client's colour, want 3 (belief, lease, lease not recorded)", clientItems)
	}
	for i, c := range palette {
		if j := slices.Index(palette[:], c); j != i {
			t.Errorf("clients %d and %d share colour %s", j, i, c)
		}
		for m, what := range meanings {
			if d := deltaE(t, c, m); d < minMeaningDistance {
				t.Errorf("client %d's colour %s is %.0f from %s, the legend's %q (want at least %d)", i, c, d, m, what, minMeaningDistance)
			}
		}
	}
}

// between is the text of s from the first start to the end that follows it.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("the picture has no %s", start)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("the picture's %s has no %s", start, end)
	}
	return s[i : i+j]
}

// colours are the #rrggbb colours of fill and stroke attributes in s.
func colours(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?:fill|stroke)="(#[0-9a-fA-F]{6})"`).FindAllStringSubmatch(s, -1) {
		out = append(out, strings.ToLower(m[1]))
	}
	return out
}

// deltaE is the CIE76 distance between two #rrggbb colours in L*a*b* (D65).
func deltaE(t *testing.T, a, b string) float64 {
	la, lb := lab(t, a), lab(t, b)
	return math.Sqrt((la[0]-lb[0])*(la[0]-lb[0]) + (la[1]-lb[1])*(la[1]-lb[1]) + (la[2]-lb[2])*(la[2]-lb[2]))
}

func lab(t *testing.T, hex string) [3]float64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil || len(hex) != 7 {
		t.Fatalf("colour %q: want #rrggbb", hex)
	}
	lin := func(c uint64) float64 { // sRGB to linear light
		f := float64(c) / 255
		if f <= 0.04045 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	r, g, b := lin(v>>16&0xff), lin(v>>8&0xff), lin(v&0xff)
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(v float64) float64 {
		if v > 0.008856 {
			return math.Cbrt(v)
		}
		return 7.787*v + 16.0/116
	}
	return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
}

package benchstat

import "testing"

func TestMedianIQR(t *testing.T) {
	for _, c := range []struct {
		xs          []float64
		median, iqr float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 3, 0},
		{[]float64{4, 1, 3, 2}, 2.5, 2},
		{[]float64{5, 1, 4, 2, 3, 100, 0, 6}, 3.5, 4},
	} {
		if m := Median(c.xs); m != c.median {
			t.Errorf("Median(%v) = %v, want %v", c.xs, m, c.median)
		}
		if q := IQR(c.xs); q != c.iqr {
			t.Errorf("IQR(%v) = %v, want %v", c.xs, q, c.iqr)
		}
	}
}

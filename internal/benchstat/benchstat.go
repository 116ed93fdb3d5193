// Package benchstat summarises the rounds of a benchmark that measures a ratio by
// interleaved pairs: the median says what the ratio is, the interquartile range how far
// the rounds strayed, so that a goal is read with its spread beside it.
package benchstat

import "slices"

// Median of xs; 0 for none.
func Median(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	n := len(xs)
	switch {
	case n == 0:
		return 0
	case n%2 == 0:
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[n/2]
}

// IQR is the distance between the first and third quartiles of xs (nearest rank); 0 for
// none.
func IQR(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	if len(xs) == 0 {
		return 0
	}
	q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	return q(0.75) - q(0.25)
}

package releases

import (
	"slices"
	"testing"
)

func TestCompareVersions(t *testing.T) {
	sorted := []string{"v1.0.0-alpha", "v1.0.0-alpha.1", "v1.0.0-alpha.beta", "v1.0.0-beta.2", "v1.0.0-beta.11", "v1.0.0-rc.1", "v1.0.0", "v1.0.1", "v1.2.0", "v1.10.0", "v2.0.0"}
	got := slices.Clone(sorted)
	slices.Reverse(got)
	slices.SortFunc(got, CompareVersions)
	if !slices.Equal(got, sorted) {
		t.Errorf("sorted %v, want %v", got, sorted)
	}
	if CompareVersions("4.0.0", "3.1.2") <= 0 || CompareVersions("v4.12.0", "v4.12.1") >= 0 {
		t.Error("npm and Go versions compare numerically")
	}
}

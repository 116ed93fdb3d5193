package releases

import (
	"cmp"
	"strconv"
	"strings"
)

// CompareVersions orders two versions as semantic versions ("v1.2.3", "1.2.3-beta.1"): by
// major, minor and patch, a pre-release before its release, pre-releases by their dot
// parts (numbers numerically, below words); build metadata is ignored.
func CompareVersions(a, b string) int {
	pa, pb := parseVersion(a), parseVersion(b)
	for k := range 3 {
		if c := cmp.Compare(pa.nums[k], pb.nums[k]); c != 0 {
			return c
		}
	}
	switch {
	case pa.pre == "" && pb.pre == "":
		return strings.Compare(a, b)
	case pa.pre == "":
		return 1
	case pb.pre == "":
		return -1
	}
	x, y := strings.Split(pa.pre, "."), strings.Split(pb.pre, ".")
	for k := 0; k < len(x) && k < len(y); k++ {
		nx, ex := strconv.Atoi(x[k])
		ny, ey := strconv.Atoi(y[k])
		switch {
		case ex == nil && ey == nil:
			if c := cmp.Compare(nx, ny); c != 0 {
				return c
			}
		case ex == nil:
			return -1
		case ey == nil:
			return 1
		default:
			if c := strings.Compare(x[k], y[k]); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(x), len(y))
}

type semVersion struct {
	nums [3]int
	pre  string
}

func parseVersion(v string) semVersion {
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	v, pre, _ := strings.Cut(v, "-")
	var out semVersion
	for k, f := range strings.SplitN(v, ".", 3) {
		out.nums[k], _ = strconv.Atoi(f)
	}
	out.pre = pre
	return out
}

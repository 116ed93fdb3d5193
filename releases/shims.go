package releases

import (
	"fmt"
)

// A Shim is how locklab-lockserve is built against a range of a Go library's releases
// whose API differs from the pinned one's: with build tags that choose a variant of the
// library's adapter (lockimpl/libs), or not at all, Refuse saying why. A release in no
// range is built as the pinned one is, with no tag.
type Shim struct {
	Impl     string
	From, To string   // the range: From ≤ version < To, "" leaving that end open
	Tags     []string // go build -tags
	Refuse   string   // no variant covers the range: the API difference, for the error
}

// Shims is the table, per library, oldest range first.
func Shims() []Shim {
	const withValue = "WithValue, by which locklab's adapter releases and extends a lease from its token, arrived with v4.2.0"
	return []Shim{
		{Impl: "redsync", To: "v4.0.3", Refuse: "v4.0.0 – v4.0.2 pass a context to every command of their redis.Conn, and " + withValue},
		{Impl: "redsync", From: "v4.0.3", To: "v4.2.0", Refuse: withValue},
		// No typed errors (v4.7.0), no Until and no ErrExtendFailed before v4.4.0, no
		// go-redis v9 pool: lockimpl/libs/redsync_v4pre7.go.
		{Impl: "redsync", From: "v4.2.0", To: "v4.7.0", Tags: []string{"redsync_v4pre7"}},
		// No ErrLockAlreadyExpired or WithSetNXOnExtend (v4.12.0), no pool on
		// github.com/redis/go-redis/v9 before v4.8.0: lockimpl/libs/redsync_v4pre12.go.
		{Impl: "redsync", From: "v4.7.0", To: "v4.12.0", Tags: []string{"redsync_v4pre12"}},
	}
}

// GoTags are the build tags of lib's adapter for version (none for the pinned API), or
// an error naming the API difference when no variant of the adapter covers it.
func GoTags(lib Library, version string) ([]string, error) {
	for _, s := range Shims() {
		if s.Impl != lib.Impl || (s.From != "" && CompareVersions(version, s.From) < 0) || (s.To != "" && CompareVersions(version, s.To) >= 0) {
			continue
		}
		if s.Refuse != "" {
			return nil, fmt.Errorf("locklab's adapter has no variant for %s %s (%s): %s", lib.Package, version, s.span(), s.Refuse)
		}
		return s.Tags, nil
	}
	return nil, nil
}

// span is the range as people write it.
func (s Shim) span() string {
	switch {
	case s.From == "":
		return "before " + s.To
	case s.To == "":
		return s.From + " and later"
	}
	return s.From + " up to " + s.To
}

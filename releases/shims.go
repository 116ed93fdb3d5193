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

// A Limit is a range of a library's releases that cannot run where its implementation
// runs at the pinned release: the release's Impl drops the capability, so that a plan
// that asks for it is refused when it is read and campaigns never draw it, and the
// client's own refusal at start stays the last guard.
type Limit struct {
	Impl      string
	From, To  string // as a Shim's range
	NoCluster string // why the range cannot run on a Redis Cluster ("": it can)
}

// Limits is the table, per library.
func Limits() []Limit {
	return []Limit{
		{Impl: "redis-semaphore-mutex", To: "5.6.0", NoCluster: "up to 5.5.1 Mutex takes only a plain ioredis client (instanceof Redis), not ioredis's cluster client"},
	}
}

// limitsOf are the limits of impl's release version.
func limitsOf(impl, version string) []Limit {
	var out []Limit
	for _, l := range Limits() {
		if l.Impl == impl && inRange(version, l.From, l.To) {
			out = append(out, l)
		}
	}
	return out
}

// inRange reports whether from ≤ version < to, "" leaving that end open.
func inRange(version, from, to string) bool {
	return (from == "" || CompareVersions(version, from) >= 0) && (to == "" || CompareVersions(version, to) < 0)
}

// GoTags are the build tags of lib's adapter for version (none for the pinned API), or
// an error naming the API difference when no variant of the adapter covers it.
func GoTags(lib Library, version string) ([]string, error) {
	for _, s := range Shims() {
		if s.Impl != lib.Impl || !inRange(version, s.From, s.To) {
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

// Package rapidshrink drives rapid's shrinker outside `go test`: a campaign shrinks a
// failing plan with the same generator that drew it. rapid reads its configuration from
// process-wide flags, so this package owns them: it sets them for one shrink and puts
// them back, one shrink at a time in a process. It imports nothing of locklab's.
package rapidshrink

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// flagsMu serialises shrinks, and keeps draws (Example) out of them: rapid's flags are
// process-wide state, so the lock that guards them must be too. A draw reads them
// (rapid's Example looks at its seed flag even when given a seed).
var flagsMu sync.RWMutex

// Example is gen.Example(seed), kept out of a shrink's change of rapid's flags: a
// campaign draws plans while another search of the same process shrinks.
func Example[T any](gen *rapid.Generator[T], seed int) T {
	flagsMu.RLock()
	defer flagsMu.RUnlock()
	return gen.Example(seed)
}

// Shrink runs rapid.Check on gen with seed, whose first draw is gen.Example(seed), with a
// property that fails when fails says so, and lets rapid shrink the draws of a failure
// for up to shrinkTime. It reports whether rapid found a failure; the smallest is the
// value of fails' last call that returned true (rapid replays its result last). Shrinks
// in one process run one at a time.
func Shrink[T any](gen *rapid.Generator[T], seed int, shrinkTime time.Duration, failure string, fails func(T) bool) (bool, error) {
	flagsMu.Lock()
	defer flagsMu.Unlock()
	restore, err := setRapidFlags(map[string]string{
		"rapid.checks":     "1",
		"rapid.seed":       strconv.FormatUint(uint64(seed), 10),
		"rapid.shrinktime": shrinkTime.String(),
		"rapid.nofailfile": "true",
		"rapid.failfile":   "",
	})
	if err != nil {
		return false, err
	}
	defer restore()
	tb := &shrinkTB{name: fmt.Sprintf("locklab-shrink-%d", seed)}
	check := func(t *rapid.T) {
		if fails(gen.Draw(t, "value")) {
			t.Fatal(failure)
		}
	}
	done := make(chan any, 1)
	go func() {
		// tb.FailNow ends this goroutine with runtime.Goexit, which runs this too.
		defer func() { done <- recover() }()
		rapid.Check(tb, check)
	}()
	if r := <-done; r != nil {
		return false, fmt.Errorf("rapid: %v", r)
	}
	return tb.Failed(), nil
}

// setRapidFlags sets rapid's command-line flags and returns what puts them back. rapid
// reads them from the standard flag set, and in a program that is not a test it also
// needs the testing flags registered and parsed (rapid asks testing.Short).
func setRapidFlags(values map[string]string) (func(), error) {
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil) // no arguments: cannot fail
	}
	old := map[string]string{}
	restore := func() {
		for name, v := range old {
			_ = flag.Set(name, v) // the value was read from the same flag
		}
	}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			restore()
			return nil, fmt.Errorf("rapid flag %s is not registered", name)
		}
		old[name] = f.Value.String()
		if err := f.Value.Set(v); err != nil {
			restore()
			return nil, fmt.Errorf("rapid flag %s=%s: %w", name, v, err)
		}
	}
	return restore, nil
}

// shrinkTB is the rapid.TB a shrink runs rapid.Check with. FailNow ends the calling
// goroutine, as testing.T's does: rapid.Check runs in a goroutine of its own.
type shrinkTB struct {
	name   string
	mu     sync.Mutex
	failed bool
	log    []string
}

func (t *shrinkTB) Helper()      {}
func (t *shrinkTB) Name() string { return t.name }
func (t *shrinkTB) Logf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.log) < 100 {
		t.log = append(t.log, fmt.Sprintf(format, args...))
	}
}
func (t *shrinkTB) Log(args ...any)                  { t.Logf("%s", fmt.Sprint(args...)) }
func (t *shrinkTB) Skipf(format string, args ...any) { t.Logf(format, args...); t.SkipNow() }
func (t *shrinkTB) Skip(args ...any)                 { t.Log(args...); t.SkipNow() }
func (t *shrinkTB) SkipNow()                         { runtime.Goexit() }
func (t *shrinkTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *shrinkTB) Error(args ...any)                 { t.Log(args...); t.Fail() }
func (t *shrinkTB) Fatalf(format string, args ...any) { t.Errorf(format, args...); t.FailNow() }
func (t *shrinkTB) Fatal(args ...any)                 { t.Error(args...); t.FailNow() }
func (t *shrinkTB) FailNow()                          { t.Fail(); runtime.Goexit() }
func (t *shrinkTB) Fail() {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
}
func (t *shrinkTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

package rapidshrink

import (
	"flag"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestShrinkFindsTheSmallestFailure: rapid draws gen.Example(seed) first and shrinks a
// failure to the smallest value that still fails; rapid's flags are back afterwards.
func TestShrinkFindsTheSmallestFailure(t *testing.T) {
	gen := rapid.IntRange(0, 1_000_000)
	seed := 0
	for s := 1; s < 1000; s++ {
		if gen.Example(s) >= 1000 {
			seed = s
			break
		}
	}
	before := flag.Lookup("rapid.checks").Value.String()
	var calls []int
	failed, err := Shrink(gen, seed, 10*time.Second, "too big", func(x int) bool {
		calls = append(calls, x)
		return x >= 17
	})
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	if calls[0] != gen.Example(seed) {
		t.Errorf("first draw %d, want the example %d", calls[0], gen.Example(seed))
	}
	last := -1
	for _, x := range calls {
		if x >= 17 {
			last = x
		}
	}
	if last != 17 {
		t.Errorf("smallest failing value %d, want 17 (calls %v)", last, calls)
	}
	if got := flag.Lookup("rapid.checks").Value.String(); got != before {
		t.Errorf("rapid.checks is %s after the shrink, was %s", got, before)
	}
}

// TestShrinksInOneProcessTakeTurns: two shrinks started at once each find their own
// failure, because they never share rapid's flags at the same time.
func TestShrinksInOneProcessTakeTurns(t *testing.T) {
	gen := rapid.IntRange(0, 1_000_000)
	var wg sync.WaitGroup
	var inside, most int
	var mu sync.Mutex
	for k := range 2 {
		wg.Go(func() {
			failed, err := Shrink(gen, 100+k, 5*time.Second, "big", func(x int) bool {
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				defer func() { mu.Lock(); inside--; mu.Unlock() }()
				return x > 5
			})
			if err != nil {
				t.Errorf("shrink %d: %v", k, err)
			}
			_ = failed
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d shrinks ran at once", most)
	}
}

package lockimpl_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

func TestRegistry(t *testing.T) {
	r := lockimpl.NewRegistry()
	for _, i := range lockimpl.Impls() {
		if err := r.Register(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Register(lockimpl.Impl{Name: "setnx", New: func(lockimpl.Config) (lockimpl.Locker, error) { return nil, nil }}); err == nil {
		t.Error("duplicate name registered")
	}
	if err := r.Register(lockimpl.Impl{Name: "nameless-ctor"}); err == nil {
		t.Error("implementation without constructor registered")
	}
	extra := lockimpl.Impl{Name: "extra", New: func(lockimpl.Config) (lockimpl.Locker, error) { return nil, nil }}
	if err := r.Register(extra); err != nil {
		t.Fatal(err)
	}
	if list := r.List(); list[len(list)-1].Name != "extra" {
		t.Errorf("List does not keep registration order: %v", list)
	}
	if got, err := r.Get("extra"); err != nil || got.Name != "extra" {
		t.Errorf("Get(extra) = %+v, %v", got, err)
	}
	_, err := r.Get("redlock-9000")
	if err == nil {
		t.Fatal("Get of an unknown name succeeded")
	}
	for _, s := range []string{`"redlock-9000"`, "setnx", "fenced", "check-then-set", "no-expiry", "unsafe-release", "extra"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func TestClassify(t *testing.T) {
	for err, want := range map[error]histories.Outcome{
		nil:                     histories.OK,
		lockimpl.ErrNotAcquired: histories.Fail,
		fmt.Errorf("setnx: acquire %q: %w", "k", lockimpl.ErrNotHeld): histories.Fail,
		errors.New("i/o timeout"):                                     histories.Unknown,
	} {
		if got := lockimpl.Classify(err); got != want {
			t.Errorf("Classify(%v) = %s, want %s", err, got, want)
		}
	}
}

// TestRegistryResolver: an unknown NAME@VERSION goes to the resolver once, is registered
// under that name, and is found again; a name without "@" never reaches it; its errors
// come back as they are. Lookups, registrations and listings from many goroutines at once
// are safe (go test -race).
func TestRegistryResolver(t *testing.T) {
	r := lockimpl.NewRegistry()
	for _, i := range lockimpl.Impls() {
		if err := r.Register(i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Get("setnx@1.0.0"); err == nil || !strings.Contains(err.Error(), `unknown lock implementation "setnx@1.0.0"`) {
		t.Fatalf("Get without a resolver: %v", err)
	}
	var mu sync.Mutex
	calls := map[string]int{}
	r.SetResolver(func(name string) (lockimpl.Impl, error) {
		mu.Lock()
		calls[name]++
		mu.Unlock()
		base, _, _ := strings.Cut(name, "@")
		if base == "bad" {
			return lockimpl.Impl{}, errors.New("bad@1: no such release")
		}
		if base == "renamed" {
			return lockimpl.Impl{Name: "other", New: func(lockimpl.Config) (lockimpl.Locker, error) { return nil, nil }}, nil
		}
		i, err := r.Get(base) // a resolver looks its base up: Get must not hold its lock meanwhile
		i.Name = name
		return i, err
	})
	var wg sync.WaitGroup
	for k := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := r.Get("setnx@v1"); err != nil || got.Name != "setnx@v1" {
				t.Errorf("Get(setnx@v1) = %q, %v", got.Name, err)
			}
			_ = r.List()
			if err := r.Register(lockimpl.Impl{Name: fmt.Sprintf("extra-%d", k), New: func(lockimpl.Config) (lockimpl.Locker, error) { return nil, nil }}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got, err := r.Get("setnx@v1"); err != nil || got.Name != "setnx@v1" || !got.Waits {
		t.Errorf("Get(setnx@v1) after resolution = %+v, %v", got, err)
	}
	if calls["setnx@v1"] < 1 || calls["setnx@v1"] > 16 {
		t.Errorf("resolver called %d times for setnx@v1", calls["setnx@v1"])
	}
	before := calls["setnx@v1"]
	if _, err := r.Get("setnx@v1"); err != nil || calls["setnx@v1"] != before {
		t.Errorf("a registered release was resolved again (%d calls, %v)", calls["setnx@v1"], err)
	}
	if _, err := r.Get("nope"); err == nil || calls["nope"] != 0 {
		t.Errorf("a name without @ reached the resolver: %v", err)
	}
	if _, err := r.Get("bad@1"); err == nil || err.Error() != "bad@1: no such release" {
		t.Errorf("Get(bad@1): %v", err)
	}
	if _, err := r.Get("renamed@1"); err == nil || !strings.Contains(err.Error(), `returned "other"`) {
		t.Errorf("Get(renamed@1): %v", err)
	}
	if list := r.List(); list[len(list)-1].Name != "setnx@v1" && !strings.HasPrefix(list[len(list)-1].Name, "extra-") {
		t.Errorf("List's last entry %q", list[len(list)-1].Name)
	}
}

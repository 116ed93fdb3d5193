package lockimpl_test

import (
	"errors"
	"fmt"
	"strings"
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

package lockimpl_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl"
)

func TestBuiltin(t *testing.T) {
	want := []struct {
		name, bug       string
		fencing, mutant bool
	}{
		{"setnx", "", false, false},
		{"fenced", "", true, false},
		{"check-then-set", "check-then-set", false, true},
		{"no-expiry", "no-expiry", false, true},
		{"unsafe-release", "unsafe-release", false, true},
	}
	got := lockimpl.Builtin().List()
	if len(got) != len(want) {
		t.Fatalf("Builtin lists %d implementations, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Bug != w.bug || g.Fencing != w.fencing || g.Mutant != w.mutant ||
			g.Topology != "single" || g.Description == "" || g.New == nil {
			t.Errorf("implementation %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := lockimpl.Builtin()
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
	if len(lockimpl.Builtin().List()) != 5 {
		t.Error("Builtin shares state between calls")
	}
}

func TestConfigNeedsOneAddress(t *testing.T) {
	for _, impl := range lockimpl.Builtin().List() {
		for _, addrs := range [][]string{nil, {"127.0.0.1:1", "127.0.0.1:2"}} {
			if l, err := impl.New(lockimpl.Config{Addrs: addrs}); err == nil {
				l.Close()
				t.Errorf("%s with %d addresses: no error", impl.Name, len(addrs))
			}
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

func TestNetworkErrorIsUnknown(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, impl := range lockimpl.Builtin().List() {
		t.Run(impl.Name, func(t *testing.T) {
			l, err := impl.New(lockimpl.Config{Addrs: []string{addr}, Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			_, err = l.Acquire(ctx, "k", time.Second)
			if err == nil || lockimpl.Classify(err) != histories.Unknown {
				t.Fatalf("Acquire on a closed port: %v (%s); want unknown", err, lockimpl.Classify(err))
			}
			lease := lockimpl.Lease{Key: "k", Token: "t"}
			if err := l.Release(ctx, lease); lockimpl.Classify(err) != histories.Unknown {
				t.Fatalf("Release on a closed port: %v; want unknown", err)
			}
			if _, err := l.Extend(ctx, lease, time.Second); lockimpl.Classify(err) != histories.Unknown {
				t.Fatalf("Extend on a closed port: %v; want unknown", err)
			}
		})
	}
}

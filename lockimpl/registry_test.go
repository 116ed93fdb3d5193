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
		name, bug, topology string
		fencing, mutant     bool
	}{
		{"setnx", "", "single", false, false},
		{"fenced", "", "single", true, false},
		{"check-then-set", "check-then-set", "single", false, true},
		{"no-expiry", "no-expiry", "single", false, true},
		{"unsafe-release", "unsafe-release", "single", false, true},
		{"redlock", "", "nodes", false, false},
		{"watchdog", "", "single", false, false},
		{"redsync", "", "nodes", false, false},
		{"redislock", "", "single", false, false},
		{"rueidislock", "", "single", false, false},
		{"node-ioredis", "", "single", false, false},
	}
	got := lockimpl.Builtin().List()
	if len(got) != len(want) {
		t.Fatalf("Builtin lists %d implementations, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Bug != w.bug || g.Fencing != w.fencing || g.Mutant != w.mutant ||
			g.Topology != w.topology || g.Description == "" || g.New == nil {
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
	if len(lockimpl.Builtin().List()) != len(r.List())-1 {
		t.Error("Builtin shares state between calls")
	}
}

func TestConfigNeedsOneAddress(t *testing.T) {
	for _, impl := range lockimpl.Builtin().List() {
		cases := [][]string{nil, {"127.0.0.1:1", "127.0.0.1:2"}}
		if impl.Topology == "nodes" {
			cases = cases[:1] // N independent nodes: any N ≥ 1
		}
		for _, addrs := range cases {
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
			// A lease this client never granted: stateless locks send the command and cannot
			// know (unknown); adapters that keep the library's per-lease object know it is not
			// theirs without asking (fail). Never ok. Their server-killed tests cover unknown.
			lease := lockimpl.Lease{Key: "k", Token: "t"}
			if err := l.Release(ctx, lease); err == nil {
				t.Fatal("Release on a closed port: ok")
			}
			if _, err := l.Extend(ctx, lease, time.Second); err == nil {
				t.Fatal("Extend on a closed port: ok")
			}
		})
	}
}

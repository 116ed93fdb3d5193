package lockimpl

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Impl describes one implementation in the registry.
type Impl struct {
	Name, Description string
	Fencing           bool     // grants fencing tokens (Lease.Fence > 0)
	Topology          string   // topology kind it needs (cluster's Topology.Kind); see RunsOn
	Mutant            bool     // deliberately broken
	Bug               string   // for mutants: the bug class id from docs/design.md
	Steps             []string // step names it passes to Config.Step, where client faults can strike
	// NoExtend: its Extend always answers ErrUnsupported without sending anything (a lock
	// that renews by itself, for one).
	NoExtend bool
	// Renews: it keeps its leases alive in the background (a watchdog, a session's
	// keepalive, a library's refresh), recording no extends: a picture of the run cannot
	// take a lease's end from its TTL.
	Renews bool
	// Process: each client runs as a process of its own (a subprocess client), which a
	// stop-the-world pause (client-pause mode process) and a client clock under
	// libfaketime (plan client_clock) can reach.
	Process bool
	// Waits: it takes Config.Wait (Redis WAIT after each grant and extension).
	Waits bool
	// Cluster: it also runs on a Redis Cluster, through a cluster client (Config.Cluster);
	// a fencing lock keeps its fence counter in its lock key's hash slot.
	Cluster bool
	// Options are the library's settings a plan may choose (impl_options); Config.Options
	// holds their values.
	Options []Option
	New     func(Config) (Locker, error)
}

// RunsOn reports whether the implementation runs on a topology of kind (cluster's
// Topology.Kind): its own kind, and for a single-instance lock ("single": one primary
// at a time) also "replicated", whose clients follow the one primary through Sentinel,
// and "cluster" when it takes a cluster client (Cluster).
func (i Impl) RunsOn(kind string) bool {
	return kind == i.Topology || (i.Topology == "single" && kind == "replicated") || (i.Cluster && kind == "cluster")
}

// Registry holds implementations by name, in registration order. It is safe for
// concurrent use: matrices and campaigns look implementations up from goroutines, and a
// lookup may register one (SetResolver).
type Registry struct {
	mu      sync.Mutex
	impls   []Impl
	index   map[string]int
	resolve func(name string) (Impl, error)
}

// NewRegistry is an empty registry.
func NewRegistry() *Registry { return &Registry{index: map[string]int{}} }

// Impls are locklab's own implementations, in registration order: the correct
// single-instance locks, the mutants, then the multi-node and renewing locks. The
// registry of every implementation locklab ships (these, the third-party adapters of
// lockimpl/libs, the subprocess clients of lockimpl/subprocess) is locks.All.
func Impls() []Impl {
	var all []Impl
	all = append(all, singleImpls()...)
	all = append(all, mutantImpls()...)
	all = append(all, redlockImpls()...)
	all = append(all, watchdogImpls()...)
	return all
}

// singleImpls are the correct single-instance locks.
func singleImpls() []Impl {
	return []Impl{
		{
			Name:        "setnx",
			Description: "single instance: SET NX PX with a random token; release and extend check the token (Lua)",
			Topology:    "single",
			Steps:       []string{StepGranted},
			Waits:       true,
			Cluster:     true,
			New:         newSetNX,
		},
		{
			Name:        "fenced",
			Description: "setnx plus a fencing token: INCR of a per-key counter in the same Lua script as SET NX PX",
			Fencing:     true,
			Topology:    "single",
			Steps:       []string{StepGranted},
			Waits:       true,
			Cluster:     true,
			New:         newFenced,
		},
	}
}

// mutantImpls are the deliberately broken locks, one per bug class of docs/design.md.
func mutantImpls() []Impl {
	return []Impl{
		{
			Name:        "check-then-set",
			Description: "mutant: GET, then SET PX in a second command; two clients can both see the lock free",
			Topology:    "single",
			Mutant:      true,
			Bug:         "check-then-set",
			Steps:       []string{StepAfterGet, StepGranted},
			New:         newCheckThenSet,
		},
		{
			Name:        "no-expiry",
			Description: "mutant: SETNX, then PEXPIRE in a second command; a crash in between leaves a lock that never expires",
			Topology:    "single",
			Mutant:      true,
			Bug:         "no-expiry",
			Steps:       []string{StepAfterSetNX, StepGranted},
			New:         newNoExpiry,
		},
		{
			Name:        "unsafe-release",
			Description: "mutant: acquires like setnx but releases with a plain DEL, deleting whoever holds the lock now",
			Topology:    "single",
			Mutant:      true,
			Bug:         "unsafe-release",
			Steps:       []string{StepGranted},
			New:         newUnsafeRelease,
		},
		{
			Name:        "unsafe-extend",
			Description: "mutant: acquires like setnx but extends with a plain PEXPIRE, renewing whoever holds the lock now and answering ok",
			Topology:    "single",
			Mutant:      true,
			Bug:         "unsafe-extend",
			Steps:       []string{StepGranted},
			New:         newUnsafeExtend,
		},
	}
}

// SetResolver has Get resolve an unknown NAME@VERSION (a release of the library an
// implementation runs) with resolve and register what it returns under that name;
// resolve may take long (a build) and may call Get itself. nil turns resolution off.
func (r *Registry) SetResolver(resolve func(name string) (Impl, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve = resolve
}

// Register adds i; its name must be new and it must have a constructor.
func (r *Registry) Register(i Impl) error {
	switch {
	case i.Name == "":
		return fmt.Errorf("register lock implementation: empty name")
	case i.New == nil:
		return fmt.Errorf("register lock implementation %q: no constructor", i.Name)
	}
	for _, o := range i.Options {
		if err := o.Validate(); err != nil {
			return fmt.Errorf("register lock implementation %q: %w", i.Name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.index[i.Name]; dup {
		return fmt.Errorf("register lock implementation %q: name already registered", i.Name)
	}
	r.index[i.Name] = len(r.impls)
	r.impls = append(r.impls, i)
	return nil
}

// Get finds an implementation by name; an unknown NAME@VERSION goes to the resolver
// (SetResolver), if any, and what it returns is registered under that name.
func (r *Registry) Get(name string) (Impl, error) {
	r.mu.Lock()
	if k, ok := r.index[name]; ok {
		i := r.impls[k]
		r.mu.Unlock()
		return i, nil
	}
	resolve := r.resolve
	r.mu.Unlock()
	if resolve == nil || !strings.Contains(name, "@") {
		return Impl{}, r.unknown(name)
	}
	// Resolved without the lock: a build takes minutes, and the resolver looks the base
	// implementation up here. Two goroutines may resolve the same name at once; the first
	// to register wins and the other gets its Impl.
	i, err := resolve(name)
	if err != nil {
		return Impl{}, err
	}
	if i.Name != name {
		return Impl{}, fmt.Errorf("lock implementation %q: the resolver returned %q", name, i.Name)
	}
	if err := r.Register(i); err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if k, ok := r.index[name]; ok {
			return r.impls[k], nil
		}
		return Impl{}, err
	}
	return i, nil
}

// unknown is Get's error for a name it does not know, listing the names it knows.
func (r *Registry) unknown(name string) error {
	r.mu.Lock()
	names := make([]string, len(r.impls))
	for k, i := range r.impls {
		names[k] = i.Name
	}
	r.mu.Unlock()
	sort.Strings(names)
	return fmt.Errorf("unknown lock implementation %q (known: %s)", name, strings.Join(names, ", "))
}

// List is every implementation, in registration order (resolved releases included).
func (r *Registry) List() []Impl {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Impl(nil), r.impls...)
}

package subprocess

import (
	"context"
	"errors"
	"fmt"

	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/lockimpl"
)

// Hello is what a client says of itself in its hello line.
type Hello struct {
	Name    string `json:"name"`
	Fencing bool   `json:"fencing"`
	Extend  bool   `json:"extend"`
	// Topology is the topology the client says it runs on (its hello's "topology"), "" when
	// it does not say.
	Topology string `json:"topology,omitempty"`
	// Options are the settings the client declared (its hello's "options").
	Options []lockimpl.Option `json:"-"`
}

// Describe starts the client argv once with cfg's servers, reads its hello and stops it:
// how a client known only by its command is registered (its hello says whether it
// fences and extends). The client may connect to cfg's servers while it starts.
func Describe(ctx context.Context, argv []string, topology string, cfg lockimpl.Config) (Hello, error) {
	if len(argv) == 0 || argv[0] == "" {
		return Hello{}, errors.New("no client command")
	}
	cfg = cfg.WithDefaults()
	env, err := subprocessEnv(cfg, topology)
	if err == nil {
		env, err = withAccess(env, cfg) // also drops the access variables locklab inherited
	}
	if err != nil {
		return Hello{}, err
	}
	p, err := spawnClient(argv, env, nil, scrubberOf(cfg))
	if err != nil {
		return Hello{}, err
	}
	h, _, herr := readHello(ctx, p, cfg.Timeout+helloMargin)
	killErr := p.kill()
	if herr != nil {
		return Hello{}, fmt.Errorf("client %q: %w%s%s", access.RedactCommand(argv), herr, p.exitNote(), p.stderr.quote())
	}
	if killErr != nil {
		return Hello{}, killErr
	}
	out := Hello{Name: h.Name, Fencing: *h.Fencing, Extend: h.extends(), Topology: h.Topology}
	for k, w := range h.Options {
		o, err := w.Option()
		if err != nil {
			return Hello{}, fmt.Errorf("client %q: hello options[%d]: %w", access.RedactCommand(argv), k, err)
		}
		out.Options = append(out.Options, o)
	}
	return out, nil
}

// SubprocessOn is Subprocess on a topology: "single" (one server, or the primary through
// Sentinel), "nodes" (N independent servers, every address given), "etcd" (the members
// of an etcd cluster, every address given) or "zookeeper" (the members of a ZooKeeper
// ensemble, every address given).
func SubprocessOn(topology, name, description string, argv []string, fencing bool) (lockimpl.Impl, error) {
	if topology != topologySingle && !everyAddress(topology) {
		return lockimpl.Impl{}, fmt.Errorf("topology %q: a subprocess client runs on %s, %s, %s or %s", topology, topologySingle, topologyNodes, topologyEtcd, topologyZooKeeper)
	}
	argv = append([]string(nil), argv...)
	return subprocessOn(topology, name, description, fencing, func() ([]string, error) {
		if len(argv) == 0 || argv[0] == "" {
			return nil, errors.New("no client command")
		}
		return argv, nil
	}), nil
}

// EnvLockserve names the locklab-lockserve binary (or its folder), which runs an
// in-process implementation as a subprocess client (OutOfProcess).
const EnvLockserve = "LOCKLAB_LOCKSERVE"

// OutOfProcess is impl run in a process of its own by locklab-lockserve
// (cmd/locklab-lockserve), named impl's name + "-process": the same lock, but a
// stop-the-world pause (client-pause mode process) freezes its background work (a
// watchdog's renewals) with the holder, as a long GC pause of a real process would.
func OutOfProcess(impl lockimpl.Impl) lockimpl.Impl {
	name := impl.Name + "-process"
	out := subprocessOn(impl.Topology, name,
		impl.Name+" run out of process by locklab-lockserve: a stop-the-world pause freezes its renewals with the holder",
		impl.Fencing, func() ([]string, error) {
			bin, err := findClient("Go", "bin", "locklab-lockserve", EnvLockserve, "locklab-lockserve")
			if err != nil {
				return nil, fmt.Errorf("%w (build it with make build)", err)
			}
			return []string{bin, impl.Name}, nil
		})
	out.NoExtend, out.Renews = impl.NoExtend, impl.Renews
	out.Waits = impl.Waits // locklab-lockserve reads Config.Wait from the environment
	// The same options: locklab-lockserve reads them from LOCKLAB_OPTIONS.
	out.Options = impl.Options
	return out
}

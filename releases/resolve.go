package releases

import (
	"context"
	"fmt"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/lockimpl/subprocess"
)

// Resolver resolves NAME@VERSION for reg (lockimpl.Registry.SetResolver): the release is
// prepared in the default cache (DefaultCache, read at each call) and run as NAME runs in
// reg, out of process. ctx bounds the builds.
func Resolver(ctx context.Context, reg *lockimpl.Registry) func(name string) (lockimpl.Impl, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return func(name string) (lockimpl.Impl, error) {
		impl, _, ok := Split(name)
		if !ok {
			return lockimpl.Impl{}, fmt.Errorf("%q: want NAME@VERSION", name)
		}
		base, err := reg.Get(impl)
		if err != nil {
			return lockimpl.Impl{}, fmt.Errorf("%s: %w", name, err)
		}
		cache, err := DefaultCache()
		if err != nil {
			return lockimpl.Impl{}, err
		}
		r, err := cache.Prepare(ctx, name)
		if err != nil {
			return lockimpl.Impl{}, err
		}
		return r.Impl(base)
	}
}

// Impl is base, the implementation that runs r's library at its pinned version, running
// r instead, named base's name@r.Version, without what r's range cannot do (Limits).
func (r Release) Impl(base lockimpl.Impl) (lockimpl.Impl, error) {
	out, err := r.impl(base)
	if err != nil {
		return out, err
	}
	for _, l := range limitsOf(base.Name, r.Version) {
		if l.NoCluster != "" && out.Cluster {
			out.Cluster = false
			out.Description += fmt.Sprintf(" Not on a Redis Cluster (%s).", l.NoCluster)
		}
	}
	return out, nil
}

func (r Release) impl(base lockimpl.Impl) (lockimpl.Impl, error) {
	name := base.Name + "@" + r.Version
	switch r.Ecosystem {
	case Go:
		// As subprocess.OutOfProcess runs base, with the binary built against r. Not on a
		// Redis Cluster: locklab-lockserve passes its implementation no cluster client.
		out, err := subprocess.SubprocessOn(base.Topology, name,
			fmt.Sprintf("%s %s, run out of process by a locklab-lockserve built against it; otherwise as %s: %s", r.Package, r.Version, base.Name, base.Description),
			[]string{r.Path, base.Name}, base.Fencing)
		if err != nil {
			return lockimpl.Impl{}, fmt.Errorf("%s: %w", name, err)
		}
		out.NoExtend, out.Renews, out.Waits, out.Options = base.NoExtend, base.Renews, base.Waits, base.Options
		return out, nil
	case NPM:
		out, err := subprocess.NodeRelease(base.Name, r.Version, r.Path)
		if err != nil {
			return lockimpl.Impl{}, err
		}
		out.Description = fmt.Sprintf("npm %s %s, installed in locklab's cache; otherwise as %s: %s", r.Package, r.Version, base.Name, base.Description)
		if r.Note != "" {
			out.Description = fmt.Sprintf("npm %s %s (%s), installed in locklab's cache; otherwise as %s: %s", r.Package, r.Version, r.Note, base.Name, base.Description)
		}
		return out, nil
	default:
		out := base // the very client: Debian installs one redis-py
		out.Name = name
		out.Description = fmt.Sprintf("%s, the redis-py of Debian's %s: %s", name, r.Package, base.Description)
		return out, nil
	}
}

package subprocess

import "github.com/locklab/locklab/lockimpl"

// withOptions is impl with its library's options declared (the plan's impl_options) and
// every value passed to the client: a Config built by hand (a test's) that leaves some or
// all of them out gets their defaults, so the client always reads the whole set from
// LOCKLAB_OPTIONS and the Go declaration is the one source of the defaults. (The
// clients' own defaults are the same, for running one by hand.)
func withOptions(impl lockimpl.Impl, opts ...lockimpl.Option) lockimpl.Impl {
	impl.Options = opts
	build := impl.New
	impl.New = func(cfg lockimpl.Config) (lockimpl.Locker, error) {
		full := make(lockimpl.Options, len(opts))
		for _, o := range opts {
			full[o.Name] = o.Default
		}
		for name, v := range cfg.Options {
			full[name] = v
		}
		cfg.Options = full
		return build(cfg)
	}
	return impl
}

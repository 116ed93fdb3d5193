package bisect

import (
	"context"
	"fmt"
	"io"

	lin "github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/plan"
	"github.com/locklab/locklab/runner"
)

// PlanRun is the Run of plan p on impl's releases (impl@VERSION, resolved by reg), repeat
// times each on real servers. A perturbed run (the harness stalled) counts for nothing:
// log says so.
func PlanRun(reg *lockimpl.Registry, p plan.Plan, impl string, repeat int, log io.Writer) Run {
	return func(ctx context.Context, version string) (map[lin.Property]bool, error) {
		p.Impl = impl + "@" + version
		if err := p.Validate(reg); err != nil {
			return nil, fmt.Errorf("plan for %s: %w", p.Impl, err)
		}
		broke := map[lin.Property]bool{}
		for range repeat {
			r, err := p.Resolve(reg)
			if err != nil {
				return nil, err
			}
			rep, err := runner.Run(ctx, r, runner.Options{})
			if err != nil {
				return nil, err
			}
			if rep.Perturbed != "" {
				fmt.Fprintf(log, "  %s: a perturbed run, not counted (%s)\n", p.Impl, rep.Perturbed)
				continue
			}
			for _, pr := range rep.Result.Properties {
				broke[pr.Property] = broke[pr.Property] || pr.Verdict == lin.Illegal
			}
		}
		return broke, nil
	}
}

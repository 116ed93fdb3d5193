package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
)

// pingTimeout bounds how long a healed server may take to answer.
const pingTimeout = 3 * time.Second

// VerifyHealed checks that a run's faults left nothing behind: every server answers
// (none paused or down), no link carries a toxic, no server clock is off and no client
// clock is skewed. A run calls it after Schedule.Stop; it reports everything it finds.
func VerifyHealed(ctx context.Context, env *Env) error {
	var problems []string
	for i, clk := range env.clocks {
		clk.mu.Lock()
		if clk.skewed {
			problems = append(problems, fmt.Sprintf("client %d's clock is still skewed", i))
		}
		clk.mu.Unlock()
	}
	if cl := env.Cluster; cl != nil {
		for _, n := range cl.Nodes() {
			if err := ping(ctx, n); err != nil {
				problems = append(problems, fmt.Sprintf("%s does not answer: %v", n.Name(), err))
			}
			if in, ok := n.(cluster.IsolatableNode); ok && in.Isolated() {
				problems = append(problems, fmt.Sprintf("%s is still cut off from the other servers", n.Name()))
			}
			if cn, ok := n.(cluster.ClockNode); ok && cn.FakeClock() && cn.ClockOffset() != 0 {
				problems = append(problems, fmt.Sprintf("%s's clock is still %s off", n.Name(), cn.ClockOffset()))
			}
		}
		for _, n := range cl.Sentinels {
			if in, ok := n.(cluster.IsolatableNode); ok && in.Isolated() {
				problems = append(problems, fmt.Sprintf("%s is still cut off from the other servers", n.Name()))
			}
		}
		if cl.Net != nil {
			for _, link := range cl.Net.Links() {
				toxics, err := cl.Net.Toxics(link)
				if err != nil {
					problems = append(problems, fmt.Sprintf("link %s: %v", link, err))
				} else if len(toxics) > 0 {
					problems = append(problems, fmt.Sprintf("link %s still has %s", link, strings.Join(toxics, ", ")))
				}
			}
		}
	}
	if len(problems) > 0 {
		return errors.New("faults not healed: " + strings.Join(problems, "; "))
	}
	return nil
}

func ping(ctx context.Context, n cluster.Node) error {
	return cluster.Ping(ctx, n, pingTimeout)
}

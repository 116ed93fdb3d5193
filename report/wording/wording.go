// Package wording is the phrases that several renderings of one result share (its
// Markdown, its lines in the terminal, junit.xml and its index page), so that they say it
// alike: a campaign's verdict in a word, what it decided, its space, a failure's violated
// properties, a finding under load, a detection row's cells; and text cut short.
package wording

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/campaign"
	lin "github.com/locklab/locklab/linearizability"
)

// CampaignVerdict is the campaign's verdict in a word: FAIL (a safe-configuration
// violation, or a class searched for not found), INCONCLUSIVE (too little decided by
// its thresholds) or PASS. A safe-configuration violation fails whatever was decided.
func CampaignVerdict(s *campaign.Summary) string {
	switch {
	case s.SafeViolations > 0:
		return "FAIL"
	case s.Inconclusive() != nil:
		return "INCONCLUSIVE"
	case !s.OK():
		return "FAIL"
	}
	return "PASS"
}

// Decided is how many pairs the campaign decided, and by which thresholds.
func Decided(s *campaign.Summary) string {
	c := s.Counts()
	t := fmt.Sprintf("%d %s decided (held or violated), %d undecided (a checker ran out of time), %d in perturbed runs; %d of %d runs perturbed",
		c.Decided, s.PairsName(), c.Undecided, c.Perturbed, c.PerturbedRuns, c.Runs)
	if th := s.Thresholds; th != nil {
		t += fmt.Sprintf(" (conclusive with at least %d decided and at most %v of the runs perturbed)", th.MinDecided, th.MaxPerturbed)
	}
	return t
}

// UnderLoad is a finding under load in a line: what, where, and the stall.
func UnderLoad(u *campaign.UnderLoad) string {
	t := fmt.Sprintf("%s %s fencing %s, faults %s: %s illegal under load", u.Impl, u.Topology, u.Fencing, u.Faults, lin.JoinProperties(u.Illegal, ","))
	if len(u.Safe) > 0 {
		t += fmt.Sprintf(" (%s expected to hold)", lin.JoinProperties(u.Safe, ","))
	}
	return fmt.Sprintf("%s; run `%s`; %s", t, u.Dir, Truncate(u.Stall, 300))
}

// Illegal is a failure's violated properties with what each showed, when known:
// "P1 (acquire ok while another believed), P6 (extend ok after another's grant)".
func Illegal(f *campaign.Failure, sep string) string {
	if len(f.Shows) == 0 {
		return lin.JoinProperties(f.Illegal, sep)
	}
	var parts []string
	for _, s := range f.Shows {
		prop, shape, ok := strings.Cut(s, ": ")
		if ok {
			parts = append(parts, prop+" ("+shape+")")
		} else {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// Space is a campaign's space in a line: "implementations a, b; fault kinds all; fencing
// all; faults per plan up to 3", with its calm workloads and its fixed TTL when it has them.
func Space(s campaign.Space) string {
	return fmt.Sprintf("implementations %s; fault kinds %s; fencing %s; faults per plan up to %s%s",
		OrAll(s.Impls), OrAll(s.Faults), OrAll(s.Fencings), maxFaultsText(s), calmText(s)+ttlText(s))
}

// OrAll is the names joined, or "all" for none.
func OrAll(xs []string) string {
	if len(xs) == 0 {
		return "all"
	}
	return strings.Join(xs, ", ")
}

func maxFaultsText(s campaign.Space) string {
	switch {
	case s.MaxFaults < 0 || (len(s.Faults) == 1 && s.Faults[0] == campaign.NoFaults):
		return "0"
	case s.MaxFaults == 0:
		return fmt.Sprint(campaign.DefaultMaxFaults)
	}
	return fmt.Sprint(s.MaxFaults)
}

func calmText(s campaign.Space) string {
	if s.Calm {
		return "; calm workloads only"
	}
	return ""
}

// ttlText names the space's fixed TTL, if it has one.
func ttlText(s campaign.Space) string {
	if s.TTL.D() == 0 {
		return ""
	}
	return "; ttl " + s.TTL.D().String()
}

// Truncate cuts s to n bytes, marking the cut with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

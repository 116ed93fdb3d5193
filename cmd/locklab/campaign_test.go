package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/campaign"
	"github.com/locklab/locklab/linearizability"
	"github.com/locklab/locklab/report"
)

// TestCampaignFlagErrorsNameTheFlag: bad campaign and replay input exits 2 and says which
// flag or file is wrong.
func TestCampaignFlagErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	wantRefused(t, []flagCase{
		{[]string{"campaign", "--impl", "nope", "--out", dir}, `flags --impl/--faults/--fencing/--topology/--extend: unknown lock implementation "nope"`},
		{[]string{"campaign", "--topology", "ring", "--out", dir}, `unknown topology "ring" (known: single, replicated, nodes, etcd, cluster, zookeeper)`},
		{[]string{"campaign", "--impl", "redlock", "--topology", "cluster", "--out", dir}, "redlock runs on none of the topologies cluster"},
		{[]string{"campaign", "--class", "clock-jump", "--topology", "cluster", "--out", dir}, "flag --topology: --class sets the space itself"},
		{[]string{"campaign", "--faults", "client-paws", "--out", dir}, `unknown fault kind "client-paws"`},
		{[]string{"campaign", "--fencing", "fool", "--out", dir}, `unknown fencing mode "fool"`},
		{[]string{"campaign", "--impl", "setnx", "--fencing", "full", "--out", dir}, "setnx grants no fencing tokens"},
		{[]string{"campaign", "--shard", "3/2", "--out", dir}, "flag --shard:"},
		{[]string{"campaign", "--class", "nope", "--out", dir}, `flag --class: unknown bug class "nope" (known: pause-past-ttl`},
		{[]string{"campaign", "--class", "clock-jump", "--impl", "fenced", "--out", dir}, "flag --impl: --class sets the space itself"},
		{[]string{"campaign", "--parallel", "0", "--out", dir}, "flag --parallel: want at least 1"},
		{[]string{"campaign", "--extend", "1.5", "--out", dir}, "flags --impl/--faults/--fencing/--topology/--extend: extend 1.5: want a probability from 0 to 1"},
		{[]string{"campaign", "--ttl", "100ms", "--calm", "--out", dir}, "flag --ttl: ttl 100ms: calm workloads need a ttl of at least 200ms"},
		{[]string{"campaign", "--class", "clock-jump", "--ttl", "100ms", "--out", dir}, "flag --ttl: --class sets the space itself"},
		{[]string{"campaign", "--duration", "0", "--out", dir}, "flags --duration and --max-runs"},
		{[]string{"campaign", "--confirm", "-1", "--out", dir}, "flag --confirm: must not be negative"},
		{[]string{"campaign", "merge", "--out", dir, missing}, "read summary"},
		{[]string{"campaign", "--max-perturbed", "1.5", "--out", dir}, "flag --max-perturbed: want a share from 0 to 1"},
		{[]string{"campaign", "--min-decided", "-1", "--out", dir}, "flag --min-decided: must not be negative"},
		{[]string{"campaign", "merge", "--min-decided", "-1", "--out", dir, missing}, "flag --min-decided: must not be negative"},
		{[]string{"matrix", "--max-perturbed", "-0.5", "--out", dir}, "flag --max-perturbed: want a share from 0 to 1"},
		{[]string{"detection", "--min-decided", "-2", "--out", dir}, "flag --min-decided: must not be negative"},
		{[]string{"replay", missing}, missing},
		{[]string{"replay", "--repeat", "0", missing}, "flag --repeat: want at least 1"},
		{[]string{"detection", "--claimed-pairs", "-1", "--out", dir}, "--claimed-pairs at least 0"},
		{[]string{"detection", "--seeds", "-1", "--out", dir}, "--seeds and --claimed-pairs at least 0"},
		{[]string{"detection", "--seeds", "0", "--claimed-pairs", "0", "--out", dir}, "nothing to measure"},
		{[]string{"detection", "--impl", "check-then-set", "--out", dir}, "flag --impl: check-then-set is a mutant"},
		{[]string{"detection", "--impl", "nope", "--out", dir}, `flag --impl: unknown lock implementation "nope"`},
		{[]string{"detection", "--marker", "a b", "--out", dir}, "flag --marker:"},
		{[]string{"detection", "--families", "nope", "--out", dir}, `flag --families: no rule family "nope"`},
		{[]string{"detection", "--seeds", "0", "--fault-free=false", "--out", dir}, "nothing to measure"},
		{[]string{"bench", "jobs", "--workers", "0", "--out", dir}, "flag --workers: want at least 1"},
		{[]string{"bench", "jobs", "--impl", "nope", "--out", dir}, `flag --impl: unknown lock implementation "nope"`},
		{[]string{"bench", "jobs", "--on-taken", "later", "--out", dir}, `flag --on-taken: want drop or retry`},
		{[]string{"bench", "jobs", "--stall-rate", "2", "--out", dir}, "flag --stall-rate: want a share from 0 to 1, got 2"},
		{[]string{"bench", "jobs", "--stall-after", "-1s", "--out", dir}, "flag --stall-after: must not be negative"},
		{[]string{"bench", "jobs", "--markdown", missing, "--out", dir}, "flag --markdown:"},
	})
}

// TestCampaignThenReplay: a short class search on real Redis finds the check-then-set
// mutant (exit 0: a class search succeeds when it finds its class), writes its summary
// files, and `locklab replay` re-runs the saved failure and reports how often it
// reproduced (exit 1 when it did).
func TestCampaignThenReplay(t *testing.T) {
	out := t.TempDir()
	// It stops at its first confirmed detection; up to 60 plans leave room for a loaded
	// machine, whose perturbed runs count for nothing.
	code, stdout, stderr := locklab(t, "campaign", "--class", "check-then-set", "--seed", "1", "--max-runs", "60",
		"--shrink-time", "0", "--out", out)
	if code != exitOK {
		t.Fatalf("campaign: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "class check-then-set found after") || !strings.Contains(stderr, "campaign seed 1") {
		t.Errorf("campaign output:\n%s\n%s", stdout, stderr)
	}
	sum, err := campaign.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	var saved string
	for _, f := range sum.Failures {
		if f.Saved != "" {
			saved = filepath.Join(out, f.Saved)
		}
	}
	for _, name := range []string{campaign.MarkdownFile, campaign.JUnitFile, report.IndexFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	// The page links the failing runs' pictures and Porcupine pages, relative to it.
	page, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sum.Failures {
		for _, name := range []string{"timeline.svg", "history.html"} {
			if href := f.Dir + "/" + name; !strings.Contains(string(page), `href="`+href+`"`) {
				t.Errorf("index.html does not link %s:\n%s", href, page)
			}
		}
	}
	if saved == "" {
		t.Fatalf("no saved failure: %+v", sum.Failures)
	}
	// The mutant's race shows in most runs of a confirmed plan: six replays reproduce it.
	code, stdout, stderr = locklab(t, "replay", "--repeat", "6", filepath.Dir(saved))
	if code != exitViolation || !strings.Contains(stdout, "run 6/6:") || strings.Contains(stdout, "reproduced 0/6") {
		t.Fatalf("replay of a confirmed failure: exit %d, want %d\n%s\n%s", code, exitViolation, stdout, stderr)
	}
	// A plan without a violation replays as such, with exit status 0.
	safe := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(safe, []byte(`{"impl": "setnx", "duration": "500ms"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = locklab(t, "replay", "--repeat", "2", safe)
	if code != exitOK || !strings.Contains(stdout, "reproduced 0/2") {
		t.Errorf("replay of a safe plan: exit %d, want %d\n%s\n%s", code, exitOK, stdout, stderr)
	}
}

// TestCampaignInterruptedWritesTheSummary: cancelling a campaign (what Ctrl-C does)
// stops it and still writes the summary, marked interrupted.
func TestCampaignInterruptedWritesTheSummary(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var o, e bytes.Buffer
	code := run(ctx, []string{"campaign", "--impl", "setnx", "--faults", "none", "--duration", "1m", "--seed", "5", "--out", out}, &o, &e)
	if code != exitError || !strings.Contains(e.String(), "interrupted") {
		t.Fatalf("exit %d\n%s\n%s", code, o.String(), e.String())
	}
	sum, err := campaign.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted {
		t.Errorf("summary not marked interrupted: %+v", sum)
	}
	// The pages for people are written on Ctrl-C too.
	md, err := os.ReadFile(filepath.Join(out, campaign.MarkdownFile))
	if err != nil || !strings.Contains(string(md), "**interrupted**") {
		t.Errorf("summary.md (%v) does not say the campaign was interrupted:\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(out, campaign.JUnitFile)); err != nil {
		t.Errorf("junit.xml: %v", err)
	}
	if page, err := os.ReadFile(filepath.Join(out, report.IndexFile)); err != nil || !strings.Contains(string(page), "(interrupted)") {
		t.Errorf("index.html (%v) does not say the campaign was interrupted:\n%s", err, page)
	}
}

// TestCampaignThatDecidesTooLittleIsInconclusive: one plan cannot decide more claimed
// pairs than there are properties, so a campaign of one plan asked to decide one more
// exits 3 (inconclusive), and its summary says so; merging its summary applies the
// merge's own thresholds to the merged counts.
func TestCampaignThatDecidesTooLittleIsInconclusive(t *testing.T) {
	out := t.TempDir()
	tooMany := fmt.Sprint(len(linearizability.AllProperties()) + 1)
	code, stdout, stderr := locklab(t, "campaign", "--impl", "fenced", "--fencing", "full", "--faults", "none", "--calm",
		"--max-runs", "1", "--seed", "3", "--min-decided", tooMany, "--out", out)
	sum, err := campaign.ReadSummary(out)
	if err != nil {
		t.Fatalf("exit %d, no summary: %v\n%s\n%s", code, err, stdout, stderr)
	}
	if sum.Runs+sum.Perturbed != 1 || sum.SafeViolations != 0 {
		t.Fatalf("the campaign's one plan did not run to a verdict without violation (exit %d): %+v\n%s\n%s", code, sum, stdout, stderr)
	}
	c := sum.Counts()
	if code != exitUnknown || !strings.Contains(stdout, "INCONCLUSIVE") || !strings.Contains(stdout, "fewer than --min-decided "+tooMany) {
		t.Fatalf("exit %d, want %d (inconclusive: %s)\n%s\n%s", code, exitUnknown, c, stdout, stderr)
	}
	if md, err := os.ReadFile(filepath.Join(out, campaign.MarkdownFile)); err != nil || !strings.Contains(string(md), "**INCONCLUSIVE**") {
		t.Errorf("summary.md (%v) does not say INCONCLUSIVE:\n%s", err, md)
	}
	// The same summary, merged: judged by the merge's thresholds.
	code, stdout, stderr = locklab(t, "campaign", "merge", "--min-decided", tooMany, "--out", filepath.Join(t.TempDir(), "m"), out)
	if code != exitUnknown {
		t.Errorf("merge with --min-decided %s: exit %d, want %d\n%s\n%s", tooMany, code, exitUnknown, stdout, stderr)
	}
	code, stdout, stderr = locklab(t, "campaign", "merge", "--min-decided", fmt.Sprint(c.Decided), "--max-perturbed", "1", "--out", filepath.Join(t.TempDir(), "m"), out)
	if code != exitOK {
		t.Errorf("merge with --min-decided %d (%s): exit %d, want %d\n%s\n%s", c.Decided, c, code, exitOK, stdout, stderr)
	}
}

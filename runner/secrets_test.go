package runner

import (
	"strconv"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
)

// TestScrubHistory: the text a history holds from clients and libraries (errors, tokens,
// fault details) loses the environment's password and an external server's, in whatever
// form it was said; the rest of the history stays as recorded.
func TestScrubHistory(t *testing.T) {
	envPW, urlPW := clustertest.AwkwardPassword(t), clustertest.AwkwardPassword(t)
	t.Setenv(access.EnvPassword, envPW)
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{
		Lock:  []string{"redis://alice:" + escape(urlPW) + "@127.0.0.1:1"},
		Store: "127.0.0.1:2",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := scrubberFor(b)
	said := "dial redis://alice:" + escape(urlPW) + "@127.0.0.1:1: " + strconv.Quote(envPW)
	op := histories.Op{Process: 3, Key: "k", Kind: histories.Acquire, Outcome: histories.Unknown,
		Input: histories.Input{Token: "in-" + envPW}, Output: histories.Output{Error: said, Token: urlPW}, Call: 1, Return: 2}
	h := histories.History{Ops: []histories.Op{op, op}, Faults: []histories.FaultWindow{{Kind: "net-reset", Detail: said}}}
	scrubHistory(&h, s)
	var streamed []histories.Op
	scrubSink(func(op histories.Op) { streamed = append(streamed, op) }, s)(op)
	for _, got := range append(h.Ops, streamed...) {
		if got.Output.Error != `dial redis://alice:xxxxx@127.0.0.1:1: "xxxxx"` || got.Input.Token != "in-xxxxx" || got.Output.Token != "xxxxx" {
			t.Errorf("scrubbed op: error %q, tokens %q %q", got.Output.Error, got.Input.Token, got.Output.Token)
		}
		if got.Process != 3 || got.Key != "k" || got.Call != 1 || got.Return != 2 {
			t.Errorf("scrubbing changed more than text: %+v", got)
		}
	}
	if d := h.Faults[0].Detail; d != `dial redis://alice:xxxxx@127.0.0.1:1: "xxxxx"` {
		t.Errorf("fault detail %q", d)
	}
}

// escape percent-encodes a password for a URL's userinfo.
func escape(pw string) string {
	return strings.NewReplacer("%", "%25", "@", "%40", ":", "%3A", `"`, "%22").Replace(pw)
}

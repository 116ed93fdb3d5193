package runner

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/clustertest"
	"github.com/locklab/locklab/histories"
	"github.com/locklab/locklab/lockimpl/subprocess"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/plan"
)

// TestClientClockMovesTheClientsOwnClock: under client_clock faketime a client-clock
// fault moves the wall clock that a Node.js or Python client reads itself, through libc:
// the probe clients report their clock as each lease's token, and the tokens taken
// while the fault lasts are an hour ahead of the history's time, the others not.
func TestClientClockMovesTheClientsOwnClock(t *testing.T) {
	const offset = time.Hour
	for _, c := range []struct{ name, interp, file string }{
		{"python", "/usr/bin/python3", "clockprobe.py"},
		{"node", "node", "clockprobe.js"},
	} {
		t.Run(c.name, func(t *testing.T) {
			interp, err := exec.LookPath(c.interp)
			if err != nil {
				t.Fatalf("%s: %v", c.interp, err)
			}
			script, err := filepath.Abs(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			reg := locks.All()
			impl, err := subprocess.SubprocessOn("single", "clock-probe", "reports its own clock", []string{interp, script}, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := reg.Register(impl); err != nil {
				t.Fatal(err)
			}
			p := plan.Default()
			p.Impl, p.Clients, p.ClientClock = "clock-probe", 1, "faketime"
			p.Duration, p.TTL = plan.D(2*time.Second), plan.D(time.Second)
			p.Faults = []plan.FaultSpec{{Kind: "client-clock", Target: "client:0", At: plan.D(700 * time.Millisecond), Duration: plan.D(600 * time.Millisecond), Offset: plan.D(offset)}}
			r, err := p.Resolve(reg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := Run(ctx, r, Options{Backend: clustertest.Backend(t), Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			h, err := histories.Load(filepath.Join(rep.Dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Faults) != 1 {
				t.Fatalf("fault windows %v", h.Faults)
			}
			w := h.Faults[0]
			var ahead, inWindow, outside, behaving int
			for _, op := range h.Ops {
				if op.Kind != histories.Acquire || op.Outcome != histories.OK {
					continue
				}
				ms, err := strconv.ParseInt(strings.TrimPrefix(op.Output.Token, "t"), 10, 64)
				if err != nil {
					t.Fatalf("token %q: %v", op.Output.Token, err)
				}
				// The client's reading minus the history's wall time of the answer.
				lead := time.UnixMilli(ms).Sub(h.Meta.Started.Add(time.Duration(op.Return)))
				switch {
				case op.Call > w.Start && op.Return < w.End:
					inWindow++
					if lead > offset-time.Minute && lead < offset+time.Minute {
						ahead++
					}
				case op.Return < w.Start || op.Call > w.End:
					outside++
					if lead.Abs() < time.Minute {
						behaving++
					}
				}
			}
			t.Logf("%d grants in the fault window, %d of them an hour ahead; %d outside, %d of them on time", inWindow, ahead, outside, behaving)
			if inWindow == 0 || ahead != inWindow || outside == 0 || behaving != outside {
				t.Errorf("the client's own clock did not follow the fault")
			}
		})
	}
}

// TestClientClockNeedsAProcess: libfaketime cannot reach a client inside locklab (Go
// reads the clock without libc); the run says so rather than pretending.
func TestClientClockNeedsAProcess(t *testing.T) {
	p := plan.Default()
	p.Impl, p.ClientClock = "setnx", "faketime"
	r, err := p.Resolve(locks.All())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), r, Options{Backend: clustertest.Backend(t), Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "libfaketime cannot move it") {
		t.Fatalf("err = %v", err)
	}
}

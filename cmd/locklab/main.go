// Command locklab runs lock implementations against real Redis under faults, records
// every operation and checks the histories against formal models.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// Exit statuses, as docs/cli.md documents them.
const (
	exitOK        = 0 // every property held
	exitViolation = 1 // a checker found a violation
	exitError     = 2 // bad input or a failure to run
	exitUnknown   = 3 // no violation, but a checker timed out, or too little decided (inconclusive)
)

// statusError carries an exit status through cobra.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }

func main() {
	// Ctrl-C and SIGTERM cancel the context; every server and fault is stopped and healed
	// by the deferred clean-ups along the way before the process exits.
	// go-redis logs dial failures and Sentinel switches through a global logger; faults
	// cause both on purpose, and the history records them, so the program silences it.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal the default handling returns: a second Ctrl-C ends locklab at
	// once, and the servers it started die with it (Pdeathsig).
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietLogger drops go-redis's log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var se *statusError
	if errors.As(err, &se) {
		if se.err != nil && (se.code == exitError || se.code == exitUnknown) {
			fmt.Fprintln(stderr, "locklab:", se.err)
		}
		return se.code
	}
	fmt.Fprintln(stderr, "locklab:", err)
	return exitError
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "locklab",
		Short:         "Is this Redis lock safe? Real Redis, real faults, recorded histories, formal checkers.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newAssessCmd(), newRunCmd(), newSoakCmd(), newDemoCmd(), newCheckCmd(), newListCmd(), newMatrixCmd(), newExportCmd(), newTutorialCmd())
	root.AddCommand(newCampaignCmd(), newReplayCmd(), newBisectCmd(), newDetectionCmd(), newBenchCmd())
	addImplFlags(root)
	return root
}

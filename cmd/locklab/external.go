package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/access"
	"github.com/locklab/locklab/plan"
)

// externalFlags are run's flags naming servers locklab did not start.
type externalFlags struct {
	lock  []string
	store string
	ca    string
}

// externalBackend builds the backend of the servers named by the flags, or else by the
// plan's external section (a flag overrides its field), and records them in pl with
// every password redacted. nil when neither names any. It also returns the scrubber of
// every secret known (the servers' passwords and the environment's) for messages. Errors
// name the flag or the plan's field and show no password.
func externalBackend(fs *pflag.FlagSet, pl *plan.Plan, fl externalFlags, source string) (*cluster.ExternalBackend, *access.Scrubber, error) {
	var recorded plan.External
	if pl.External != nil {
		recorded = *pl.External
	}
	lock, lockFrom := recorded.Lock, func(i int) string { return fmt.Sprintf("%s: field external.lock[%d]", source, i) }
	if fs.Changed("external-lock") {
		lock, lockFrom = fl.lock, func(int) string { return "flag --external-lock" }
	}
	store, storeFrom := recorded.Store, source+": field external.store"
	if fs.Changed("external-store") {
		store, storeFrom = fl.store, "flag --external-store"
	}
	ca, caFrom := recorded.CA, source+": field external.ca"
	if fs.Changed("external-ca") {
		ca, caFrom = fl.ca, "flag --external-ca"
	}
	if len(lock) == 0 && store == "" {
		if ca != "" && fs.Changed("external-ca") {
			return nil, nil, fmt.Errorf("%s %s: no external server (--external-lock, --external-store) to use it with", caFrom, ca)
		}
		return nil, nil, nil
	}
	if len(lock) == 0 || store == "" {
		return nil, nil, errors.New("flags --external-lock and --external-store go together: give both, the lock servers and the store")
	}
	var roots access.TLSRoots
	if ca != "" {
		var err error
		if roots, err = access.LoadCA(ca); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", caFrom, err)
		}
	}
	for i, raw := range lock {
		if _, err := access.ParseServerURL(raw, os.LookupEnv, roots); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", lockFrom(i), err)
		}
	}
	if _, err := access.ParseServerURL(store, os.LookupEnv, roots); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", storeFrom, err)
	}
	b, err := cluster.NewExternalBackend(cluster.ExternalOptions{Lock: lock, Store: store, Roots: roots, LookupEnv: os.LookupEnv})
	if err != nil {
		return nil, nil, fmt.Errorf("flags --external-lock/--external-store: %w", err)
	}
	if ca != "" && !b.TLS() {
		return nil, nil, fmt.Errorf("%s %s: no server is reached over TLS (rediss://)", caFrom, ca)
	}
	urls, storeURL := b.URLs()
	pl.External = &plan.External{Lock: urls, Store: storeURL, CA: ca}
	return b, access.NewScrubber(os.LookupEnv, cluster.Secrets(b)...), nil
}

// scrubError is err with every secret of scrub (nil: the environment's password)
// redacted from its message, its exit status kept: a server's, a library's or a lock
// client's answer must not carry one to the terminal.
func scrubError(err error, scrub *access.Scrubber) error {
	if scrub == nil {
		scrub = access.NewScrubber(os.LookupEnv)
	}
	var se *statusError
	if err == nil || errors.As(err, &se) && se.err == nil {
		return err // an exit status without a message
	}
	clean := scrub.Error(err)
	if clean == err {
		return err
	}
	code := exitError
	if se != nil {
		code = se.code
	}
	return &statusError{code, clean}
}

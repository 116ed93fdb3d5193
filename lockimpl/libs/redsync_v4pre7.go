//go:build redsync_v4pre7

package libs

// The redsync adapter against v4.2.0 – v4.6.x: redsync's errors say nothing of the
// servers (raw client errors joined by hashicorp/go-multierror, ErrFailed, and from
// v4.4.0 ErrExtendFailed), so a failure is classified by its (ok, err) alone:
//
//	operation  library result               outcome  why
//	acquire    any error                    unknown  ErrFailed is both "fewer than a quorum granted" and "a quorum granted but the
//	                                                 validity was used up" (its clean-up unreported); an error joins the
//	                                                 servers' client errors, and such a server may have applied SET NX
//	release    (false, nil)                 fail     every server answered, fewer than a quorum held our token
//	release    (false, err)                 unknown  a server's client error: it may have deleted the key
//	extend     (false, nil)                 fail     every server answered, fewer than a quorum held our token
//	extend     (false, err)                 unknown  a client error, or ErrExtendFailed (v4.4.0): a quorum reset the expiry too late
//	extend     (true, nil)                  ok       before v4.4.0 with no validity check: a quorum reset the expiry, however late
//	                                                 the answer (go-redsync/redsync#71)

// redsyncRefused reports whether a failure with err is a definite refusal: only the
// failure without an error, (false, nil) of a release or an extend.
func redsyncRefused(err error, _, _ int) bool { return err == nil }

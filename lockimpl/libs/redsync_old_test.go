//go:build redsync_v4pre7 || redsync_v4pre12

package libs

import (
	"strings"
	"testing"
)

// The old variants compile against the pinned release too (their pool has the later
// Conn's ScriptLoad as well), so that their tables can be tested without building a
// release: go test -tags redsync_v4pre7 ./lockimpl/libs, and -tags redsync_v4pre12. The
// releases themselves run in releases' TestOldRedsyncReleases.
func TestOldRedsyncRefusesSetNXOnExtend(t *testing.T) {
	if _, err := redsyncSetNXOnExtendOption(); err == nil || !strings.Contains(err.Error(), "v4.12.0") {
		t.Errorf("set_nx_on_extend: %v, want an error naming v4.12.0", err)
	}
}

package libs

import (
	"os"
	"regexp"
	"testing"
)

// The versions the adapters' tables describe are the versions go.mod requires.
func TestThirdPartyVersions(t *testing.T) {
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for mod, v := range map[string]string{
		"github.com/go-redsync/redsync/v4": redsyncVersion,
		"github.com/bsm/redislock":         bsmRedislockVersion,
		"github.com/redis/rueidis":         rueidisVersion,
	} {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod+" "+v) + `\s*$`).Match(data) {
			t.Errorf("go.mod does not require %s %s, the version the adapter documents", mod, v)
		}
	}
}

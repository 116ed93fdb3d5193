package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/locklab/locklab/lockimpl"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/releases"
)

// Flags of every command that takes an implementation: lock clients registered from the
// command line, with no Go (locks.Client).
const (
	flagImplCmd = "impl-cmd"
	flagLocks   = "locks"
)

func addImplFlags(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringArray(flagImplCmd, nil, "register a lock client of the subprocess protocol: NAME=COMMAND (repeatable; its hello says whether it fences and extends)")
	f.String(flagLocks, "", `JSON file of lock clients to register: {"locks": [{"name": ..., "command": [...], "topology": "single"|"nodes"|"etcd"|"zookeeper", "description": ...}]}`)
}

// registryFor is every shipped implementation, the clients of --impl-cmd and --locks
// (locks.Register greets each once), and releases NAME@VERSION on demand (releases).
func registryFor(cmd *cobra.Command) (*lockimpl.Registry, error) {
	var clients []locks.Client
	vals, _ := cmd.Flags().GetStringArray(flagImplCmd) // none where the flag is not defined
	for _, v := range vals {
		c, err := locks.ParseImplCmd(v, fmt.Sprintf("flag --%s %q", flagImplCmd, v))
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	if path, _ := cmd.Flags().GetString(flagLocks); path != "" {
		more, err := locks.ReadFile(path, "flag --"+flagLocks)
		if err != nil {
			return nil, err
		}
		clients = append(clients, more...)
	}
	reg := locks.All()
	reg.SetResolver(releases.Resolver(cmd.Context(), reg))
	if err := locks.Register(cmd.Context(), reg, clients); err != nil {
		return nil, err
	}
	return reg, nil
}

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (a *App) setupOpenCodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "opencode",
		Short:  "Point OpenCode at the spillway gateway",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(*cobra.Command, []string) error { return errors.New("not yet") },
	}
}

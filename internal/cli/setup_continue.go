package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (a *App) setupContinueCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "continue",
		Short:  "Point Continue at the spillway gateway",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(*cobra.Command, []string) error { return errors.New("not yet") },
	}
}

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (a *App) setupQwenCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "qwen",
		Short:  "Point Qwen at the spillway gateway",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(*cobra.Command, []string) error { return errors.New("not yet") },
	}
}

package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Usage errors (docs/exit-status.md): a command line kscope cannot make
// sense of exits 2, whatever part of it is wrong, before anything runs.
// Cobra returns plain errors for them (exit 1), and shows the help with
// exit 0 for an unknown subcommand of a command that has subcommands, so
// the whole tree is fixed up here.

// usageError is a usage error of cmd: exit 2, and where to read the usage.
func usageError(cmd *cobra.Command, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		err = ee.err // a check of the command's own, already exit 2
	}
	return badInput(fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath()))
}

// strictUsage walks the tree under root: every argument check becomes a
// usage error, and a command with subcommands refuses any other word.
// Cobra's completion and help commands are made now, so that they are
// walked too.
func strictUsage(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd()
	walk(root, func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2 // cobra's, set only when it prints them itself
		switch {
		case c.HasSubCommands():
			c.Args = unknownSubcommand
			if !c.Runnable() {
				// Cobra checks the arguments of runnable commands only.
				c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			}
		case c.Args != nil:
			c.Args = asUsageErrors(c.Args)
		}
	})
}

// walk calls fn on c and every command under it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// asUsageErrors makes the errors of an argument check usage errors.
func asUsageErrors(args cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return usageError(cmd, err)
		}
		return nil
	}
}

// unknownSubcommand is the argument check of a command with subcommands:
// cobra only gets here when the first word names none of them.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil // the command alone: its help
	}
	return usageError(cmd, fmt.Errorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), suggestion(cmd, args[0])))
}

// suggestion is ": did you mean X?" for the subcommands of cmd near word.
func suggestion(cmd *cobra.Command, word string) string {
	near := cmd.SuggestionsFor(word)
	if len(near) == 0 {
		return ""
	}
	return ": did you mean " + strings.Join(near, " or ") + "?"
}

// newHelpCmd is `kscope help [command]`. Cobra's own prints the root's
// usage with exit 0 for a topic it does not know.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: kscope help [path to command].",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err == nil && len(rest) == 0 {
				return target.Help()
			}
			if err != nil {
				target, rest = c.Root(), args
			}
			return usageError(c.Root(), fmt.Errorf("unknown help topic %q%s", strings.Join(args, " "), suggestion(target, rest[0])))
		},
	}
}

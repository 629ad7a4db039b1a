package cli

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestAgentViewsFlag: --views takes registered views or none alone;
// anything else is a usage error naming the known views, before the
// agent starts.
func TestAgentViewsFlag(t *testing.T) {
	for _, tt := range []struct {
		views string
		want  string
	}{
		{"bogus", `unknown view "bogus" (known: clients, consumers, or none)`},
		{"clients,bogus", `unknown view "bogus"`},
		{"none,clients", "none goes alone"},
		{"clients\x1b[31m", `unknown view "clients`}, // and no escape sequence printed
	} {
		code, _, stderr := run(t, "agent", "--views", tt.views, "--duration", "1ms")
		if code != ExitBadInput || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "\x1b[") {
			t.Errorf("--views %q: exit %d, stderr %q; want exit %d and %q", tt.views, code, stderr, ExitBadInput, tt.want)
		}
	}
}

// TestAgentViewsConfig: the views --views names reach the agent's
// configuration; by default every registered one.
func TestAgentViewsConfig(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"clients", "consumers"}},
		{[]string{"--views", "none"}, []string{"none"}},
		{[]string{"--views", "consumers"}, []string{"consumers"}},
	} {
		var o agentOptions
		f := pflag.NewFlagSet("agent", pflag.ContinueOnError)
		agentFlags(&o, f)
		if err := f.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		ac, err := agentConfig(&o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ac.Views, tt.want) {
			t.Errorf("%q: views %q, want %q", tt.args, ac.Views, tt.want)
		}
	}
}

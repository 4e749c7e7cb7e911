package caddymodule

import (
	"regexp"
	"strings"
	"testing"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

// TestHelpFlags checks that every flag the `caddy air` help shows exists
// on the subcommand it is shown with.
func TestHelpFlags(t *testing.T) {
	air, ok := caddycmd.Commands()["air"]
	if !ok {
		t.Fatal("no air command")
	}
	root := &cobra.Command{Use: "air"}
	air.CobraFunc(root)
	lineRe := regexp.MustCompile(`^\s+caddy air (.*)$`)
	flagRe := regexp.MustCompile(`--([a-z-]+)`)
	checked := 0
	for _, line := range strings.Split(air.Long, "\n") {
		m := lineRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var path []string
		for _, w := range strings.Fields(m[1]) {
			if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "<") {
				break
			}
			path = append(path, strings.Split(w, "|")[0])
		}
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Errorf("help line %q: no command %v", line, path)
			continue
		}
		for _, f := range flagRe.FindAllStringSubmatch(m[1], -1) {
			checked++
			if cmd.Flags().Lookup(f[1]) == nil && cmd.InheritedFlags().Lookup(f[1]) == nil && root.PersistentFlags().Lookup(f[1]) == nil {
				t.Errorf("help line %q shows --%s, which `%s` does not have", strings.TrimSpace(line), f[1], cmd.CommandPath())
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags checked: the help's format changed", checked)
	}
}

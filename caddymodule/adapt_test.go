package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// update rewrites the JSON of the golden adapt tests from their
// Caddyfiles: go test ./caddymodule -run TestCaddyfileAdapt -update.
var update = flag.Bool("update", false, "rewrite the JSON of testdata/adapt/*.caddytest from their Caddyfiles")

// adaptSep separates the sections of a .caddytest file.
const adaptSep = "\n----------\n"

// adaptCaddyfile adapts a Caddyfile to the JSON config Caddy would load,
// indented with tabs.
func adaptCaddyfile(in string) ([]byte, error) {
	out, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		if !strings.Contains(w.Message, "not formatted") {
			return nil, errors.New("warning: " + w.String())
		}
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TestCaddyfileAdapt adapts each testdata/adapt/*.caddytest's Caddyfile
// (one per directive family) and compares the JSON with the file's, byte
// for byte, as caddy-l4's integration/caddyfile_adapt does: a change of
// what a directive means shows as a change of its golden JSON.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/adapt/*.caddytest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt tests: %v", err)
	}
	// The vertex provider's key file, and a Badger directory of the test's.
	t.Setenv("AIR_TEST_VERTEX_SA", serviceAccount(t))
	t.Setenv("AIR_TEST_ADAPT_DIR", t.TempDir())
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".caddytest"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, want, ok := strings.Cut(string(raw), adaptSep)
			if !ok && !*update {
				t.Fatalf("%s: no %q between the Caddyfile and its JSON", f, strings.TrimSpace(adaptSep))
			}
			got, err := adaptCaddyfile(in)
			if err != nil {
				t.Fatalf("adapting: %v", err)
			}
			if *update {
				if err := os.WriteFile(f, []byte(in+adaptSep+string(got)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if string(got) != strings.TrimSuffix(want, "\n") {
				t.Errorf("adapted JSON differs from the golden one (rerun with -update and review the diff):\n%s", got)
			}
			// The checks refuse none of the golden configs: each is
			// provisioned and validated as `caddy validate` does.
			for k, v := range adaptEnv {
				t.Setenv(k, v)
			}
			if err := validateConfig(got); err != nil {
				t.Errorf("the adapted config does not validate: %v", err)
			}
		})
	}
}

// adaptEnv are the variables the golden configs' placeholders name.
var adaptEnv = map[string]string{
	"AIR_PG_DSN":          "postgres://air@db.invalid/air",
	"AIR_CSRF_SECRET":     "a-csrf-secret-of-at-least-32-characters",
	"OPENAI_KEY_A":        "sk-a",
	"OPENAI_KEY_B":        "sk-b",
	"AZURE_KEY":           "az",
	"AZURE_CLIENT_SECRET": "az-secret",
	"ANTHROPIC_API_KEY":   "sk-ant",
	"DASHSCOPE_API_KEY":   "sk-ds",
	"AIR_AWS_KEY_ID":      "ASIAEXAMPLE",
	"AIR_AWS_SECRET":      "aws-secret",
	"AIR_AWS_TOKEN":       "aws-session-token",
	"GEMINI_API_KEY":      "AIza-test",
	"COHERE_API_KEY":      "co-test",
}

// TestInvalidConfigs loads each testdata/adapt/invalid/*.caddytest both
// ways a config reaches the gateway, and checks that each is refused with
// the file's error: its Caddyfile, adapted, and its JSON module config,
// each provisioned and validated as a whole Caddy config (caddy.Validate,
// as `caddy validate`, `caddy run` and an admin /load do). The file's
// sections: the Caddyfile; the module (air, or a handler such as
// http.handlers.air_mock) on a line of its own, then its JSON; the text
// both errors must contain.
func TestInvalidConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/adapt/invalid/*.caddytest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid config tests: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".caddytest"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.Split(string(raw), adaptSep)
			if len(parts) != 3 {
				t.Fatalf("%s: want 3 sections (Caddyfile, module JSON, error), got %d", f, len(parts))
			}
			id, js, _ := strings.Cut(parts[1], "\n")
			want := strings.TrimSpace(parts[2])
			if err := validateCaddyfile(parts[0]); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Caddyfile: error %v, want one containing %q", err, want)
			}
			if err := validateModule(strings.TrimSpace(id), []byte(js)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("JSON: error %v, want one containing %q", err, want)
			}
		})
	}
}

// validateCaddyfile adapts in and validates the config.
func validateCaddyfile(in string) error {
	out, err := adaptCaddyfile(in)
	if err != nil {
		return err
	}
	return validateConfig(out)
}

// validateModule validates a config of module id with JSON raw alone:
// the air app, or a handler in a route of a server.
func validateModule(id string, raw []byte) error {
	if id == "air" {
		return validateConfig([]byte(`{"apps":{"air":` + string(raw) + `}}`))
	}
	name, ok := strings.CutPrefix(id, "http.handlers.")
	if !ok {
		return errors.New("unknown module " + id)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		return err
	}
	h["handler"] = name
	cfg := map[string]any{"apps": map[string]any{"http": map[string]any{"servers": map[string]any{
		"srv0": map[string]any{"listen": []string{":0"}, "routes": []any{map[string]any{"handle": []any{h}}}}}}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return validateConfig(b)
}

// validateConfig provisions and validates the Caddy config js without
// starting it, as `caddy validate` does.
func validateConfig(js []byte) error {
	var cfg caddy.Config
	if err := caddy.StrictUnmarshalJSON(js, &cfg); err != nil {
		return err
	}
	return caddy.Validate(&cfg)
}

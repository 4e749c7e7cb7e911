package air

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// manifest mirrors the JSON tags of xcaddy.Builder, of which xcaddy.json is
// an instance.
type manifest struct {
	CaddyVersion string `json:"caddy_version"`
	Plugins      []struct {
		ModulePath string `json:"module_path"`
		Version    string `json:"version"`
	} `json:"plugins"`
	Replacements []struct {
		Old string `json:"old"`
		New string `json:"new"`
	} `json:"replacements"`
}

// TestXcaddyManifest keeps xcaddy.json in step with go.mod: the Caddy
// version it pins is the one we build and test with, and it plugs in this
// module from this directory.
func TestXcaddyManifest(t *testing.T) {
	raw, err := os.ReadFile("xcaddy.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	var m manifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("xcaddy.json: %v", err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	var caddyVersion string
	for _, r := range mf.Require {
		if r.Mod.Path == "github.com/caddyserver/caddy/v2" {
			caddyVersion = r.Mod.Version
		}
	}
	if m.CaddyVersion != caddyVersion {
		t.Errorf("xcaddy.json pins Caddy %q, go.mod requires %q", m.CaddyVersion, caddyVersion)
	}
	if len(m.Plugins) != 1 || m.Plugins[0].ModulePath != mf.Module.Mod.Path {
		t.Errorf("xcaddy.json plugins %+v, want exactly %s", m.Plugins, mf.Module.Mod.Path)
	}
	if len(m.Replacements) != 1 || m.Replacements[0].Old != mf.Module.Mod.Path || m.Replacements[0].New != "." {
		t.Errorf("xcaddy.json replacements %+v, want %s => .", m.Replacements, mf.Module.Mod.Path)
	}
}

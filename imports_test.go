package air

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// modulePackages lists the packages under caddymodule/ that register a
// Caddy module, by import path.
func modulePackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	err := filepath.WalkDir("caddymodule", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() && e.Name() == "testdata" {
			if err == nil {
				err = fs.SkipDir
			}
			return err
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if pkg := "github.com/caddy-air/caddy-air/" + filepath.ToSlash(filepath.Dir(path)); strings.Contains(string(b), "caddy.RegisterModule(") && !slices.Contains(pkgs, pkg) {
			pkgs = append(pkgs, pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// importsOf lists the import paths of the Go file path.
func importsOf(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}

// TestImportsEveryModulePackage: every package under caddymodule that
// registers a Caddy module is imported by imports.go, so that the build
// of cmd/caddy and xcaddy's build with this module have it, and by
// caddymodule's tests (modules_test.go), so that its docs and adapt tests
// see it; and this package's build registers every storage backend and
// every provider protocol.
func TestImportsEveryModulePackage(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 8 {
		t.Fatalf("only %d module packages found: %v", len(pkgs), pkgs)
	}
	root, tests := importsOf(t, "imports.go"), importsOf(t, "caddymodule/modules_test.go")
	for _, pkg := range pkgs {
		if !slices.Contains(root, pkg) {
			t.Errorf("imports.go does not import %s", pkg)
		}
		if pkg != "github.com/caddy-air/caddy-air/caddymodule" && !slices.Contains(tests, pkg) {
			t.Errorf("caddymodule/modules_test.go does not import %s", pkg)
		}
	}
	names := func(ns string) []string {
		var out []string
		for _, m := range caddy.GetModules(ns) {
			out = append(out, m.ID.Name())
		}
		slices.Sort(out)
		return out
	}
	if got := names("air.storage"); !slices.Equal(got, []string{"badger", "postgres"}) {
		t.Errorf("storage backends %v", got)
	}
	want := []string{"anthropic", "azure", "bedrock", "cohere", "dashscope", "gemini", "openai", "vertex"}
	if got := names("air.dialects"); !slices.Equal(got, want) {
		t.Errorf("dialects %v, want %v", got, want)
	}
}

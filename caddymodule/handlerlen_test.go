package caddymodule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxServeHTTPLines bounds a handler's ServeHTTP, from its func line to
// its closing brace: the request's life is gateway's (the exchange
// pipeline) and the handlers' own steps, each a method of its own.
const maxServeHTTPLines = 40

// TestServeHTTPThin fails when a ServeHTTP of caddymodule grows past
// maxServeHTTPLines: Caddy's glue stays thin.
func TestServeHTTPThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "ServeHTTP" || fn.Body == nil {
				continue
			}
			n++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxServeHTTPLines {
				t.Errorf("%s: ServeHTTP of %s is %d lines, more than %d: move its steps into methods (or into gateway)",
					fset.Position(fn.Pos()), receiver(fn), lines, maxServeHTTPLines)
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d ServeHTTP methods; the check looks in the wrong place", n)
	}
}

// receiver names fn's receiver type.
func receiver(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return "?"
	}
	x := fn.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

package caddymodule

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// parserPages names the page of the Caddyfile parsers that are not a
// module's UnmarshalCaddyfile: the blocks of the air option and the
// sub-blocks of handlers. A new parser with subdirectives needs its entry
// here, and its subdirectives on that page.
var parserPages = map[string][]string{
	"parseGlobalOption": {"air.md"},
	"parseProvider":     {"provider.md"},
	"parseAlerts":       {"alerts.md"},
	"parseHealthCheck":  {"provider.md"},
	"parseModel":        {"model.md"},
	"parseTo":           {"model.md"},
	"toOption":          {"model.md"},
	"parseTasks":        {"tasks.md"},
	"parseResponses":    {"responses.md"},
	"parseBatches":      {"files-batches.md"},
	"parseHealth":       {"health.md"},
	"parseMetrics":      {"metrics.md"},
	"parseRequestLogs":  {"request-logs.md"},
	"parseMockFault":    {"air_mock.md"},
	"parseMockBedrock":  {"air_mock.md"},
	"parseEntra":        {"provider.md"},
	"parseMediaPath":    {"air_images.md", "air_tasks.md"},
}

// parsedPackage parses the non-test Go files of this package and of its
// module sub-packages (storage backends, dialects) with comments.
func parsedPackage(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() && e.Name() == "testdata" {
			return cmp.Or(err, fs.SkipDir)
		}
		if name := e.Name(); e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fset, files
}

// fieldDocs maps "Type.Field" to the field's doc comment, on one line.
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	_, files := parsedPackage(t)
	docs := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				for _, name := range fld.Names {
					docs[ts.Name.Name+"."+name.Name] = strings.Join(strings.Fields(fld.Doc.Text()), " ")
				}
			}
			return true
		})
	}
	return docs
}

// takesDispenser reports whether fn has a *caddyfile.Dispenser parameter.
func takesDispenser(fn *ast.FuncDecl) bool {
	for _, p := range fn.Type.Params.List {
		if star, ok := p.Type.(*ast.StarExpr); ok {
			if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Dispenser" {
				return true
			}
		}
	}
	return false
}

// receiverName is the type name of fn's receiver, "" for a function.
func receiverName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// subdirectives returns, per parser function of the Caddyfile (one that
// takes a *caddyfile.Dispenser, or a helper named in parserPages), the
// words its switch statements accept: the subdirectives and keyword values
// its block reads.
func subdirectives(t *testing.T) map[*ast.FuncDecl][]string {
	t.Helper()
	_, files := parsedPackage(t)
	out := map[*ast.FuncDecl][]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if _, named := parserPages[fn.Name.Name]; !named && !takesDispenser(fn) {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sw, ok := n.(*ast.SwitchStmt)
				if !ok || sw.Tag == nil {
					return true
				}
				for _, stmt := range sw.Body.List {
					for _, e := range stmt.(*ast.CaseClause).List {
						if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
								out[fn] = append(out[fn], s)
							}
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// parserPagesOf returns the pages that document fn's subdirectives: the
// page of the module (or modules, for an embedded handler) whose
// UnmarshalCaddyfile it is, or parserPages' entry.
func parserPagesOf(fn *ast.FuncDecl, mods []docModule) []string {
	if fn.Name.Name != "UnmarshalCaddyfile" {
		return parserPages[fn.Name.Name]
	}
	recv := receiverName(fn)
	if p, ok := typePages[recv]; ok {
		return []string{p}
	}
	var pages []string
	for _, m := range mods {
		if m.typ.Name() == recv || docEmbeds(m.typ, recv) {
			pages = append(pages, m.page)
		}
	}
	return pages
}

// docEmbeds reports whether typ embeds the type named name.
func docEmbeds(typ reflect.Type, name string) bool {
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Anonymous && docElem(f.Type).Name() == name {
			return true
		}
	}
	return false
}

// TestCaddyfileDocs fails for every subdirective (and keyword value) that a
// Caddyfile parser of this package accepts and that the directive's page
// under docs/config does not name in code, and for a parser with
// subdirectives whose page is unknown.
func TestCaddyfileDocs(t *testing.T) {
	mods := ourModules(t)
	subs := subdirectives(t)
	total := 0
	for fn, words := range subs {
		pages := parserPagesOf(fn, mods)
		if len(pages) == 0 {
			t.Errorf("the Caddyfile parser %s reads %v but has no page: add it to parserPages", fn.Name.Name, words)
			continue
		}
		texts := readPages(t, pages)
		for _, page := range pages {
			text, ok := texts[page]
			if !ok {
				continue
			}
			code := codeText(text)
			for _, w := range words {
				total++
				if !docNames(code, w) {
					t.Errorf("docs/config/%s does not name %q, read by the Caddyfile parser %s", page, w, fn.Name.Name)
				}
			}
		}
	}
	if total < 80 {
		t.Errorf("only %d subdirectives found in the parsers", total)
	}
}

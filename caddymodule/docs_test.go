package caddymodule

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// updateDocs rewrites the generated JSON tables of docs/config.
var updateDocs = flag.Bool("update-docs", false, "rewrite the generated field tables of docs/config")

// configDocs is the folder of the configuration reference, one page per
// directive.
var configDocs = filepath.Join("..", "docs", "config")

// modulePath is the import path prefix of this repository's types: only
// their fields are documented here (Caddy's own are Caddy's).
const modulePath = "github.com/caddy-air/caddy-air"

// typePages names the page of a config type that has one of its own, a
// block of the air app; other nested types are documented on the page of
// the type that holds them.
var typePages = map[string]string{
	"App":               "air.md",
	"Storage":           "storage.md",
	"ProviderConfig":    "provider.md",
	"HealthCheckConfig": "provider.md",
	"ModelConfig":       "model.md",
	"DeploymentConfig":  "model.md",
	"TasksConfig":       "tasks.md",
	"ResponsesConfig":   "responses.md",
	"BatchesConfig":     "files-batches.md",
	"HealthConfig":      "health.md",
	"MetricsConfig":     "metrics.md",
	"AlertsConfig":      "alerts.md",
	"WebhookConfig":     "alerts.md",
}

// modulePages names the page of a handler module documented with others
// of its family on one page, instead of air_x.md or x.md.
var modulePages = map[string]string{
	"http.handlers.air_speech":         "audio.md",
	"http.handlers.air_transcriptions": "audio.md",
	"http.handlers.air_translations":   "audio.md",
}

// docModule is one registered module of this repository and its page.
type docModule struct {
	id   string
	typ  reflect.Type // the struct type, not a pointer
	page string
}

// ourModules lists the registered modules whose types live in this
// repository, with the page of each under docs/config: http.handlers.air_x
// on air_x.md (or x.md), the app on air.md, the admin API on admin.md, the
// listener wrapper on air_errors.md.
func ourModules(t *testing.T) []docModule {
	t.Helper()
	var mods []docModule
	for _, id := range caddy.Modules() {
		info, err := caddy.GetModule(id)
		if err != nil {
			t.Fatal(err)
		}
		typ := reflect.TypeOf(info.New())
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if !strings.HasPrefix(typ.PkgPath(), modulePath) {
			continue
		}
		name := id[strings.LastIndex(id, ".")+1:]
		var page string
		switch {
		case id == "air":
			page = "air.md"
		case strings.HasPrefix(id, "admin.api."):
			page = "admin.md"
		case strings.HasPrefix(id, "air.storage."):
			page = "storage.md"
		case strings.HasPrefix(id, "air.dialects."):
			page = "provider.md"
		case modulePages[id] != "":
			page = modulePages[id]
		default:
			page = name + ".md"
			if _, err := os.Stat(filepath.Join(configDocs, page)); err != nil {
				if short := strings.TrimPrefix(name, "air_") + ".md"; docFileExists(filepath.Join(configDocs, short)) {
					page = short
				}
			}
		}
		mods = append(mods, docModule{id: id, typ: typ, page: page})
	}
	if len(mods) < 17 {
		t.Fatalf("only %d caddy-air modules registered: %v", len(mods), mods)
	}
	return mods
}

// docFileExists reports whether path names a file.
func docFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// docField is one JSON field of a module's config, found by reflection.
type docField struct {
	page   string
	owner  string // the Go type that declares it
	goName string
	json   string
	parent string // the JSON path of the nested object that holds it, "" at the top
	goType string
}

// jsonFields walks the exported fields of typ (and of the types of this
// repository it holds, through pointers, slices and maps) with their JSON
// names, each on typ's page unless its type has a page of its own.
func jsonFields(typ reflect.Type, page, parent string, seen map[reflect.Type]bool, out *[]docField) {
	if seen[typ] {
		return
	}
	seen[typ] = true
	defer delete(seen, typ)
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && !hasTag {
			if et := docElem(f.Type); et.Kind() == reflect.Struct {
				jsonFields(et, page, parent, seen, out)
			}
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		*out = append(*out, docField{page: page, owner: typ.Name(), goName: f.Name, json: name, parent: parent, goType: f.Type.String()})
		et := docElem(f.Type)
		if et.Kind() != reflect.Struct || !strings.HasPrefix(et.PkgPath(), modulePath) {
			continue
		}
		sub, path := page, docJoinPath(parent, name)
		if p, ok := typePages[et.Name()]; ok && p != page {
			sub, path = p, ""
		}
		jsonFields(et, sub, path, seen, out)
	}
}

func docJoinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// docElem is the element type behind pointers, slices, arrays and maps.
func docElem(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// allConfigFields is every JSON field of every module, on its page.
func allConfigFields(t *testing.T, mods []docModule) []docField {
	t.Helper()
	var fields []docField
	for _, m := range mods {
		page := m.page
		if p, ok := typePages[m.typ.Name()]; ok {
			page = p
		}
		jsonFields(m.typ, page, "", map[reflect.Type]bool{}, &fields)
	}
	return fields
}

var (
	fenceRe  = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	inlineRe = regexp.MustCompile("`([^`\n]+)`")
)

// codeText is the text of a Markdown page's code: its fenced blocks and
// inline code spans, where names of fields and directives are written.
func codeText(page string) string {
	var b strings.Builder
	for _, m := range fenceRe.FindAllStringSubmatch(page, -1) {
		b.WriteString(m[1])
		b.WriteByte('\n')
	}
	for _, m := range inlineRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(page, ""), -1) {
		b.WriteString(m[1])
		b.WriteByte('\n')
	}
	return b.String()
}

// docNames reports whether code names word as a whole word.
func docNames(code, word string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(word) + `($|[^A-Za-z0-9_])`).MatchString(code)
}

// readPages reads the pages named, by name, failing for a missing one.
func readPages(t *testing.T, want []string) map[string]string {
	t.Helper()
	pages := map[string]string{}
	for _, p := range want {
		if _, ok := pages[p]; ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(configDocs, p))
		if err != nil {
			t.Errorf("docs/config/%s: %v", p, err)
			continue
		}
		pages[p] = string(b)
	}
	return pages
}

// TestConfigDocs fails for every caddy-air module without its page under
// docs/config, and for every JSON field of a module's config that its page
// does not name in code: a field added without documentation. With
// -update-docs, it first rewrites each page's generated table of fields.
func TestConfigDocs(t *testing.T) {
	mods := ourModules(t)
	fields := allConfigFields(t, mods)
	var want []string
	for _, m := range mods {
		want = append(want, m.page)
	}
	for _, p := range typePages {
		want = append(want, p)
	}
	if *updateDocs {
		writeFieldTables(t, mods, fields)
	}
	pages := readPages(t, want)
	for _, f := range fields {
		text, ok := pages[f.page]
		if !ok {
			continue
		}
		if !docNames(codeText(text), f.json) {
			t.Errorf("docs/config/%s does not name the JSON field %q (%s.%s); run go test ./caddymodule -run TestConfigDocs -update-docs", f.page, f.json, f.owner, f.goName)
		}
	}
	if len(fields) < 80 {
		t.Errorf("only %d config fields found by reflection", len(fields))
	}
}

// TestConfigDocsCatchesMissing: the check above fails for a field its page
// does not name (a test of the test, so that a page cannot pass vacuously).
func TestConfigDocsCatchesMissing(t *testing.T) {
	type extra struct {
		Known   string `json:"per_user"`
		Missing string `json:"no_such_option"`
	}
	var fields []docField
	jsonFields(reflect.TypeOf(extra{}), "metrics.md", "", map[reflect.Type]bool{}, &fields)
	page := readPages(t, []string{"metrics.md"})["metrics.md"]
	var missing []string
	for _, f := range fields {
		if !docNames(codeText(page), f.json) {
			missing = append(missing, f.json)
		}
	}
	if !slices.Equal(missing, []string{"no_such_option"}) {
		t.Errorf("missing fields = %v, want [no_such_option]", missing)
	}
	if docNames("max_request_body_x", "max_request_body") || !docNames("x max_request_body <size>", "max_request_body") {
		t.Error("names does not match whole words only")
	}
}

// writeFieldTables rewrites, on every page, the table between the markers
// <!-- config:fields:<Type>:begin --> and <!-- config:fields:<Type>:end -->
// with the fields that reflection finds on that page.
func writeFieldTables(t *testing.T, mods []docModule, fields []docField) {
	t.Helper()
	docs := fieldDocs(t)
	byPage := map[string][]docField{}
	empty := map[string]string{} // page → module id, for modules without fields
	for _, m := range mods {
		empty[m.page] = m.id
	}
	for _, f := range fields {
		byPage[f.page] = append(byPage[f.page], f)
		delete(empty, f.page)
	}
	for page := range empty {
		byPage[page] = nil
	}
	for page, fs := range byPage {
		path := filepath.Join(configDocs, page)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		text := string(b)
		begin := regexp.MustCompile(`<!-- config:fields:(\w+):begin -->`).FindStringSubmatchIndex(text)
		if begin == nil {
			t.Errorf("%s has no config:fields markers", path)
			continue
		}
		end := strings.Index(text, "<!-- config:fields:"+text[begin[2]:begin[3]]+":end -->")
		if end < begin[1] {
			t.Errorf("%s: config:fields markers out of order", path)
			continue
		}
		var tbl strings.Builder
		if len(fs) == 0 {
			tbl.WriteString("\n" + noFields(empty[page]) + "\n")
		} else {
			tbl.WriteString("\n| Field | Type | Meaning |\n|---|---|---|\n")
		}
		for _, f := range fs {
			name := "`" + f.json + "`"
			if f.parent != "" {
				name += " (in `" + f.parent + "`)"
			}
			doc := docs[f.owner+"."+f.goName]
			fmt.Fprintf(&tbl, "| %s | `%s` | %s |\n", name, f.goType, strings.ReplaceAll(doc, "|", `\|`))
		}
		text = text[:begin[1]] + tbl.String() + text[end:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// noFields says how a module without fields appears in the JSON config.
func noFields(id string) string {
	name := id[strings.LastIndex(id, ".")+1:]
	switch {
	case strings.HasPrefix(id, "admin.api."):
		return "No fields: Caddy loads the module with its admin endpoint, whatever the config."
	case strings.HasPrefix(id, "caddy.listeners."):
		return fmt.Sprintf("No fields: the wrapper is `{\"wrapper\": %q}` and takes no options.", name)
	}
	return fmt.Sprintf("No fields: the handler is `{\"handler\": %q}` and takes no options.", name)
}

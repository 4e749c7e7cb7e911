package caddymodule

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The two commands of the README: run the gateway offline, and run every
// test (which .ci/run runs too).
const (
	runCommand  = "go build -o caddy ./cmd/caddy && ./caddy run --config Caddyfile.example"
	testCommand = "./scripts/test.sh"
)

// pendingPages are pages that the index and the README link to and that
// other branches write; a link to them is not a dead link.
var pendingPages = map[string]bool{}

// TestReadme keeps the README a front door: at most 250 lines, with the
// two commands, the second of them the one CI runs.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the detail into docs/", n)
	}
	for _, cmd := range []string{runCommand, testCommand} {
		if !strings.Contains(string(readme), "```sh\n"+cmd+"\n```") {
			t.Errorf("README.md lacks the command %q in a sh block of its own", cmd)
		}
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(testCommand) + `$`).Match(ci) {
		t.Errorf(".ci/run does not run the README's test command %s", testCommand)
	}
	if _, err := os.Stat(filepath.Join("..", "Caddyfile.example")); err != nil {
		t.Errorf("the README's run command needs Caddyfile.example: %v", err)
	}
}

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// docSlug is GitHub's anchor of a heading: lower case, punctuation dropped,
// spaces as hyphens.
func docSlug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = slugDrop.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// docAnchors returns the anchors of a Markdown page's headings, outside code.
func docAnchors(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(page, ""), -1) {
		out[docSlug(m[1])] = true
	}
	return out
}

// TestDocsLinks fails for every relative link of the README and of docs/
// that leads to no file, or to no heading of its file, but for the pages
// other branches write (pendingPages).
func TestDocsLinks(t *testing.T) {
	root := ".."
	var files []string
	files = append(files, "README.md", filepath.Join("bench", "README.md"))
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	read := func(rel string) (string, bool) {
		if p, ok := pages[rel]; ok {
			return p, true
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", false
		}
		pages[rel] = string(b)
		return pages[rel], true
	}
	links := 0
	for _, f := range files {
		text, ok := read(f)
		if !ok {
			t.Errorf("%s: missing", f)
			continue
		}
		for _, m := range linkRe.FindAllStringSubmatch(fenceRe.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(f), path))
			}
			if pendingPages[filepath.ToSlash(dest)] {
				continue
			}
			st, err := os.Stat(filepath.Join(root, dest))
			if err != nil {
				t.Errorf("%s: link %s leads to no file", f, target)
				continue
			}
			if frag == "" || st.IsDir() {
				continue
			}
			if page, ok := read(dest); ok && !docAnchors(page)[frag] {
				t.Errorf("%s: link %s leads to no heading of %s", f, target, dest)
			}
		}
	}
	if links < 100 {
		t.Errorf("only %d relative links checked", links)
	}
}

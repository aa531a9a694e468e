// Package docs_test keeps the documents' references true: every Markdown link and image points at
// a file (and heading) that exists, every repository path a document names exists, every test a
// document names is declared where it says, and docs/CONTRACT.md's contents list every section. It reads files only (no network, no git).
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository, relative to this package's directory (docs/), where go test runs.
const repoRoot = ".."

// skipDirs are not documents of the repository: tool caches, local stacks, run artifacts.
var skipDirs = map[string]bool{
	".git": true, "node_modules": true, ".testdata": true, ".local": true, ".cache": true,
	".venv": true, "bin": true, ".schemathesis": true, "reports": true, "testdata": true,
}

// documents are the repository's Markdown files, as paths relative to the repository root.
func documents(t *testing.T) []string {
	t.Helper()
	var docs []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repoRoot, path)
			if err != nil {
				return err
			}
			docs = append(docs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 5 {
		t.Fatalf("found %d Markdown files under %s: is the test running in docs/?", len(docs), repoRoot)
	}
	return docs
}

// prose is a document's text outside fenced code blocks, line by line (numbered from 1), with
// inline code kept: a path in backquotes is still a path the reader is sent to.
func prose(text string) map[int]string {
	out := map[int]string{}
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out[i+1] = line
		}
	}
	return out
}

var (
	mdLink  = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^(#{1,6}) +(.*?)\s*$`)
	// repoPath is a path under one of the repository's top-level directories, as prose names it.
	repoPath = regexp.MustCompile(`(?:api|clients|cmd|deploy|docs|internal|loadtest|scripts|sysctl|tools)/[A-Za-z0-9_.\-/]*`)
)

// section is one heading of a document: its level (the number of '#'), its title and the anchor
// GitHub gives it.
type section struct {
	level         int
	title, anchor string
}

// sections are a document's headings outside code blocks. The anchor is GitHub's: lower case,
// punctuation but '-' and '_' dropped, spaces as '-', a repeated anchor numbered -1, -2, ...
func sections(text string) []section {
	var out []section
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[2]) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[b.String()]; n > 0 {
			a += "-" + strconv.Itoa(n)
		}
		seen[b.String()]++
		out = append(out, section{level: len(m[1]), title: m[2], anchor: a})
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(path)))
	return err == nil
}

// TestDocumentLinksResolve: every relative link or image of every document names a file that
// exists, and a #fragment names one of that document's headings.
func TestDocumentLinksResolve(t *testing.T) {
	t.Parallel()
	eachProseLine(t, func(doc string, n int, line string) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
				if !exists(path) {
					t.Errorf("%s:%d: link to %s: no such file", doc, n, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			linked, err := os.ReadFile(filepath.Join(repoRoot, path))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(sections(string(linked)), func(s section) bool { return s.anchor == frag }) {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", doc, n, target, path, frag)
			}
		}
	})
}

// TestDocumentPathsExist: every repository path a document names in its prose (docs/X.md,
// internal/pkg/file.go, scripts/x.sh, a directory) exists. Patterns and placeholders (a '*',
// '<', '{', "PID", "PORT" in the path) are not paths and are left out; so is a path inside a URL.
func TestDocumentPathsExist(t *testing.T) {
	t.Parallel()
	eachProseLine(t, func(doc string, n int, line string) {
		for _, loc := range repoPath.FindAllStringIndex(line, -1) {
			if loc[0] > 0 && strings.ContainsRune("/.-_@:~$", rune(line[loc[0]-1])) ||
				loc[0] > 0 && isWordByte(line[loc[0]-1]) {
				continue // part of a URL, a longer path or a word
			}
			path := strings.TrimRight(line[loc[0]:loc[1]], ".-")
			if end := loc[1]; end < len(line) && strings.ContainsRune("*<{", rune(line[end])) {
				continue
			}
			if strings.Contains(path, "PID") || strings.Contains(path, "PORT") {
				continue
			}
			if !exists(path) {
				t.Errorf("%s:%d: names %s, which does not exist", doc, n, path)
			}
		}
	})
}

// testRef is a test a document names by its file and its function (file_test.go:TestName), as
// SECURITY.md names the proof of each control.
var testRef = regexp.MustCompile(`((?:api|clients|cmd|deploy|docs|internal|loadtest|scripts|sysctl|tools)/[A-Za-z0-9_.\-/]*_test\.go):((?:Test|Benchmark|Fuzz|Example)\w*)`)

// TestDocumentTestNamesExist: every test a document names as file_test.go:TestName is declared in
// that file, so that a document does not cite a test that a move deleted or renamed as the proof
// of what it says. (A missing file is TestDocumentPathsExist's to report.)
func TestDocumentTestNamesExist(t *testing.T) {
	t.Parallel()
	eachProseLine(t, func(doc string, n int, line string) {
		for _, m := range testRef.FindAllStringSubmatch(line, -1) {
			src, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(m[1])))
			if err != nil {
				continue
			}
			if !regexp.MustCompile(`(?m)^func ` + m[2] + `\(`).Match(src) {
				t.Errorf("%s:%d: names %s:%s, which that file does not declare", doc, n, m[1], m[2])
			}
		}
	})
}

// eachProseLine calls f with every prose line of every document, numbered as prose numbers them.
func eachProseLine(t *testing.T, f func(doc string, n int, line string)) {
	t.Helper()
	for _, doc := range documents(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot, doc))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(string(text)) {
			f(doc, n, line)
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// TestContractContentsListEverySection: docs/CONTRACT.md's contents link every top-level
// section, so a section added without its line in the contents fails here.
func TestContractContentsListEverySection(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(filepath.Join(repoRoot, "docs/CONTRACT.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	start := strings.Index(s, "\n## Contents\n")
	if start < 0 {
		t.Fatal("docs/CONTRACT.md has no \"## Contents\" section")
	}
	contents := s[start+len("\n## Contents\n"):]
	if end := strings.Index(contents, "\n## "); end >= 0 {
		contents = contents[:end]
	}
	for _, sec := range sections(s) {
		if sec.level == 2 && sec.title != "Contents" && !strings.Contains(contents, "(#"+sec.anchor+")") {
			t.Errorf("docs/CONTRACT.md: section %q is not in its contents (a line linking #%s)", sec.title, sec.anchor)
		}
	}
}

// apiName is a name docs/CONTRACT.md may use for an api/openapi.yaml schema (two or more capitalised
// words: `PopupInput`) or operation (lower camel case: `popupStats`).
var apiName = regexp.MustCompile("`([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)`")

// notAPINames are names of that form in docs/CONTRACT.md that are not openapi.yaml's: a Go
// constant, a partition's name pattern, a driver parameter and a CSV column in an example.
var notAPINames = map[string]bool{"ClockSkew": true, "pYYYYMMDD": true, "parseTime": true, "userId": true}

// TestContractNamesOpenAPIShapes: docs/CONTRACT.md leaves the HTTP shapes to api/openapi.yaml and
// names the schema or operation to open instead, so every such name must be one the spec has (a
// schema, an inline schema's title, a parameter or an operationId) or an alert of
// deploy/prometheus/popup-alerts.yml: a renamed schema fails here, not in a reader's search.
func TestContractNamesOpenAPIShapes(t *testing.T) {
	t.Parallel()
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	spec, alerts := read("api/openapi.yaml"), read("deploy/prometheus/popup-alerts.yml")
	known := map[string]bool{}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^    ([A-Za-z0-9]+):\s*$`),      // components' schemas, parameters, responses
		regexp.MustCompile(`(?m)operationId:\s*([A-Za-z0-9]+)`), // operations
		regexp.MustCompile(`(?m)title:\s*([A-Za-z0-9]+)\s*$`),   // inline schemas
		regexp.MustCompile(`(?m)alert:\s*([A-Za-z0-9]+)`),       // alerts
	} {
		for _, m := range re.FindAllStringSubmatch(spec+"\n"+alerts, -1) {
			known[m[1]] = true
		}
	}
	checked := 0
	for n, line := range prose(read("docs/CONTRACT.md")) {
		for _, m := range apiName.FindAllStringSubmatch(line, -1) {
			if notAPINames[m[1]] {
				continue
			}
			checked++
			if !known[m[1]] {
				t.Errorf("docs/CONTRACT.md:%d names `%s`, which is no schema, operation or parameter of api/openapi.yaml (nor an alert)", n, m[1])
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d names in docs/CONTRACT.md: is the pattern still right?", checked)
	}
}

// TestDocumentSizes holds the front door and the figure documents to their budgets: README is
// what it is, the two commands, a tour and links; PERFORMANCE and RELIABILITY hold the current
// figures with their commands, not their history (CONTRIBUTING.md, "Documents describe the
// present"). A figure measured again replaces the old one where it stands. A KB is read as 1,000
// bytes, the stricter reading of the budget.
func TestDocumentSizes(t *testing.T) {
	for _, d := range []struct {
		path string
		max  int
	}{{"README.md", 12_000}, {"docs/PERFORMANCE.md", 30_000}, {"docs/RELIABILITY.md", 30_000}} {
		fi, err := os.Stat(filepath.Join(repoRoot, d.path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > int64(d.max) {
			t.Errorf("%s is %d bytes, over its %d: trim or replace in place, history goes in commit messages", d.path, fi.Size(), d.max)
		}
	}
}

//go:build clients

package swift

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGuideUsesTheGeneratedAPI checks docs/CLIENTS.md's iOS class (its ```swift block) against
// the swift6 client scripts/clients.sh generated into POPUP_CLIENTS_SWIFT_DIR: no Swift toolchain
// can be had here to compile it, so this does the part of a compiler that a generator change
// breaks. Every call of a generated function or initialiser passes argument labels that one of
// its declarations takes, in order, with every label it leaves out defaulted; every type and
// member the class names is declared by the generated client, by the class itself, or is one
// of the few Swift and Foundation names it uses.
func TestGuideUsesTheGeneratedAPI(t *testing.T) {
	dir := os.Getenv("POPUP_CLIENTS_SWIFT_DIR")
	if dir == "" {
		t.Skip("POPUP_CLIENTS_SWIFT_DIR (the generated swift6 client) is not set: scripts/clients.sh test sets it")
	}
	doc, err := os.ReadFile("../../docs/CLIENTS.md")
	require.NoError(t, err)
	guide := guideBlock(t, string(doc))
	gen := readGenerated(t, dir)

	calls := callsIn(guide)
	require.NotEmpty(t, calls)
	checked := 0
	for _, c := range calls {
		decls := gen.funcs[c.name]
		if c.qual != "" && gen.types[c.qual] {
			decls = gen.methods[c.qual+"."+c.name]
		}
		if gen.types[c.name] {
			decls = gen.inits[c.name]
			if len(decls) == 0 {
				continue // an enum or a type without an initialiser of its own: not called here
			}
		}
		if len(decls) == 0 {
			continue // not the generated client's
		}
		checked++
		assert.True(t, slices.ContainsFunc(decls, func(d []param) bool { return accepts(d, c.labels) }),
			"the guide calls %s with labels %v; the generated client declares %v", c.call(), c.labels, decls)
	}
	// the functions and initialisers of the generated client the guide calls
	assert.GreaterOrEqual(t, checked, 6, "calls of the generated client found in the guide")

	own := declaredIn(guide)
	for _, m := range regexp.MustCompile(`\.([A-Za-z_]\w*)`).FindAllStringSubmatch(guide, -1) {
		name := m[1]
		assert.True(t, gen.members[name] || own[name] || swiftMembers[name],
			"the guide names the member .%s, which the generated client does not declare", name)
	}
	for _, m := range regexp.MustCompile(`\b([A-Z]\w*)\b`).FindAllStringSubmatch(guide, -1) {
		name := m[1]
		assert.True(t, gen.types[name] || own[name] || swiftTypes[name],
			"the guide names the type %s, which the generated client does not declare", name)
	}
}

// The Swift and Foundation names the guide's class uses (the rest are the generated client's).
var (
	swiftTypes   = set("Foundation", "PopupClient", "Sendable", "String", "Int", "Double", "UInt64", "Bool", "Void", "Task", "UUID", "HTTPURLResponse")
	swiftMembers = set("value", "cancel", "sleep", "keys", "contains", "lowercased", "uuidString")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// guideBlock returns the guide's swift code block, strings and comments blanked.
func guideBlock(t *testing.T, doc string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n```swift\n")
	require.True(t, ok, "docs/CLIENTS.md has no swift block")
	block, _, ok := strings.Cut(rest, "\n```\n")
	require.True(t, ok, "docs/CLIENTS.md's swift block is not closed")
	return blank(block)
}

var (
	stringLit  = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)
	comment    = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)
	typeDecl   = regexp.MustCompile(`\b(?:class|struct|enum|actor|protocol|typealias)\s+([A-Za-z_]\w*)`)
	funcDecl   = regexp.MustCompile(`\bfunc\s+([A-Za-z_]\w*)\s*(?:<[^>(]*>)?\s*\(`)
	initDecl   = regexp.MustCompile(`\binit[?!]?\s*(?:<[^>(]*>)?\s*\(`)
	memberDecl = regexp.MustCompile(`\b(?:case|var|let|func)\s+([A-Za-z_]\w*)`)
	callSite   = regexp.MustCompile(`(?:\b([A-Za-z_]\w*)\s*\.\s*)?\b([A-Za-z_]\w*)\s*\(`)
	argLabel   = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*:`)
)

// blank empties string literals and removes comments, so that neither is read as code.
func blank(src string) string {
	return comment.ReplaceAllString(stringLit.ReplaceAllString(src, `""`), "")
}

// A param is one declared parameter: its argument label ("_": none) and whether it has a default.
type param struct {
	label     string
	defaulted bool
}

// generated is what the generated client declares.
type generated struct {
	types   map[string]bool
	members map[string]bool
	funcs   map[string][][]param // by name, every type's
	methods map[string][][]param // by "Type.name"
	inits   map[string][][]param // by type
}

func readGenerated(t *testing.T, dir string) *generated {
	t.Helper()
	g := &generated{types: map[string]bool{}, members: map[string]bool{}, funcs: map[string][][]param{},
		methods: map[string][][]param{}, inits: map[string][][]param{}}
	files := 0
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".swift") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		g.add(blank(string(raw)))
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, files, "no .swift file under %s", dir)
	return g
}

// add indexes one source file. A function or initialiser belongs to the innermost type whose
// braces hold it.
func (g *generated) add(src string) {
	type body struct {
		name       string
		start, end int
	}
	var bodies []body
	for _, m := range typeDecl.FindAllStringSubmatchIndex(src, -1) {
		name := src[m[2]:m[3]]
		g.types[name] = true
		open := strings.IndexByte(src[m[1]:], '{')
		if open < 0 {
			continue
		}
		start := m[1] + open
		bodies = append(bodies, body{name: name, start: start, end: start + closing(src[start:], '{', '}')})
	}
	owner := func(pos int) string {
		name, size := "", len(src)+1
		for _, b := range bodies {
			if b.start < pos && pos < b.end && b.end-b.start < size {
				name, size = b.name, b.end-b.start
			}
		}
		return name
	}
	for _, m := range memberDecl.FindAllStringSubmatch(src, -1) {
		g.members[m[1]] = true
	}
	for _, m := range funcDecl.FindAllStringSubmatchIndex(src, -1) {
		name, params := src[m[2]:m[3]], paramsAt(src, m[1]-1)
		g.funcs[name] = append(g.funcs[name], params)
		key := owner(m[0]) + "." + name
		g.methods[key] = append(g.methods[key], params)
	}
	for _, m := range initDecl.FindAllStringIndex(src, -1) {
		if typ := owner(m[0]); typ != "" {
			g.inits[typ] = append(g.inits[typ], paramsAt(src, m[1]-1))
		}
	}
}

// closing returns the index in s (which starts with open) just past the bracket that closes it.
func closing(s string, open, close byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(s)
}

// splitTop splits the list inside the parentheses at s[0] at its top-level commas.
func splitTop(s string) []string {
	inner := s[1 : closing(s, '(', ')')-1]
	var parts []string
	depth, angle, from := 0, 0, 0
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; {
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == '<' && (i == 0 || inner[i-1] != '.'): // not ..<
			angle++
		case c == '>' && (i == 0 || inner[i-1] != '-') && angle > 0: // not ->
			angle--
		case c == ',' && depth == 0 && angle == 0:
			parts = append(parts, inner[from:i])
			from = i + 1
		}
	}
	if strings.TrimSpace(inner[from:]) != "" {
		parts = append(parts, inner[from:])
	}
	return parts
}

// paramsAt reads the parameter list of a declaration whose '(' is at src[open].
func paramsAt(src string, open int) []param {
	var ps []param
	for _, p := range splitTop(src[open:]) {
		decl, def, _ := strings.Cut(p, "=")
		names, _, _ := strings.Cut(decl, ":")
		f := strings.Fields(names)
		if len(f) == 0 {
			continue
		}
		ps = append(ps, param{label: f[0], defaulted: strings.TrimSpace(def) != ""})
	}
	return ps
}

// A call is a call site in the guide: the name called, what qualifies it (PublicAPI in
// PublicAPI.postAction), and its argument labels ("_" for an unlabelled argument).
type call struct {
	qual, name string
	labels     []string
}

func (c call) call() string {
	if c.qual == "" {
		return c.name
	}
	return c.qual + "." + c.name
}

// callsIn returns the call sites of src, declarations (func NAME() left out.
func callsIn(src string) []call {
	var calls []call
	for _, m := range callSite.FindAllStringSubmatchIndex(src, -1) {
		if strings.HasSuffix(strings.TrimSpace(src[:m[4]]), "func") || src[m[4]:m[5]] == "init" {
			continue
		}
		c := call{name: src[m[4]:m[5]]}
		if m[2] >= 0 {
			c.qual = src[m[2]:m[3]]
		}
		for _, a := range splitTop(src[m[1]-1:]) {
			l := argLabel.FindStringSubmatch(a)
			if l == nil {
				c.labels = append(c.labels, "_")
				continue
			}
			c.labels = append(c.labels, l[1])
		}
		calls = append(calls, c)
	}
	return calls
}

// accepts says whether a declaration with params takes a call with labels: the labels are the
// params' in order, and every param left out has a default.
func accepts(params []param, labels []string) bool {
	i := 0
	for _, p := range params {
		if i < len(labels) && labels[i] == p.label {
			i++
			continue
		}
		if !p.defaulted {
			return false
		}
	}
	return i == len(labels)
}

// declaredIn returns the names src declares itself: its types, functions, properties and
// constants, parameters and closure arguments.
func declaredIn(src string) map[string]bool {
	names := map[string]bool{}
	for _, re := range []*regexp.Regexp{typeDecl, memberDecl, regexp.MustCompile(`\b([A-Za-z_]\w*)\s+in\b`),
		regexp.MustCompile(`\blet\s+([A-Za-z_]\w*)`)} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			names[m[1]] = true
		}
	}
	return names
}

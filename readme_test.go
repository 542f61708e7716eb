package ddbindex

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The API reference (docs/reference.md) names every exported identifier of the root
// package and of packages stream, migrate, schema and ops, and nothing
// else: a type, function, constant or variable as `Name`, a method as
// `Type.Method` (those of the other packages with the prefix "stream.",
// "migrate.", "schema." or "ops."). The
// methods every error type has (Error, Is, Unwrap, Code) and String are
// left out.
func TestREADMEAPIReference(t *testing.T) {
	exported := map[string]bool{}
	for _, pkg := range []struct{ dir, prefix string }{{".", ""}, {"stream", "stream."}, {"migrate", "migrate."}, {"schema", "schema."}, {"ops", "ops."}} {
		for _, name := range exportedNames(t, pkg.dir) {
			exported[pkg.prefix+name] = true
		}
	}
	ref, err := os.ReadFile("docs/reference.md")
	require.NoError(t, err)
	section := apiSection(t, string(ref))
	mentioned := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:stream\\.|migrate\\.|schema\\.|ops\\.)?[A-Z][A-Za-z0-9_]*(?:\\.[A-Z][A-Za-z0-9_]*)?)").FindAllStringSubmatch(section, -1) {
		mentioned[m[1]] = true
	}
	var missing, unknown []string
	for name := range exported {
		if !mentioned[name] {
			missing = append(missing, name)
		}
	}
	for name := range mentioned {
		if !exported[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(unknown)
	require.Empty(t, missing, "exported identifiers docs/reference.md does not name")
	require.Empty(t, unknown, "names in docs/reference.md that nothing exports")
	require.Greater(t, len(exported), 60, "the walk found the packages' identifiers")
}

// apiSection returns docs/reference.md after its "# API reference" title,
// up to a next section if it has one.
func apiSection(t *testing.T, ref string) string {
	_, rest, ok := strings.Cut(ref, "# API reference\n")
	require.True(t, ok, "docs/reference.md has no \"# API reference\" title")
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// exportedNames lists the exported identifiers of the package in dir, from
// its non-test sources: Name for types, functions, constants and variables,
// Type.Method for methods.
func exportedNames(t *testing.T, dir string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	require.NoError(t, err)
	var out []string
	skip := map[string]bool{"Error": true, "Is": true, "Unwrap": true, "Code": true, "String": true}
	for _, p := range pkgs {
		files := make([]*ast.File, 0, len(p.Files))
		for _, f := range p.Files {
			files = append(files, f)
		}
		d, err := doc.NewFromFiles(fset, files, "example.com/"+p.Name)
		require.NoError(t, err)
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				for _, n := range v.Names {
					if ast.IsExported(n) {
						out = append(out, n)
					}
				}
			}
		}
		values(d.Consts)
		values(d.Vars)
		for _, f := range d.Funcs {
			out = append(out, f.Name)
		}
		for _, typ := range d.Types {
			out = append(out, typ.Name)
			values(typ.Consts)
			values(typ.Vars)
			for _, f := range typ.Funcs {
				out = append(out, f.Name)
			}
			for _, m := range typ.Methods {
				if !skip[m.Name] {
					out = append(out, typ.Name+"."+m.Name)
				}
			}
		}
	}
	return out
}

// TestREADMERunbookSnippet: every line of the Go block of the runbook
// (docs/migration.md) is a line of Example_runbook (or of the model it declares), in
// the same order, so the README's code compiles and runs as the example
// does. Trailing comments and runs of spaces do not count.
func TestREADMERunbookSnippet(t *testing.T) {
	guide, err := os.ReadFile("docs/migration.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(guide), "\n## The runbook\n")
	require.True(t, ok, "docs/migration.md has no runbook section")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```go\n")
	require.True(t, ok, "the runbook section has no Go block")
	block, _, ok = strings.Cut(block, "\n```\n")
	require.True(t, ok, "the runbook's Go block does not end")

	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, example, ok := strings.Cut(string(src), "\ntype MigratingTicket struct {\n")
	require.True(t, ok, "example_test.go declares no MigratingTicket")
	example = "type MigratingTicket struct {\n" + example
	example, _, ok = strings.Cut(example, "// Output:")
	require.True(t, ok)
	require.Contains(t, example, "\nfunc Example_runbook() {\n", "Example_runbook follows MigratingTicket")

	comment := regexp.MustCompile(`\s+// .*$`)
	norm := func(text string) []string {
		var out []string
		for _, line := range strings.Split(text, "\n") {
			line = strings.Join(strings.Fields(comment.ReplaceAllString(line, "")), " ")
			if line != "" && !strings.HasPrefix(line, "//") {
				out = append(out, line)
			}
		}
		return out
	}
	want, have := norm(block), norm(example)
	require.Greater(t, len(want), 10, "the guide's block has the runbook's calls")
	i := 0
	for _, line := range want {
		for i < len(have) && have[i] != line {
			i++
		}
		require.Less(t, i, len(have), "the runbook's line %q is not in Example_runbook (after the lines before it)", line)
		i++
	}
}

// TestREADMEFirstProgram: the README's first program is the body of
// Example_firstProgram (example_readme_test.go), line for line with the
// indentation stripped, so the README's code compiles as the example does.
func TestREADMEFirstProgram(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## A first program\n")
	require.True(t, ok, "README.md has no \"## A first program\" section")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "\n```go\n")
	require.True(t, ok, "the first program section has no Go block")
	block, _, ok = strings.Cut(block, "\n```\n")
	require.True(t, ok, "the first program's Go block does not end")

	src, err := os.ReadFile("example_readme_test.go")
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(src), "\nfunc Example_firstProgram() {\n")
	require.True(t, ok, "example_readme_test.go has no Example_firstProgram")
	body, _, ok = strings.Cut(body, "\n}\n")
	require.True(t, ok, "Example_firstProgram does not end")

	strip := func(text string) []string {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		for i, line := range lines {
			lines[i] = strings.TrimSpace(line)
		}
		return lines
	}
	want, have := strip(body), strip(block)
	require.Greater(t, len(want), 20, "the example has the first program's calls")
	require.Equal(t, want, have, "the README's first program differs from Example_firstProgram's body")
}

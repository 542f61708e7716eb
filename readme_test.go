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

// The README's API reference names every exported identifier of the root
// package and of package stream, and nothing else: a type, function,
// constant or variable as `Name`, a method as `Type.Method` (stream's with
// the prefix "stream."). The methods every error type has (Error, Is,
// Unwrap, Code) and String are left out.
func TestREADMEAPIReference(t *testing.T) {
	exported := map[string]bool{}
	for _, pkg := range []struct{ dir, prefix string }{{".", ""}, {"stream", "stream."}} {
		for _, name := range exportedNames(t, pkg.dir) {
			exported[pkg.prefix+name] = true
		}
	}
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	section := apiSection(t, string(readme))
	mentioned := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:stream\\.)?[A-Z][A-Za-z0-9_]*(?:\\.[A-Z][A-Za-z0-9_]*)?)").FindAllStringSubmatch(section, -1) {
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
	require.Empty(t, missing, "exported identifiers the README's API reference does not name")
	require.Empty(t, unknown, "names in the README's API reference that nothing exports")
	require.Greater(t, len(exported), 60, "the walk found the packages' identifiers")
}

// apiSection returns the README's "## API reference" section.
func apiSection(t *testing.T, readme string) string {
	_, rest, ok := strings.Cut(readme, "\n## API reference\n")
	require.True(t, ok, "README.md has no \"## API reference\" section")
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

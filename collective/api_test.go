package collective_test

import (
	"bytes"
	"flag"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distbench/distbench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata/api.golden from the package's exported API")

// TestAPI keeps the user-facing API in view: every exported declaration of
// package collective, without its doc comment, is compared with
// testdata/api.golden, so that a new export, or a changed signature, shows
// up as a diff in review. What only strategies and transports implement
// belongs in collective/driver, not here. After an intended change:
//
//	go test ./collective -run TestAPI -update
func TestAPI(t *testing.T) {
	got := exportedAPI(t, ".")
	golden.Check(t, filepath.Join("testdata", "api.golden"), got, *update)
}

// exportedAPI prints the exported declarations of the package in dir, as
// go/doc groups them (constants, variables, functions, then each type with
// its constructors and methods), with comments stripped.
func exportedAPI(t *testing.T, dir string) []byte {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%d packages in %s, want 1", len(pkgs), dir)
	}
	var files []*ast.File
	for _, p := range pkgs {
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/distbench/distbench/collective")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.WriteString("package " + p.Name + " // import \"" + p.ImportPath + "\"\n")
	decl := func(n ast.Decl) {
		ast.Inspect(n, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				n.Doc = nil
			case *ast.FuncDecl:
				n.Doc, n.Body = nil, nil
			case *ast.Field:
				n.Doc, n.Comment = nil, nil
			case *ast.ValueSpec:
				n.Doc, n.Comment = nil, nil
			case *ast.TypeSpec:
				n.Doc, n.Comment = nil, nil
			}
			return true
		})
		var b bytes.Buffer
		if err := (&printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}).Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		// The printer keeps the line breaks of the stripped comments.
		buf.WriteString("\n")
		for l := range strings.Lines(b.String()) {
			if strings.TrimSpace(l) != "" {
				buf.WriteString(l)
			}
		}
		buf.WriteString("\n")
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			decl(v.Decl)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			decl(f.Decl)
		}
	}
	values(p.Consts)
	values(p.Vars)
	funcs(p.Funcs)
	for _, typ := range p.Types {
		decl(typ.Decl)
		values(typ.Consts)
		values(typ.Vars)
		funcs(typ.Funcs)
		funcs(typ.Methods)
	}
	// Formatting the whole realigns what the dropped lines misaligned.
	out, err := format.Source(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

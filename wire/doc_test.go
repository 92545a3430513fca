package wire

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/api.md's wire types section from the types")

const (
	apiDoc     = "../docs/api.md"
	beginMark  = "<!-- Made from package wire by `go test ./wire -update`: edit the types' comments, not this section. -->\n"
	endMark    = "<!-- End of the wire types. -->\n"
	docHeading = "## Wire types\n"
)

// fileOrder is the order of the doc's sections: every file of the package
// that declares a type is in it.
var fileOrder = []string{"errors.go", "sandbox.go", "exec.go", "files.go", "tasks.go", "policy.go", "audit.go", "projects.go", "apikeys.go", "egress.go", "secrets.go", "caches.go", "pools.go"}

// wireType is one struct type of the package as the doc shows it.
type wireType struct {
	Name, Doc string
	Fields    []wireField
}

type wireField struct {
	JSON, Type, Doc string
}

// parseTypes reads the package's struct types, in fileOrder and then
// source order.
func parseTypes(t *testing.T) []wireType {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]wireType{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, sp := range gd.Specs {
				ts := sp.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() {
					continue
				}
				if gd.Doc == nil {
					t.Errorf("type %s has no doc comment", ts.Name.Name)
				}
				byFile[name] = append(byFile[name], wireType{Name: ts.Name.Name, Doc: oneLine(gd.Doc.Text()), Fields: fieldsOf(t, ts.Name.Name, st)})
			}
		}
	}
	var out []wireType
	for _, name := range fileOrder {
		out = append(out, byFile[name]...)
		delete(byFile, name)
	}
	for name := range byFile {
		t.Errorf("%s declares types but is not in fileOrder", name)
	}
	return out
}

func fieldsOf(t *testing.T, typ string, st *ast.StructType) []wireField {
	var out []wireField
	for _, f := range st.Fields.List {
		if len(f.Names) != 1 || !f.Names[0].IsExported() {
			t.Errorf("%s: a field with %d names or none: give each field its own line and comment", typ, len(f.Names))
			continue
		}
		name := f.Names[0].Name
		if f.Tag == nil {
			t.Errorf("%s.%s has no json tag", typ, name)
			continue
		}
		tag, _ := strconv.Unquote(f.Tag.Value)
		js, opts, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if js == "-" {
			continue
		}
		typ := jsonType(f.Type)
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			typ += ", omitted when empty"
		}
		if f.Doc == nil {
			t.Errorf("%s.%s has no doc comment", typ, name)
		}
		out = append(out, wireField{JSON: js, Type: typ, Doc: oneLine(f.Doc.Text())})
	}
	return out
}

func oneLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// jsonType names a field's JSON type for the doc.
func jsonType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return jsonType(e.X)
	case *ast.ArrayType:
		if id, ok := e.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return "string (base64)"
		}
		return "[" + jsonType(e.Elt) + "]"
	case *ast.MapType:
		return "{" + jsonType(e.Key) + ": " + jsonType(e.Value) + "}"
	case *ast.SelectorExpr:
		switch x := e.X.(*ast.Ident).Name + "." + e.Sel.Name; x {
		case "time.Time":
			return "time (RFC 3339)"
		case "time.Duration":
			return "integer (nanoseconds)"
		case "json.RawMessage":
			return "JSON"
		default:
			return x
		}
	case *ast.Ident:
		switch e.Name {
		case "string":
			return "string"
		case "bool":
			return "boolean"
		case "float32", "float64":
			return "number"
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
			return "integer"
		}
		return "`" + e.Name + "`"
	}
	return fmt.Sprintf("%T", e)
}

// render is the doc's section for the types.
func render(types []wireType) string {
	var b strings.Builder
	b.WriteString("Every body above, field by field, as package wire declares it.\n\n")
	for _, wt := range types {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", wt.Name, wt.Doc)
		if len(wt.Fields) == 0 {
			continue
		}
		b.WriteString("| field | type | meaning |\n|---|---|---|\n")
		for _, f := range wt.Fields {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.JSON, f.Type, f.Doc)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// section splits the doc around its wire types section.
func section(doc string) (before, inside, after string, ok bool) {
	i := strings.Index(doc, beginMark)
	j := strings.Index(doc, endMark)
	if i < 0 || j < i {
		return "", "", "", false
	}
	return doc[:i+len(beginMark)], doc[i+len(beginMark) : j], doc[j:], true
}

// TestAPIDocNamesEveryField: docs/api.md's wire types section is made
// from the types, so a field the types have and the doc lacks (or the
// other way round) fails here; go test ./wire -update rewrites it.
func TestAPIDocNamesEveryField(t *testing.T) {
	types := parseTypes(t)
	raw, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	want := render(types)
	before, inside, after, ok := section(doc)
	if *update {
		if !ok {
			before, after = strings.TrimRight(doc, "\n")+"\n\n"+docHeading+"\n"+beginMark, endMark
		}
		if err := os.WriteFile(apiDoc, []byte(before+want+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !ok {
		t.Fatalf("%s has no wire types section (between %q and %q): run go test ./wire -update", apiDoc, beginMark, endMark)
	}
	for _, wt := range types {
		for _, f := range wt.Fields {
			if !strings.Contains(typeSection(inside, wt.Name), "| `"+f.JSON+"` |") {
				t.Errorf("%s: %s's field %q is not in its section", apiDoc, wt.Name, f.JSON)
			}
		}
	}
	if inside != want {
		t.Errorf("%s's wire types section is not what the types say: run go test ./wire -update", apiDoc)
	}
}

// typeSection is the part of the wire types section under ### name.
func typeSection(s, name string) string {
	_, rest, ok := strings.Cut(s, "### "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n### "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// The doc check is not vacuous: a field removed from the doc is named.
func TestAPIDocCheckCatchesAMissingField(t *testing.T) {
	types := parseTypes(t)
	doc := render(types)
	cut := strings.Replace(doc, "| `write_scope` |", "| `write_scop` |", 1)
	if cut == doc {
		t.Fatal("the rendered doc has no write_scope row")
	}
	if strings.Contains(typeSection(cut, "Isolation"), "| `write_scope` |") {
		t.Error("write_scope still found after it was removed")
	}
	if !strings.Contains(typeSection(doc, "Isolation"), "| `write_scope` |") || strings.Contains(typeSection(doc, "Sandbox"), "| `write_scope` |") {
		t.Error("typeSection does not keep to its type")
	}
}

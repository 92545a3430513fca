package build

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

func TestParse(t *testing.T) {
	src := `# a build
FROM base
egress:
  - go
  - npm
RUN echo one > made.txt
RUN ["/bin/echo", "two"]
COPY a.txt sub/b.txt /opt/
COPY c.txt rel/c.txt
ENV A=1 B=2
ENV C three words
WORKDIR app
WORKDIR /srv
COPY d.txt .
USER nobody
RUN a \
  b
`
	f, err := Parse("airlock.template", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.From != "base" || !slices.Equal(f.Egress, []string{"go", "npm"}) {
		t.Errorf("from %q egress %q", f.From, f.Egress)
	}
	want := []Step{
		{6, "RUN", []string{"/bin/sh", "-c", "echo one > made.txt"}},
		{7, "RUN", []string{"/bin/echo", "two"}},
		{8, "COPY", []string{"a.txt", "sub/b.txt", "/opt/"}},
		{9, "COPY", []string{"c.txt", "/workspace/rel/c.txt"}},
		{10, "ENV", []string{"A=1", "B=2"}},
		{11, "ENV", []string{"C=three words"}},
		{12, "WORKDIR", []string{"/workspace/app"}},
		{13, "WORKDIR", []string{"/srv"}},
		{14, "COPY", []string{"d.txt", "/srv"}},
		{15, "USER", []string{"nobody"}},
		{16, "RUN", []string{"/bin/sh", "-c", "a    b"}},
	}
	if len(f.Steps) != len(want) {
		t.Fatalf("steps %+v", f.Steps)
	}
	for i, s := range f.Steps {
		if s.Line != want[i].Line || s.Op != want[i].Op || !slices.Equal(s.Args, want[i].Args) {
			t.Errorf("step %d: %+v, want %+v", i, s, want[i])
		}
	}
	if f, err := Parse("x", []byte("FROM b\negress: debian, go\n")); err != nil || !slices.Equal(f.Egress, []string{"debian", "go"}) {
		t.Errorf("inline egress: %+v %v", f, err)
	}
}

// Bad input: each a clear error naming its line, of kind invalid.
func TestParseBad(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown instruction", "FROM b\nRUN x\nADD a /b\n", "f:3: unknown instruction \"ADD\""},
		{"RUN before FROM", "# c\n\nRUN make\nFROM b\n", "f:3: RUN before FROM"},
		{"COPY up", "FROM b\nCOPY ../secret /x\n", "f:2: COPY ../secret: leads out of the context directory"},
		{"COPY up inside", "FROM b\nCOPY a/../../etc/passwd /x\n", "f:2: COPY a/../../etc/passwd: leads out"},
		{"COPY absolute", "FROM b\nCOPY /etc/passwd /x\n", "f:2: COPY /etc/passwd: sources are paths in the context directory"},
		{"COPY one arg", "FROM b\nCOPY a\n", "f:2: COPY takes SRC... DEST"},
		{"unknown preset", "FROM b\negress:\n  - go\n  - pipy\n", "f:4: egress: unknown preset \"pipy\""},
		{"unknown preset inline", "FROM b\negress: npm,nuget\n", "f:2: egress: unknown preset \"nuget\""},
		{"two egress", "FROM b\negress: npm\negress: go\n", "f:3: a second egress: section"},
		{"two FROM", "FROM b\nFROM c\n", "f:2: a second FROM"},
		{"bad FROM", "FROM ../x\n", "f:1: FROM \"../x\": not a template name"},
		{"no FROM", "# nothing\n", "f: no FROM"},
		{"bad RUN json", "FROM b\nRUN [\"a\",\n", "f:2: RUN [...]"},
		{"empty RUN", "FROM b\nRUN\n", "f:2: RUN needs a command"},
		{"bad ENV", "FROM b\nENV =x\n", "f:2: ENV \"=x\": use K=V"},
		{"dangling continuation", "FROM b\nRUN a \\", "f:2: the file ends inside a continued line"},
		{"USER two words", "FROM b\nUSER a b\n", "f:2: USER takes one name"},
	} {
		_, err := Parse("f", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: %v, want an invalid error with %q", c.name, err, c.want)
		}
	}
}

package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/classify"
	"github.com/airlock-dev/airlock/internal/errdefs"
	"github.com/airlock-dev/airlock/internal/netpolicy"
	"go.yaml.in/yaml/v3"
)

// Action is what happens to a command.
type Action string

// The actions, from least to most restrictive.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

func (a Action) rank() int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2 // Deny, and anything unknown fails closed
}

func validAction(a Action) bool { return a == Allow || a == Ask || a == Deny }

// Stricter returns the more restrictive of a and b.
func Stricter(a, b Action) Action {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Rule tightens the decision for the commands it matches. Every field
// given must match (a rule with only an id matches nothing). Rules can
// only ask or deny: a class is relaxed under classes, never by a rule, so
// no pattern can open more than the table does.
type Rule struct {
	ID string `yaml:"id" json:"id"`
	// Command is a glob over one simple command as the analysis shows it
	// (wrappers and shells removed, words joined by spaces); * matches
	// anything, spaces included. "git push *" matches every push.
	Command string `yaml:"command,omitempty" json:"command,omitempty"`
	// Class matches commands that have this class.
	Class Class `yaml:"class,omitempty" json:"class,omitempty"`
	// Path is a glob over the paths a command writes, relative to
	// /workspace unless absolute (** crosses directories).
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Host is a glob over the network destinations a command names.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// Tag matches commands the analyser tagged so (classify.TagForcePush,
	// TagCatastrophic...): facts a glob over argv would miss (-f, +ref
	// and --mirror are all force pushes).
	Tag    string `yaml:"tag,omitempty" json:"tag,omitempty"`
	Action Action `yaml:"action" json:"action"`
	Reason string `yaml:"reason,omitempty" json:"reason,omitempty"`

	command, host *regexp.Regexp
	path          *regexp.Regexp
}

// Layer is one level of policy: the daemon's file, a template's section,
// a task's or a sandbox's own. Later layers replace the class actions and
// the scope they set and add their rules.
type Layer struct {
	Classes map[Class]Action `yaml:"classes,omitempty" json:"classes,omitempty"`
	// OutsideScope is the action for a write outside the write scope.
	OutsideScope Action `yaml:"outside_scope,omitempty" json:"outside_scope,omitempty"`
	// Scope lists the path globs (relative to /workspace) the agent may
	// change; empty means anywhere in /workspace.
	Scope []string `yaml:"scope,omitempty" json:"scope,omitempty"`
	Rules []Rule   `yaml:"rules,omitempty" json:"rules,omitempty"`
	// Egress is where the sandbox's network traffic may go (default:
	// nowhere). Layers add rules and presets; a later grant list
	// replaces an earlier one.
	Egress *netpolicy.Policy `yaml:"egress,omitempty" json:"egress,omitempty"`
	// InstallScripts: deny makes package managers skip install scripts
	// (npm, yarn, pnpm lifecycle scripts; pip builds from source). allow
	// is the default.
	InstallScripts Action `yaml:"install_scripts,omitempty" json:"install_scripts,omitempty"`
}

// File is a policy file: a layer for every sandbox, and one per template.
type File struct {
	Version   int `yaml:"version" json:"version"`
	Layer     `yaml:",inline"`
	Templates map[string]Layer `yaml:"templates,omitempty" json:"templates,omitempty"`
	// Projects is a layer per project (a tenant, issue 22), the
	// operator's, applied to its sandboxes after their templates'.
	Projects map[string]Layer `yaml:"projects,omitempty" json:"projects,omitempty"`
	// Fetch is where the daemon itself may fetch from for a remote
	// caller (a task's repository over TCP): the rules of an egress
	// policy, decided and guarded the same way; nil allows nothing.
	Fetch *netpolicy.Policy `yaml:"fetch,omitempty" json:"fetch,omitempty"`
}

// Policy is an effective policy: the defaults with every layer applied.
type Policy struct {
	Classes      map[Class]Action `json:"classes"`
	OutsideScope Action           `json:"outside_scope"`
	Scope        []string         `json:"scope,omitempty"`
	Rules        []Rule           `json:"rules,omitempty"`
	// Egress is the effective egress policy (the zero value: no egress).
	Egress netpolicy.Policy `json:"egress"`
	// InstallScripts is allow or deny (see Layer).
	InstallScripts Action `json:"install_scripts"`
	// Sources names the layers applied, in order.
	Sources []string `json:"sources"`

	scope   []*regexp.Regexp
	version string // computed once the policy is built; policies are immutable
	// home is the sandbox user's home where it is not the default one
	// (classify's): scratch like that one (WithHome).
	home string
}

// WithHome is p for a sandbox whose user's home is home (the E2B door's
// /home/user) rather than the default: writes there are scratch, as in
// the default home, whatever the scope. "" or the default: p itself.
func (p *Policy) WithHome(home string) *Policy {
	if home == "" || classify.Scratch(home) {
		return p
	}
	c := *p
	c.home = path.Clean(home)
	return &c
}

// Defaults follow the seed's table: inspection, verification, builds,
// the workspace's own code and local writes run; dependency changes,
// persistence, network commands, destructive commands and anything
// unknown wait for a human; secrets are blocked unless a task's policy
// grants them; writes outside the scope are refused. Two rules deny
// outright what an approver should never be asked about: force pushes
// and the catastrophic set (rm -rf ~, mkfs...), where "approve?" invites
// a mis-click. DefaultFile prints exactly this.
func Defaults() *Policy {
	p := &Policy{
		Classes: map[Class]Action{
			Read: Allow, Verify: Allow, Build: Allow, Run: Allow, Write: Allow,
			Dependency: Ask, Persist: Ask, Network: Ask, Destructive: Ask, Secret: Deny, Unknown: Ask,
		},
		OutsideScope:   Deny,
		InstallScripts: Allow,
		Rules:          defaultRules(),
		Sources:        []string{"defaults"},
	}
	p.version = defaultsVersion
	return p
}

// defaultsVersion is Defaults().computeVersion(), written down (a test
// keeps it so): a policy check is a process of its own, and hashing the
// defaults' JSON made it pay for encoding/json's reflection at every
// start. Change it with the defaults: the test names the new value.
const defaultsVersion = "pol-32a23706c079"

func defaultRules() []Rule {
	rs := []Rule{
		{ID: "no-force-push", Tag: classify.TagForcePush, Action: Deny, Reason: "a force push rewrites shared history"},
		{ID: "catastrophic", Tag: classify.TagCatastrophic, Action: Deny,
			Reason: "irreversible for the whole workspace, home directory or machine; run it yourself if you mean it"},
	}
	for i := range rs {
		_ = rs[i].compile()
	}
	return rs
}

// DefaultFile is the defaults as a policy file, for `airlock policy
// default`.
func DefaultFile() string {
	d := Defaults()
	var b strings.Builder
	b.WriteString("# airlock policy: the built-in defaults.\n")
	b.WriteString("version: 1\n# action per command class: allow, ask (hold for a human) or deny\nclasses:\n")
	for _, c := range classify.Classes {
		fmt.Fprintf(&b, "  %-12s %-5s # %s\n", string(c)+":", d.Classes[c], c.Describe())
	}
	b.WriteString("# a write outside the write scope\noutside_scope: deny\n")
	b.WriteString("# paths (globs, relative to /workspace) the agent may change; empty: all of it\nscope: []\n")
	b.WriteString("# rules only tighten: each matches by command, class, path, host or tag and asks or denies\n")
	b.WriteString("# (tags: catastrophic, force-push, delete-branch, history-rewrite)\nrules:\n")
	for _, r := range d.Rules {
		fmt.Fprintf(&b, "  - id: %s\n    tag: %s\n    action: %s\n    reason: %q\n", r.ID, r.Tag, r.Action, r.Reason)
	}
	b.WriteString("# package install scripts (npm, yarn, pnpm lifecycle scripts; pip builds from source): allow or deny\ninstall_scripts: allow\n")
	b.WriteString(`# where sandboxes' network traffic may go, through airlock's proxy: nowhere by default.
# grant: categories (registries, git, public_web, internal, webhooks); presets: package
# registries read from this machine's package manager configuration (npm, go, pypi, debian,
# crates), each allowed by naming it; rules: allow or deny by hosts ("*.example.com"), cidrs
# and ports (a rule with a category applies once that category is granted); a deny rule's
# except_hosts and except_cidrs spare what they name from that rule alone (they open nothing).
egress:
  grant: []
  presets: []
  rules: []
`)
	b.WriteString("# per template, a layer like the above\ntemplates: {}\n")
	b.WriteString("# where the daemon itself may fetch from for a remote (TCP) caller, a task's repository:\n# an egress policy (grant, presets, rules; no secrets); absent: nowhere. For public hosts:\n# fetch: {grant: [public_web]}\n")
	return b.String()
}

// Parse reads a policy file. Unknown keys, classes and actions are errors.
func Parse(data []byte) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if err.Error() == "EOF" {
			return &File{Version: 1}, nil
		}
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "policy: %v", err)
	}
	if f.Version != 0 && f.Version != 1 {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "policy: version %d is not supported (1 is)", f.Version)
	}
	if err := f.Layer.Check(); err != nil {
		return nil, err
	}
	for name, l := range f.Templates {
		if err := l.Check(); err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
	}
	for name, l := range f.Projects {
		if err := l.Check(); err != nil {
			return nil, fmt.Errorf("project %s: %w", name, err)
		}
	}
	if f.Fetch != nil {
		if err := f.Fetch.Check(); err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
		if len(f.Fetch.Secrets) > 0 {
			return nil, errdefs.Wrap(errdefs.ErrInvalid, "policy: fetch: secrets are brokered for sandboxes only")
		}
	}
	return &f, nil
}

// Check validates a layer: known classes and actions, unique rule ids,
// rules that only ask or deny, globs that compile.
func (l *Layer) Check() error {
	for c, a := range l.Classes {
		if !c.Valid() {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: unknown class %q (classes: %s)", c, classList())
		}
		if !validAction(a) {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: class %s: unknown action %q (allow, ask, deny)", c, a)
		}
	}
	if l.OutsideScope != "" && !validAction(l.OutsideScope) {
		return errdefs.Wrap(errdefs.ErrInvalid, "policy: outside_scope: unknown action %q", l.OutsideScope)
	}
	for _, g := range l.Scope {
		if _, err := CompileGlob(g); err != nil {
			return err
		}
	}
	ids := map[string]bool{}
	for i := range l.Rules {
		r := &l.Rules[i]
		if r.ID == "" || strings.ContainsAny(r.ID, " \t\n") || strings.Contains(r.ID, ":") {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: rule %d: an id without spaces or colons is required", i+1)
		}
		if ids[r.ID] {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: rule id %q is used twice", r.ID)
		}
		ids[r.ID] = true
		if r.Action != Ask && r.Action != Deny {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: rule %s: action must be ask or deny (rules only tighten; relax a class under classes)", r.ID)
		}
		if r.Class != "" && !r.Class.Valid() {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: rule %s: unknown class %q", r.ID, r.Class)
		}
		if r.Command == "" && r.Class == "" && r.Path == "" && r.Host == "" && r.Tag == "" {
			return errdefs.Wrap(errdefs.ErrInvalid, "policy: rule %s matches nothing: give command, class, path, host or tag", r.ID)
		}
		if err := r.compile(); err != nil {
			return err
		}
	}
	if l.Egress != nil {
		if err := l.Egress.Check(); err != nil {
			return err
		}
	}
	if l.InstallScripts != "" && l.InstallScripts != Allow && l.InstallScripts != Deny {
		return errdefs.Wrap(errdefs.ErrInvalid, "policy: install_scripts: allow or deny, not %q", l.InstallScripts)
	}
	return nil
}

func classList() string {
	var s []string
	for _, c := range classify.Classes {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func (r *Rule) compile() error {
	var err error
	if r.Command != "" {
		r.command = wordGlob(r.Command)
	}
	if r.Host != "" {
		r.host = wordGlob(strings.ToLower(r.Host))
	}
	if r.Path != "" {
		if r.path, err = CompileGlob(r.Path); err != nil {
			return err
		}
	}
	return nil
}

// wordGlob: * matches anything (spaces included), ? one character.
func wordGlob(g string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for _, r := range g {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// CompileGlob turns a path glob relative to /workspace into a regexp over
// such paths: * within a path element, ** across elements, ? one
// character. A glob without wildcards also covers what is beneath it.
func CompileGlob(g string) (*regexp.Regexp, error) {
	orig := g
	g = strings.TrimPrefix(strings.TrimPrefix(g, DefaultCwd+"/"), "/")
	g = strings.TrimSuffix(g, "/")
	if g == "" || strings.Contains(g, "\x00") || slices.Contains(strings.Split(g, "/"), "..") {
		return nil, errdefs.Wrap(errdefs.ErrInvalid, "scope glob %q: must name paths inside /workspace", orig)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if !strings.ContainsAny(g, "*?") {
		b.WriteString("(?:/.*)?")
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// ForTemplate is the file's policy for sandboxes of a template: the
// defaults, the file's own layer, then the template's.
func (f *File) ForTemplate(template string) *Policy {
	p := Defaults()
	if f == nil {
		return p
	}
	p = p.with(f.Layer, "file")
	if l, ok := f.Templates[template]; ok {
		p = p.with(l, "template:"+template)
	}
	return p
}

// ForTemplates is the file's policy for sandboxes of the last of
// lineage, a template made from the ones before it (oldest first: a
// snapshot's base, then the snapshot): the defaults, the file's layer,
// then each one's section in turn. A later section must not relax what
// the earlier ones set (a snapshot is named by whoever takes it, and must
// not shed its base's policy by its name): that is an error.
func (f *File) ForTemplates(lineage []string) (*Policy, error) {
	if len(lineage) == 0 {
		return nil, fmt.Errorf("no template: %w", errdefs.ErrInvalid)
	}
	p := f.ForTemplate(lineage[0])
	if f == nil {
		return p, nil
	}
	for i, t := range lineage[1:] {
		l, ok := f.Templates[t]
		if !ok {
			continue
		}
		if err := p.Relaxes(l); err != nil {
			return nil, fmt.Errorf("the policy file's section for template %q relaxes that of %q, which it was made from (%v): %w", t, lineage[i], err, errdefs.ErrInvalid)
		}
		p = p.with(l, "template:"+t)
	}
	return p, nil
}

// ForProject is p with the file's section for project applied, if it
// has one (source "project:NAME").
func (f *File) ForProject(p *Policy, project string) *Policy {
	if f == nil {
		return p
	}
	if l, ok := f.Projects[project]; ok {
		return p.with(l, "project:"+project)
	}
	return p
}

// With applies a layer on top of p (which is not changed).
func (p *Policy) With(l Layer, source string) (*Policy, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	return p.with(l, source), nil
}

func (p *Policy) with(l Layer, source string) *Policy {
	out := &Policy{Classes: map[Class]Action{}, OutsideScope: p.OutsideScope, Scope: p.Scope, Rules: slices.Clone(p.Rules),
		Egress: p.Egress, InstallScripts: p.InstallScripts, Sources: append(slices.Clone(p.Sources), source)}
	if l.InstallScripts != "" {
		out.InstallScripts = l.InstallScripts
	}
	if l.Egress != nil {
		out.Egress = p.Egress.Merge(*l.Egress)
	}
	for c, a := range p.Classes {
		out.Classes[c] = a
	}
	for c, a := range l.Classes {
		out.Classes[c] = a
	}
	if l.OutsideScope != "" {
		out.OutsideScope = l.OutsideScope
	}
	if len(l.Scope) > 0 {
		out.Scope = slices.Clone(l.Scope)
	}
	for _, r := range l.Rules {
		r := r
		// A layer restating a rule (the printed defaults as a file) adds
		// nothing.
		if slices.ContainsFunc(out.Rules, func(x Rule) bool { return sameRule(x, r) }) {
			continue
		}
		// Ids stay unique across layers: a later layer's rule of the same
		// id is a different rule, so it is namespaced by its source.
		if slices.ContainsFunc(out.Rules, func(x Rule) bool { return x.ID == r.ID }) {
			r.ID = source + "/" + r.ID
		}
		_ = r.compile()
		out.Rules = append(out.Rules, r)
	}
	out.compileScope()
	out.version = out.computeVersion()
	return out
}

func (p *Policy) compileScope() {
	p.scope = nil
	for _, g := range p.Scope {
		if re, err := CompileGlob(g); err == nil {
			p.scope = append(p.scope, re)
		}
	}
}

// Relaxes reports, as an error, every way layer l would make p less
// strict. Callers that may only tighten (an agent's own API key) check it.
func (p *Policy) Relaxes(l Layer) error {
	var loose []string
	for c, a := range l.Classes {
		if a.rank() < p.Classes[c].rank() {
			loose = append(loose, fmt.Sprintf("%s %s->%s", c, p.Classes[c], a))
		}
	}
	if l.OutsideScope != "" && l.OutsideScope.rank() < p.OutsideScope.rank() {
		loose = append(loose, "outside_scope "+string(p.OutsideScope)+"->"+string(l.OutsideScope))
	}
	if len(l.Scope) > 0 && len(p.Scope) > 0 {
		for _, g := range l.Scope {
			if !slices.Contains(p.Scope, g) {
				loose = append(loose, "scope adds "+g)
			}
		}
	}
	if l.InstallScripts == Allow && p.InstallScripts == Deny {
		loose = append(loose, "install_scripts deny->allow")
	}
	if e := l.Egress; e != nil {
		for _, c := range e.Grant {
			if !slices.Contains(p.Egress.Grant, c) {
				loose = append(loose, "egress grants "+string(c))
			}
		}
		for _, pr := range e.Presets {
			loose = append(loose, "egress preset "+pr)
		}
		for _, r := range e.Rules {
			if r.Action != netpolicy.Deny {
				loose = append(loose, "egress rule "+r.ID+" allows")
			}
		}
		if len(e.Secrets) > 0 {
			loose = append(loose, "egress brokers secrets")
		}
	}
	if len(loose) == 0 {
		return nil
	}
	sort.Strings(loose)
	return errdefs.Wrap(errdefs.ErrDenied, "this caller may only tighten the policy; it would relax: %s", strings.Join(loose, ", "))
}

// Version is a short hash of the effective policy, recorded with every
// decision so a reviewer knows which policy decided.
func (p *Policy) Version() string {
	if p.version != "" {
		return p.version
	}
	return p.computeVersion()
}

func (p *Policy) computeVersion() string {
	var inst Action // only a deny changes the version (older versions stay)
	if p.InstallScripts == Deny {
		inst = Deny
	}
	var eg *netpolicy.Policy
	if e := p.Egress; len(e.Grant)+len(e.Presets)+len(e.Rules)+len(e.Secrets) > 0 {
		eg = &e
	}
	b, _ := json.Marshal(struct {
		C map[Class]Action
		O Action
		S []string
		R []Rule
		E *netpolicy.Policy `json:",omitempty"`
		I Action            `json:",omitempty"`
	}{p.Classes, p.OutsideScope, p.Scope, p.Rules, eg, inst})
	sum := sha256.Sum256(b)
	return "pol-" + hex.EncodeToString(sum[:6])
}

// InScope reports whether an absolute sandbox path may be written under
// the scope. Scratch places (/tmp, the home directory, /dev/null) are
// always writable; /workspace paths must match a scope glob when there
// is a scope; anything else is outside.
func (p *Policy) InScope(abs string) bool {
	if classify.Scratch(abs) || p.home != "" && (abs == p.home || strings.HasPrefix(abs, p.home+"/")) {
		return true
	}
	rel, ok := strings.CutPrefix(abs, DefaultCwd+"/")
	if abs == DefaultCwd {
		rel, ok = "", true
	}
	if !ok {
		return false
	}
	if len(p.Scope) == 0 {
		return true
	}
	if p.scope == nil {
		p.compileScope()
	}
	for _, re := range p.scope {
		if re.MatchString(rel) {
			return true
		}
	}
	return false
}

// Match is one rule that matched a command line.
type Match struct {
	Rule   string `json:"rule"` // "class:<name>", "scope", or a rule id
	Action Action `json:"action"`
	// Command indexes Analysis.Commands.
	Command int    `json:"command"`
	Class   Class  `json:"class,omitempty"`
	Reason  string `json:"reason"`
}

// Decision is the policy's answer for one command line.
type Decision struct {
	Action Action `json:"action"`
	// Reason is one line, safe to show the agent.
	Reason     string    `json:"reason"`
	Matches    []Match   `json:"matches"`
	OutOfScope []string  `json:"out_of_scope,omitempty"`
	Analysis   *Analysis `json:"analysis"`
	Policy     string    `json:"policy"` // Policy.Version
	// Grant names the approvals that turned ask into allow.
	Grant []string `json:"grant,omitempty"`
	// BreakGlass is set when an operator override allowed what the policy
	// did not.
	BreakGlass string `json:"break_glass,omitempty"`
}

// Decide applies the policy to an analysed command line: every command's
// classes, every rule that matches it and every write outside the scope
// contribute; the most restrictive wins.
func (p *Policy) Decide(a *Analysis) *Decision {
	d := &Decision{Analysis: a, Policy: p.Version()}
	for i, cmd := range a.Commands {
		for _, cl := range cmd.Classes {
			act, ok := p.Classes[cl]
			if !ok {
				act = Deny
			}
			d.Matches = append(d.Matches, Match{Rule: "class:" + string(cl), Action: act, Command: i, Class: cl,
				Reason: classReason(cmd, cl, act)})
		}
		text := strings.Join(cmd.Argv, " ")
		for _, r := range p.Rules {
			if r.matches(cmd, text) {
				reason := r.Reason
				if reason == "" {
					reason = "rule " + r.ID
				}
				d.Matches = append(d.Matches, Match{Rule: r.ID, Action: r.Action, Command: i, Class: r.Class, Reason: commandText(cmd) + ": " + reason})
			}
		}
		for _, w := range cmd.Writes {
			if strings.ContainsAny(w, "$`…") || !path.IsAbs(w) {
				continue // only known at run time; the sandbox's own scope holds it
			}
			if !p.InScope(w) {
				d.OutOfScope = appendUniq(d.OutOfScope, w)
				d.Matches = append(d.Matches, Match{Rule: "scope", Action: p.OutsideScope, Command: i,
					Reason: fmt.Sprintf("%s writes %s, outside the write scope", commandText(cmd), w)})
			}
		}
	}
	d.Action = Allow
	for _, m := range d.Matches {
		d.Action = Stricter(d.Action, m.Action)
	}
	sort.SliceStable(d.Matches, func(i, j int) bool { return d.Matches[i].Action.rank() > d.Matches[j].Action.rank() })
	d.Reason = d.reason()
	if d.Matches == nil {
		d.Matches = []Match{}
	}
	return d
}

// classReason names the command, its class and, for a hold or a denial,
// what the analyser found it does (the approver decides on the effect,
// not on a class name).
func classReason(cmd Command, cl Class, act Action) string {
	if act == Allow || cmd.Why == "" || len(cmd.Argv) == 0 {
		return fmt.Sprintf("%s is %s: %s", commandText(cmd), cl.Describe(), act)
	}
	why := cmd.Why
	if len(why) > 200 {
		why = why[:197] + "..."
	}
	return fmt.Sprintf("%s is %s (%s): %s", commandText(cmd), cl.Describe(), why, act)
}

func commandText(c Command) string {
	if len(c.Argv) == 0 {
		return "(" + c.Why + ")"
	}
	s := classify.JoinArgv(c.Argv)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func (d *Decision) reason() string {
	if d.Action == Allow {
		if len(d.Analysis.Classes) == 0 {
			return "allowed: nothing to run"
		}
		return "allowed: " + joinClasses(d.Analysis.Classes)
	}
	var parts []string
	for _, m := range d.Matches {
		if m.Action == d.Action {
			parts = appendUniq(parts, m.Reason+" ["+m.Rule+"]")
		}
	}
	verb := "denied"
	if d.Action == Ask {
		verb = "needs approval"
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("and %d more", len(parts)-3))
	}
	return verb + ": " + strings.Join(parts, "; ")
}

func joinClasses(cs []Class) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func sameRule(a, b Rule) bool {
	return a.ID == b.ID && a.Command == b.Command && a.Class == b.Class && a.Path == b.Path && a.Host == b.Host &&
		a.Tag == b.Tag && a.Action == b.Action && a.Reason == b.Reason
}

func (r *Rule) matches(cmd Command, text string) bool {
	if r.Class != "" && !slices.Contains(cmd.Classes, r.Class) {
		return false
	}
	if r.Tag != "" && !slices.Contains(cmd.Tags, r.Tag) {
		return false
	}
	if r.command != nil && !r.command.MatchString(text) {
		return false
	}
	if r.path != nil && !slices.ContainsFunc(cmd.Writes, func(w string) bool {
		rel := strings.TrimPrefix(strings.TrimPrefix(w, DefaultCwd+"/"), "/")
		return r.path.MatchString(rel)
	}) {
		return false
	}
	if r.host != nil && !slices.ContainsFunc(cmd.Hosts, func(h string) bool { return r.host.MatchString(strings.ToLower(h)) }) {
		return false
	}
	return r.command != nil || r.Class != "" || r.path != nil || r.host != nil || r.Tag != ""
}

// ScopeRoots turns scope globs into the absolute paths a sandbox can
// confine writes to: each glob up to its first wildcard element
// (src/**/*.go -> /workspace/src, *.md -> /workspace).
func ScopeRoots(scope []string) []string {
	var out []string
	for _, g := range scope {
		g = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(g, DefaultCwd+"/"), "/"), "/")
		var keep []string
		for _, el := range strings.Split(g, "/") {
			if strings.ContainsAny(el, "*?[") {
				break
			}
			keep = append(keep, el)
		}
		out = appendUniq(out, path.Join(append([]string{DefaultCwd}, keep...)...))
	}
	return out
}

func appendUniq(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

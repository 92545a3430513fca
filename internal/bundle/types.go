package bundle

import "time"

// Manifest says which run a bundle records: the task, where its code came
// from, what it ran under, and the audit chain head that vouches for it.
type Manifest struct {
	Task            string    `json:"task" redact:"keep"`
	Sandbox         string    `json:"sandbox" redact:"keep"`
	Repo            string    `json:"repo"`
	Ref             string    `json:"ref"`
	Commit          string    `json:"commit" redact:"keep"`
	Prompt          string    `json:"prompt,omitempty"`
	Scope           []string  `json:"scope,omitempty"`
	Test            string    `json:"test,omitempty"`
	Template        string    `json:"template"`
	TemplateVersion string    `json:"template_version" redact:"keep"`
	Backend         string    `json:"backend" redact:"keep"`
	Policy          string    `json:"policy" redact:"keep"` // policy version
	Created         time.Time `json:"created"`
	Finished        time.Time `json:"finished"`
	// WorkspaceGone is set when the task's sandbox had stopped before the
	// bundle was made: no tests ran then, and the patch is the one taken
	// as the sandbox stopped (or none).
	WorkspaceGone *WorkspaceGone `json:"workspace_gone,omitempty"`
	Chain         ChainHead      `json:"chain" redact:"keep"` // the signer's, set as the bundle is written
}

// WorkspaceGone says why a task's workspace was gone when the task was
// finished or exported, and what was kept of it.
type WorkspaceGone struct {
	Reason  string    `json:"reason" redact:"keep"` // the sandbox's stop reason: expired, destroyed, lost, daemon-stopped, failed
	Stopped time.Time `json:"stopped"`
	// DiffKept: the patch was taken as the sandbox stopped; otherwise the
	// agent's changes went with it (DiffError says why, when known).
	DiffKept  bool   `json:"diff_kept"`
	DiffError string `json:"diff_error,omitempty"`
	Note      string `json:"note"`
}

// ChainHead is the audit chain's last event when the bundle was made, signed by the daemon.
type ChainHead struct {
	Seq       int64  `json:"seq"`
	Hash      string `json:"hash"`       // hex
	PublicKey string `json:"public_key"` // base64 ed25519
	Signature string `json:"signature"`  // base64, over the bundle's digest (see bundle.go)
}

// File is one path the patch touches.
type File struct {
	Path    string `json:"path"`
	Status  string `json:"status" redact:"keep"` // added, modified, deleted, renamed, type-changed
	InScope bool   `json:"in_scope"`
}

// PolicySummary is the policy decision a command ran (or was refused) under.
type PolicySummary struct {
	Action     string   `json:"action" redact:"keep"`
	Classes    []string `json:"classes" redact:"keep"`
	Rules      []string `json:"rules,omitempty"`
	Grant      []string `json:"grant,omitempty"`
	BreakGlass string   `json:"break_glass,omitempty"`
}

// Command is one command the agent asked the sandbox to run.
type Command struct {
	ExecID      string         `json:"exec_id" redact:"keep"`
	Argv        []string       `json:"argv"`
	Cwd         string         `json:"cwd"`
	Started     time.Time      `json:"started"`
	Ended       time.Time      `json:"ended,omitzero"`
	ExitCode    *int           `json:"exit_code,omitempty"`
	Signal      string         `json:"signal,omitempty" redact:"keep"`
	Limit       string         `json:"limit,omitempty" redact:"keep"` // timeout, memory, pids, disk
	Error       string         `json:"error,omitempty"`               // why it did not run (policy refusal...)
	Policy      *PolicySummary `json:"policy,omitempty"`
	StdoutBytes int            `json:"stdout_bytes"`
	StderrBytes int            `json:"stderr_bytes"`
	Writes      []string       `json:"writes,omitempty"` // files it changed, if known
}

// TestSummary is what ParseTestOutput recognised in a test command's output.
type TestSummary struct {
	Framework string   `json:"framework" redact:"keep"` // go, pytest, jest, vitest, mocha, cargo, unknown
	Passed    int      `json:"passed"`
	Failed    int      `json:"failed"`
	Skipped   int      `json:"skipped"`
	Failures  []string `json:"failures,omitempty"` // names of failed tests
	// FailuresCapped: more tests failed than Failures names (it stops at
	// MaxFailureNames).
	FailuresCapped bool `json:"failures_capped,omitempty"`
	// Packages is how many of the counts are whole Go packages, not
	// tests: go test lists a package's tests only with -v or -json, and
	// a reviewer read "2 passed" as two tests.
	Packages int `json:"packages,omitempty"`
}

// TestRun is one run of the task's test command.
type TestRun struct {
	ExecID   string       `json:"exec_id" redact:"keep"`
	Command  string       `json:"command"`
	Passed   bool         `json:"passed"`
	ExitCode int          `json:"exit_code"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Summary  *TestSummary `json:"summary,omitempty"`
}

// Approval is one request for a human's approval and its outcome.
type Approval struct {
	ID          string     `json:"id" redact:"keep"`
	State       string     `json:"state" redact:"keep"`
	Command     string     `json:"command"`
	Classes     []string   `json:"classes" redact:"keep"`
	Effect      string     `json:"effect,omitempty"`
	RequestedBy string     `json:"requested_by" redact:"keep"`
	Created     time.Time  `json:"created"`
	DecidedBy   string     `json:"decided_by,omitempty" redact:"keep"`
	Decided     *time.Time `json:"decided,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	Grant       string     `json:"grant,omitempty" redact:"keep"`
}

// NetworkRequest is one connection the sandbox's egress proxy saw.
type NetworkRequest struct {
	Time     time.Time `json:"time"`
	ExecID   string    `json:"exec_id,omitempty" redact:"keep"`
	Host     string    `json:"host"`
	Port     int       `json:"port"`
	Method   string    `json:"method,omitempty"`
	Status   int       `json:"status,omitempty"`
	Decision string    `json:"decision" redact:"keep"`
	Rule     string    `json:"rule,omitempty"`
	BytesOut int64     `json:"bytes_out"`
	BytesIn  int64     `json:"bytes_in"`
	// Count is how many refusals this entry stands for when the record
	// counted them into one summary (egress.refused.summary); 0: one.
	Count int64 `json:"count,omitempty"`
}

// N is how many requests r stands for.
func (r NetworkRequest) N() int64 { return max(r.Count, 1) }

// DependencyChange is one package the patch adds, removes or moves to another version.
type DependencyChange struct {
	Manager string `json:"manager" redact:"keep"` // npm, go, pip, cargo...
	Name    string `json:"name"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Change  string `json:"change" redact:"keep"` // added, removed, changed, rehashed
	// Lockfile is the lockfile whose pins changed ("": read from a
	// manifest in the patch).
	Lockfile string `json:"lockfile,omitempty"`
	// Integrity is the content hash the lockfile holds for To (for
	// several versions, "version: hash" each, joined by "; "); "": the
	// lockfile holds none.
	Integrity string `json:"integrity,omitempty"`
}

// Dependencies is what the patch does to the project's dependencies.
type Dependencies struct {
	Changes   []DependencyChange `json:"changes"`
	Lockfiles []string           `json:"lockfiles"` // lockfiles the patch changes
	// Unreadable are changed lockfiles that did not parse (named, never
	// guessed at).
	Unreadable []string `json:"unreadable,omitempty"`
	// InstallScripts are the packages with install scripts the task's
	// dependency commands installed, and whether the scripts ran.
	InstallScripts []InstallScript `json:"install_scripts,omitempty"`
	// FlaggedWrites are dependency commands' writes into the
	// repository's .git or outside the project and the caches.
	FlaggedWrites []FlaggedWrite `json:"flagged_writes,omitempty"`
}

// InstallScript is one package whose install script a dependency
// command ran or had blocked.
type InstallScript struct {
	ExecID  string `json:"exec_id" redact:"keep"`
	Command string `json:"command"`
	Package string `json:"package"`
	Ran     bool   `json:"ran"`
	// Override: the command line turned scripts on against the policy.
	Override bool `json:"override,omitempty"`
}

// FlaggedWrite is a write dependency code should not make.
type FlaggedWrite struct {
	ExecID  string `json:"exec_id" redact:"keep"`
	Command string `json:"command"`
	Path    string `json:"path"`
}

// Artifact is one file the run left behind, as ScanArtifact classified it.
type Artifact struct {
	Path     string   `json:"path"` // relative to /workspace, clean, never absolute or ..
	Size     int64    `json:"size"`
	Type     string   `json:"type" redact:"keep"` // text, binary, executable, archive, symlink
	Large    bool     `json:"large,omitempty"`
	Findings []string `json:"findings,omitempty" redact:"keep"` // secret kinds found (values never included)
	Included bool     `json:"included"`                         // copied into artifacts/ (not if large, secret, symlink or archive)
}

// Contents is everything a bundle holds.
type Contents struct {
	Manifest     Manifest
	Patch        string
	Files        []File
	OutOfScope   []string
	Commands     []Command
	Outputs      map[string][2][]byte // exec id -> stdout, stderr (already redacted)
	Tests        []TestRun
	Approvals    []Approval
	Network      []NetworkRequest
	Dependencies Dependencies
	Artifacts    []Artifact
	ArtifactData map[string][]byte // path -> content, for Included artifacts
}

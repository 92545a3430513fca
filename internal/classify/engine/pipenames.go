package engine

import "strings"

// Names on a pipe: find ~ -name '*.json' | xargs cat reads what find
// lists. A stage that lists files which may be credentials says so
// (ListsSecrets); a filter passes the list on; xargs reads it.

// passNames are filters whose output is lines of their input, so a list
// of files stays one through them.
var passNames = SetOf("grep egrep fgrep sort uniq head tail tr sed cat tee")

// notReading change files without reading them.
var notReading = SetOf("rm rmdir unlink chmod chown chgrp touch")

// ListsSecrets notes that the command writes to its output the names of
// files that may be credentials (what describes them), for the next
// stage of a pipe.
func (c *Call) ListsSecrets(what string) { c.a.pipeOut = what }

// PipedSecrets returns what ListsSecrets said of the stage piped into
// this command, or "".
func (c *Call) PipedSecrets() string { return c.a.pipeIn }

// ReadsSecrets marks commands (those a wrapper ran on the files of a
// list) as reading credentials; what names the files, why says how.
func ReadsSecrets(cmds []Command, what, why string) {
	for k := range cmds {
		cmd := &cmds[k]
		if len(cmd.Argv) > 0 && (MetaOnly(cmd.Argv[0]) || notReading.Has(cmd.Argv[0])) {
			continue
		}
		cmd.Classes = AddClass(cmd.Classes, Secret)
		cmd.Secrets = AppendUniq(cmd.Secrets, what)
		cmd.Why = JoinWhy(cmd.Why, why)
	}
}

// passPipe carries the list through a filter stage.
func (a *analyzer) passPipe(name string, args []Word) {
	if a.pipeIn == "" || !passNames.Has(name) {
		return
	}
	for _, w := range args {
		if w.Text == "-i" || strings.HasPrefix(w.Text, "--in-place") {
			return
		}
	}
	a.pipeOut = a.pipeIn
}

// Package python is the classifier's knowledge of Python: the
// interpreters of any version (Family), pip, pipx, uv, poetry, pipenv,
// conda and the Python tools. tools.go is its handler table.
package python

// Package devtools is the classifier's knowledge of the other toolchains,
// one file each: go (golang.go), cargo, java (maven, gradle), dotnet,
// ruby, php, make-like tools, containers and cloud CLIs. tools.go is its
// handler table.
package devtools

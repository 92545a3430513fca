// Package node is the classifier's knowledge of the JavaScript
// ecosystems: npm, pnpm, yarn, bun, node, deno and their tools (node.go).
// tools.go is its handler table.
package node

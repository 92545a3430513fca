// Package pkgrun is classifier knowledge that package managers share:
// npx-style runners (runners.go: a known tool is that tool, anything else
// a package fetched and run; npx, pnpm dlx, yarn dlx, pipx run, uvx) and
// package scripts by name (scripts.go: npm run test, make lint).
package pkgrun

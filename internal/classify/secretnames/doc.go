// Package secretnames says which names are credentials: files (Path: .env,
// private keys, cloud and agent CLIs' stores, histories), their examples
// and templates (Template), environment variables (Var), and the globs
// that may expand to them (JudgeGlob, ExtglobAlternatives), bounded. It
// imports nothing of airlock's.
package secretnames

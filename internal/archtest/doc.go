// Package archtest holds tests of the tree's shape, not of its behaviour:
// that imports go down the layers (API ← strategies ← harness ← cmd;
// workloads ← harness; stats beneath everything), and that no Go file grows
// past what one idea needs. It has no code; `go test ./internal/archtest`
// runs the checks, reading the import graph from `go list` and the files from
// git, so that they judge what is built and committed.
//
// A rule is a line in the layers table of archtest_test.go. When a package
// moves, change the table with it; when a check fails, move the code, not
// the rule.
package archtest

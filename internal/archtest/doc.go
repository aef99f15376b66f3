// Package archtest holds tests of the tree's shape, not of its behaviour:
// that imports go down the layers (API ← strategies ← harness ← cmd;
// workloads ← harness; internal/ beneath all but the API; stats beneath
// everything; reports and the cost model beside the strategies, reading
// their shapes from internal/shapes and links from internal/linkspec), and
// that no Go file grows
// past what one idea needs. It has no code; `go test ./internal/archtest`
// runs the checks, reading the import graph from `go list` and the files from
// git, so that they judge what is built and committed.
//
// A rule is a line in the layers table of archtest_test.go, and each is
// proven by a fake import graph that breaks it (TestLayerRulesCatch). When a
// package moves, change the table with it; when a check fails, move the
// code, not the rule.
package archtest

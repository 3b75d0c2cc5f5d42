// Package reliability holds Tideline's fault-injection tests and its
// performance benchmarks. They run the real `tideline serve` binary (built
// once per test run) against PostgreSQL and check the outcome in the
// database: replicas killed with SIGKILL, a scheduler that dies between
// claiming schedules and committing their fires, a replica killed between a
// fact's commit and its notification, and PostgreSQL itself going away. docs/RELIABILITY.md and docs/PERFORMANCE.md describe every test and
// benchmark, how to run it at full size, and the numbers it produced.
//
// The package has no production code; everything lives in _test.go files.
package reliability

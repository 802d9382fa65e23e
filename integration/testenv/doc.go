// Package testenv is what the tests of every package share: skipping a
// test that needs root (with the reason, so that an ordinary user's
// `go test ./...` passes and says what it left out), and waiting for a
// condition with a deadline instead of sleeping on the wall clock.
package testenv

//go:build race

package main

// raceDetector: this test binary, which the tests start as their daemon
// (RBD_TEST_MAIN), is built with the race detector, which takes several
// times the memory and time of the daemon as deployed (make test builds
// so).
const raceDetector = true

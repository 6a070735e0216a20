//go:build !race

package oncrpc

// raceDetector: see race_on_test.go.
const raceDetector = false

// Command summarize prints the side-by-side table of scripts/bench-peers.sh:
// for each server, the median over repetitions of each phase's rate and
// server CPU cost, the ratio to gonfsrdma, and the targets.
//
// Usage: go run ./scripts/bench-peers RESULTS_DIR SERVER...
// RESULTS_DIR holds SERVER.REP.json files written by gonfsrdma bench --json.
package main

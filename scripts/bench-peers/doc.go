// Command summarize prints the side-by-side table of scripts/bench-peers.sh:
// for each server, the median over repetitions of each phase's rate and
// server CPU cost, the ratio to gonfsrdma, and the targets; then
// the libnfs metadata program's rates and server CPU per operation
// (meta.go), fio's libnfs engine's rows (fio.go), and the user-space
// client's checks against each server (client.go).
//
// Usage: go run ./scripts/bench-peers RESULTS_DIR SERVER...
// RESULTS_DIR holds SERVER.REP.json files written by gonfsrdma bench --json,
// SERVER.REP.meta.tsv files written by bench-peers-meta.c, and
// client.SERVER.REP.tsv and fio.SERVER.REP.tsv (with the fio JSON and
// standard error each line names) written by bench-peers.sh. It exits 1
// when a client check failed or a results file is malformed; a failed fio
// job shows as FAIL in its table.
package main

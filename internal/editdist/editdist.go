// Package editdist measures how far a typed word is from a known one, for
// "did you mean" advice (command names, flags, exports(5) options).
//
// Buffer ownership: nothing is kept; Distance allocates its own table.
package editdist

// Distance is the optimal-string-alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent bytes each
// cost one, so "benhc" is one edit from "bench". Its cost is
// len(a)·len(b): callers bound what they pass (words, not lines).
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

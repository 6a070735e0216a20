//go:build !race

package adversary

// memoryFactor scales the memory bounds (4 under the race detector).
const memoryFactor = 1

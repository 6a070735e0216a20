//go:build race

package adversary

// memoryFactor scales the memory bounds: the race detector keeps shadow
// memory and larger goroutine stacks, several times what a plain build
// uses.
const memoryFactor = 4

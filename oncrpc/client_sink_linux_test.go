package oncrpc

// spliceSupported says whether the reader splices on this system.
const spliceSupported = true

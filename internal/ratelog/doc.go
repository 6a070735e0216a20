// Package ratelog bounds how often one kind of event is logged. A hostile
// client can make an event (a refused connection, an accept failure)
// happen thousands of times a second; each kind gets at most one line per
// interval, and that line says how many were left out since the last one.
//
// It owns no buffers; a Limiter is safe for concurrent use.
package ratelog

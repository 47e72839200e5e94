// Package rdmaphook carries what package rdmap offers the module's own
// connection managers (through internal/rdmapconf) but not its users.
// Package rdmap sets the functions when it is initialised.
package rdmaphook

// AfterDone runs f in a goroutine of its own once ep, an *rdmap.Endpoint,
// has finished (at once if it has).
var AfterDone func(ep any, f func())

// Package pionlog routes the log lines of the pion libraries this project
// uses (pion/sctp in the pion backend, pion/dtls under the native stack's
// DTLS mode) through log/slog, so that they never reach a terminal on
// their own: the program's slog handler decides their format (text or
// JSON), level and destination. Each record carries the pion scope as the
// attribute "pion".
package pionlog

// pion logs routine events at its warning and error levels (a peer's INIT
// parameter it does not know, ForwardTSN not negotiated, a write after
// close), so its levels land one step lower in slog: pion's errors are
// slog Info, its warnings and information Debug, its debug and trace
// lines below Debug. A program's default slog logger (Info) thus shows
// what pion's own default logger showed, its errors, and nothing more.

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// The slog levels of pion's levels.
const (
	LevelTrace = slog.LevelDebug - 8 // pion Trace
	LevelDebug = slog.LevelDebug - 4 // pion Debug
	LevelInfo  = slog.LevelDebug     // pion Info and Warn
	LevelError = slog.LevelInfo      // pion Error
)

// Factory returns a pion LoggerFactory whose loggers write to l, or to
// slog.Default() at the time of each record when l is nil (so that a
// program's slog.SetDefault applies to loggers made before it).
func Factory(l *slog.Logger) logging.LoggerFactory { return factory{l: l} }

type factory struct{ l *slog.Logger }

func (f factory) NewLogger(scope string) logging.LeveledLogger {
	return &logger{l: f.l, scope: scope}
}

type logger struct {
	l     *slog.Logger
	scope string
}

func (g *logger) log(level slog.Level, msg string) {
	l := g.l
	if l == nil {
		l = slog.Default()
	}
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	l.LogAttrs(ctx, level, msg, slog.String("pion", g.scope))
}

func (g *logger) logf(level slog.Level, format string, args ...any) {
	l := g.l
	if l == nil {
		l = slog.Default()
	}
	if !l.Enabled(context.Background(), level) {
		return // no formatting for a record nobody keeps
	}
	g.log(level, fmt.Sprintf(format, args...))
}

func (g *logger) Trace(msg string)                  { g.log(LevelTrace, msg) }
func (g *logger) Tracef(format string, args ...any) { g.logf(LevelTrace, format, args...) }
func (g *logger) Debug(msg string)                  { g.log(LevelDebug, msg) }
func (g *logger) Debugf(format string, args ...any) { g.logf(LevelDebug, format, args...) }
func (g *logger) Info(msg string)                   { g.log(LevelInfo, msg) }
func (g *logger) Infof(format string, args ...any)  { g.logf(LevelInfo, format, args...) }
func (g *logger) Warn(msg string)                   { g.log(LevelInfo, msg) }
func (g *logger) Warnf(format string, args ...any)  { g.logf(LevelInfo, format, args...) }
func (g *logger) Error(msg string)                  { g.log(LevelError, msg) }
func (g *logger) Errorf(format string, args ...any) { g.logf(LevelError, format, args...) }

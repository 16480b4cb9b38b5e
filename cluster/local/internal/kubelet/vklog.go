package kubelet

import (
	"context"
	"fmt"
	"log/slog"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// withVKLogger makes virtual-kubelet's code log through l (it reads its
// logger from the context).
func withVKLogger(ctx context.Context, l *slog.Logger) context.Context {
	return vklog.WithLogger(ctx, vkLogger{l: l.With("component", "virtual-kubelet")})
}

// vkLogger adapts slog to virtual-kubelet's logger interface. VK logs a lot at
// Info level about routine work; it is demoted to Debug.
type vkLogger struct{ l *slog.Logger }

func (v vkLogger) Debug(a ...any)            { v.l.Debug(fmt.Sprint(a...)) }
func (v vkLogger) Debugf(f string, a ...any) { v.l.Debug(fmt.Sprintf(f, a...)) }
func (v vkLogger) Info(a ...any)             { v.l.Debug(fmt.Sprint(a...)) }
func (v vkLogger) Infof(f string, a ...any)  { v.l.Debug(fmt.Sprintf(f, a...)) }
func (v vkLogger) Warn(a ...any)             { v.l.Warn(fmt.Sprint(a...)) }
func (v vkLogger) Warnf(f string, a ...any)  { v.l.Warn(fmt.Sprintf(f, a...)) }
func (v vkLogger) Error(a ...any)            { v.l.Error(fmt.Sprint(a...)) }
func (v vkLogger) Errorf(f string, a ...any) { v.l.Error(fmt.Sprintf(f, a...)) }
func (v vkLogger) Fatal(a ...any)            { v.l.Error(fmt.Sprint(a...)) }
func (v vkLogger) Fatalf(f string, a ...any) { v.l.Error(fmt.Sprintf(f, a...)) }
func (v vkLogger) WithField(k string, val any) vklog.Logger {
	return vkLogger{l: v.l.With(k, val)}
}
func (v vkLogger) WithFields(fs vklog.Fields) vklog.Logger {
	args := make([]any, 0, 2*len(fs))
	for k, val := range fs {
		args = append(args, k, val)
	}
	return vkLogger{l: v.l.With(args...)}
}
func (v vkLogger) WithError(err error) vklog.Logger { return vkLogger{l: v.l.With("err", err)} }

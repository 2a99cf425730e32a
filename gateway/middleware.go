package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
)

type requestIDKey struct{}

// A client's request id is echoed only when it is short and printable, so
// that it cannot inject anything into logs or headers.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func newUUID() string { return uuid.NewString() }

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// statusWriter remembers the status for the request log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withRequestID takes X-Request-Id from the client or makes one, echoes it,
// and logs one line per request with it.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = newUUID()
		}
		w.Header().Set("X-Request-Id", id)
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("request_id", id),
			slog.String("method", clip(r.Method, 16)),
			slog.String("path", clip(r.URL.Path, 512)),
			slog.Int("status", sw.status),
			slog.Duration("duration", time.Since(start)))
	})
}

// withRecovery turns a panic in a handler into a 500 with the error shape
// instead of a dropped connection.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "handler panic", "request_id", requestID(r.Context()), "panic", v)
				writeError(w, errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", requestID(r.Context())))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusClientGone is the status of a request whose client left before
// the answer (nginx's 499): nobody reads it, but the log and the metrics
// tell it from a failure of the gateway.
const statusClientGone = 499

// handle adapts a handler that returns an error: an *apiError is the answer,
// anything else is logged and answered with a 500 that names the request
// id (the detail stays in the log).
func (s *Server) handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var ae *apiError
		if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			ae = errorf(statusClientGone, codeClientGone, "the client closed the request")
		} else if !errors.As(err, &ae) {
			s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()), "err", err)
			ae = errorf(http.StatusInternalServerError, codeInternal, "internal error (request %s)", requestID(r.Context()))
		}
		writeError(w, ae)
	})
}

package engine

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vmplane/vmplane/schemas"
)

// Hooks observe the poll loop, as kgo.WithHooks observes a client: the
// loop calls them at fixed points of a batch, and what they do changes
// nothing of what it decides or writes, except the headers OnStepped may
// add to the outputs (a trace context). They are called from the poll
// loop's goroutine, one at a time, and must not block.
//
// Config.Hooks nil is the metrics and spans of internal/telemetry
// (telemetry.go); NopHooks observe nothing.
type Hooks interface {
	// OnStep is called before Step with the decoded input. The context it
	// returns (carrying the step's span, say) is the one OnStepped gets.
	OnStep(ctx context.Context, in schemas.Record) context.Context
	// OnStepped is called with Step's outputs before they are produced.
	OnStepped(ctx context.Context, in schemas.Record, outs []schemas.Record)
	// OnTick is called with the outputs of a key's Tick before they are
	// produced.
	OnTick(key string, outs []schemas.Record)
	// OnDeadLetter is called for a consumed record that goes to dlq.v1,
	// with the reason.
	OnDeadLetter(kr *kgo.Record, err error)
	// OnEnd is called when a batch's transaction has ended: took is how
	// long committing (or failing to) took, keys how many keys have state.
	// A batch aborted before its end (a partition not restored, an output
	// that does not encode) calls no OnEnd.
	OnEnd(took time.Duration, committed bool, keys int)
	// OnHold is called when the timers of restored partitions are held
	// until their inputs are read to where they stood at the assignment
	// (held true), and when the hold ends: read, given up, or the
	// partitions revoked (held false). holding is how many partitions'
	// timers are held now.
	OnHold(parts []int32, held bool, holding int)
}

// NopHooks observe nothing; embed them to implement a part of Hooks.
type NopHooks struct{}

// OnStep returns ctx.
func (NopHooks) OnStep(ctx context.Context, _ schemas.Record) context.Context { return ctx }

// OnStepped does nothing.
func (NopHooks) OnStepped(context.Context, schemas.Record, []schemas.Record) {}

// OnTick does nothing.
func (NopHooks) OnTick(string, []schemas.Record) {}

// OnDeadLetter does nothing.
func (NopHooks) OnDeadLetter(*kgo.Record, error) {}

// OnEnd does nothing.
func (NopHooks) OnEnd(time.Duration, bool, int) {}

// OnHold does nothing.
func (NopHooks) OnHold([]int32, bool, int) {}

package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Event is an asynchronous QMP event.
type Event struct {
	Name string          `json:"event"`
	Data json.RawMessage `json:"data"`
}

// QMPError is an error answer of QEMU to a command.
type QMPError struct {
	Class, Desc string
}

func (e *QMPError) Error() string { return "qmp: " + e.Class + ": " + e.Desc }

// ErrClosed is returned by Execute once the connection is gone (QEMU quit).
var ErrClosed = errors.New("qmp: connection closed")

// Client is a QMP connection: JSON objects, one per line, over a unix
// socket. Commands carry an id and are matched to their answer, so several
// goroutines may execute at once while events stream to Events.
type Client struct {
	conn   net.Conn
	events chan Event

	mu      sync.Mutex
	nextID  int
	waiting map[string]chan reply
	closed  bool
	done    chan struct{}
}

type reply struct {
	ret json.RawMessage
	err error
}

// message is any line QEMU sends.
type message struct {
	QMP    json.RawMessage `json:"QMP"`
	Event  string          `json:"event"`
	Data   json.RawMessage `json:"data"`
	ID     string          `json:"id"`
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
}

// Dial connects to a QMP socket, reads the greeting and leaves capability
// negotiation mode. It retries until ctx ends, since a just-started QEMU may
// not listen yet.
func Dial(ctx context.Context, path string) (*Client, error) {
	for {
		c, err := dialOnce(ctx, path)
		if err == nil || !errors.Is(err, errConnect) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// errConnect marks a failure to reach the socket at all, which Dial retries.
var errConnect = errors.New("qmp: no connection")

// dialOnce connects once. QEMU serves one client per monitor socket at a
// time and greets the next only when the first has gone, so the greeting is
// read under ctx too: a monitor held by another process fails when ctx ends
// instead of blocking forever.
func dialOnce(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("qmp dial %s: %w: %w", path, errConnect, err)
	}
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			// Fails only on a closed connection, whose read fails anyway.
			_ = conn.SetReadDeadline(time.Unix(1, 0))
		case <-stop:
		}
	}()
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	close(stop)
	<-watched
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("qmp greeting from %s: %w", path, err)
	}
	var greet message
	if err := json.Unmarshal(line, &greet); err != nil || greet.QMP == nil {
		conn.Close()
		return nil, fmt.Errorf("qmp greeting from %s: %q", path, line)
	}
	c := &Client{conn: conn, events: make(chan Event, 64), waiting: map[string]chan reply{}, done: make(chan struct{})}
	go c.read(r)
	if _, err := c.Execute(ctx, "qmp_capabilities", nil); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Events streams asynchronous events; it is closed with the connection.
// Events that nobody reads fast enough are dropped.
func (c *Client) Events() <-chan Event { return c.events }

// Done is closed when the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.done }

// Execute runs a command and returns its "return" value.
func (c *Client) Execute(ctx context.Context, cmd string, args any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", cmd, ErrClosed)
	}
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan reply, 1)
	c.waiting[id] = ch
	c.mu.Unlock()

	req := map[string]any{"execute": cmd, "id": id}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("qmp %s: %w", cmd, err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("qmp %s: %w", cmd, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, r.err)
		}
		return r.ret, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("qmp %s: %w", cmd, ctx.Err())
	}
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.waiting, id)
	c.mu.Unlock()
}

// read dispatches every line: answers to their caller, events to Events.
func (c *Client) read(r *bufio.Reader) {
	defer c.shut()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Event != "" {
			select {
			case c.events <- Event{Name: m.Event, Data: m.Data}:
			default:
			}
			continue
		}
		c.mu.Lock()
		ch, ok := c.waiting[m.ID]
		delete(c.waiting, m.ID)
		c.mu.Unlock()
		if !ok {
			continue
		}
		if m.Error != nil {
			ch <- reply{err: &QMPError{Class: m.Error.Class, Desc: m.Error.Desc}}
		} else {
			ch <- reply{ret: m.Return}
		}
	}
}

// shut fails every waiting command and closes Events and Done.
func (c *Client) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for id, ch := range c.waiting {
		ch <- reply{err: ErrClosed}
		delete(c.waiting, id)
	}
	close(c.events)
	close(c.done)
}

// Close drops the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}

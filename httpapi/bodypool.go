package httpapi

import (
	"net"
	"net/http"
	"sync"

	"golang.org/x/sync/semaphore"
)

// bodyChunk is how much of a body is read, and reserved from its pool, at
// a time. A client that trickles its body holds one chunk of the pool,
// not the whole of --max-body: 300 of them hold 1.2 MiB.
const bodyChunk = 4 << 10

// bodyPool bounds the memory held by request bodies of one kind, read or
// being handled: webhooks, whose senders are known only once a body is
// in, and token-checked requests, whose senders are known before. Each
// kind has a pool of its own, so that unauthenticated clients, however
// many and however slow, never take the room of authenticated ones. The
// pool counts bytes, reserved a chunk at a time as a body arrives and held
// until its handler returns (its bytes are alive until then).
type bodyPool struct {
	name  string // "webhook", "api": the refusal's reason says which
	size  int64  // bytes
	bytes *semaphore.Weighted
}

func newBodyPool(name string, size int64) *bodyPool {
	return &bodyPool{name: name, size: size, bytes: semaphore.NewWeighted(size)}
}

// reserve takes n bytes of the pool if it has them, without waiting.
func (p *bodyPool) reserve(n int64) bool { return p.bytes.TryAcquire(n) }

// release gives n bytes back.
func (p *bodyPool) release(n int64) {
	if n > 0 {
		p.bytes.Release(n)
	}
}

// addressCap bounds the bodies read at once from one client address, so
// that one host cannot hold every connection's worth of a pool however
// slowly it sends. Behind a proxy that does not buffer bodies every
// client has the proxy's address: raise it, or turn it off (0).
type addressCap struct {
	limit int // at most this many per address; 0 is no limit
	mu    sync.Mutex
	held  map[string]int
}

func newAddressCap(limit int) *addressCap {
	return &addressCap{limit: limit, held: map[string]int{}}
}

// take counts a body read from r's address, if the address has room, and
// returns how to give it back.
func (c *addressCap) take(r *http.Request) (release func(), ok bool) {
	if c.limit <= 0 {
		return func() {}, true
	}
	addr := remoteHost(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[addr] >= c.limit {
		return nil, false
	}
	c.held[addr]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.held[addr]--; c.held[addr] <= 0 {
				delete(c.held, addr)
			}
		})
	}, true
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type bodyRoomKey struct{}

// leavePool gives a request's body room back to its pool before its
// handler returns: for a request that becomes a live stream (an event
// stream, an MCP listen), whose body, read long before, is not what it
// holds while it lasts. Streams have caps of their own (streamLimit);
// left in the pool, 32 of them once took every body's room, and every
// tenant's submissions were answered 503.
func leavePool(r *http.Request) {
	if release, ok := r.Context().Value(bodyRoomKey{}).(func()); ok {
		release()
	}
}

// onlyOnce is f, run at most once however often it is called.
func onlyOnce(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}

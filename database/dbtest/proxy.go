package dbtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP relay in front of PostgreSQL that a test can cut: every
// byte goes to the real server, so what the code under test meets when the
// relay drops its connections (Cut) or refuses new ones (Down) is exactly
// what a restart, a failover or a network partition does to it — errors
// from the real driver, not a mock's.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy relays a loopback port to the server of rawURL (a PostgreSQL
// URL); it stops at the test's cleanup.
func NewProxy(t testing.TB, rawURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("dbtest: proxy: parse %s: %v", rawURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dbtest: proxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is rawURL pointed at the proxy instead of its server.
func (p *Proxy) URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Cut closes every connection relayed now, as pg_terminate_backend of all
// of them or a server restart would; new connections are relayed.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// Down cuts every connection and refuses new ones (they are accepted and
// closed at once, as a server that is down behind a load balancer) until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.Cut()
}

// Up relays new connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client], p.conns[server] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(client, server)
		go p.pipe(server, client)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src) // a cut connection ends here: nothing to report
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.wg.Wait()
	p.Cut()
}

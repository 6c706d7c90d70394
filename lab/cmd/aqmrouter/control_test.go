package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/lab/router"
)

// idle is a device with no packets.
type idle struct{ stop chan struct{} }

func (d idle) ReadBatch([][]byte, []int) (int, error) { <-d.stop; return 0, os.ErrDeadlineExceeded }
func (d idle) WriteBatch(p [][]byte) (int, error)     { return len(p), nil }
func (d idle) SetReadDeadline(t time.Time) error {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	return nil
}

func runningRouter(t *testing.T, cfg router.Config) *router.Router {
	t.Helper()
	r, err := router.New(cfg, idle{make(chan struct{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// TestControlEndpoint protects /config: a POST changes the queue and rate
// of the running router, a bad value is answered 400 with the setting named
// and changes nothing, and GET shows what is in effect.
func TestControlEndpoint(t *testing.T) {
	r := runningRouter(t, router.Config{AQM: "fifo", Rate: 10 * aqm.Mbit})
	n := 0
	srv := httptest.NewServer(controlHandler(r, func() { n++ }))
	defer srv.Close()
	post := func(v url.Values) (int, string) {
		resp, err := http.PostForm(srv.URL, v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(url.Values{"aqm": {"cake"}, "rate": {"20mbit"}}); code != 200 || !strings.Contains(body, `"aqm":"cake"`) || !strings.Contains(body, "20mbit") {
		t.Fatalf("POST aqm=cake rate=20mbit: %d %s", code, body)
	}
	for _, c := range []struct {
		v     url.Values
		field string
	}{
		{url.Values{"rate": {"fast"}}, "rate"},
		{url.Values{"rate": {"0"}}, "Rate"},
		{url.Values{"aqm": {"nonesuch"}}, "AQM"},
		{url.Values{"limit": {"-3"}}, "limit"},
		{url.Values{"colour": {"blue"}}, "colour"},
		{url.Values{"aqm": {"codel"}, "params": {"target=banana"}}, "AQM"},
	} {
		code, body := post(c.v)
		if code != 400 || !strings.Contains(body, c.field) {
			t.Errorf("POST %v: %d %q; want 400 naming %s", c.v, code, body, c.field)
		}
	}
	if c := r.Config(); c.AQM != "cake" || c.Rate != 20*aqm.Mbit || n != 1 {
		t.Errorf("in effect %s at %v after %d changes; want cake at 20Mbit after 1", c.AQM, c.Rate, n)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}

// TestControlFile protects the SIGHUP file: its settings are applied, and a
// file with a bad line or value changes nothing and says where.
func TestControlFile(t *testing.T) {
	r := runningRouter(t, router.Config{AQM: "fifo", Rate: 10 * aqm.Mbit})
	path := filepath.Join(t.TempDir(), "control")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# the link\naqm = fq-codel\nrate=30mbit\nparams = target=10ms\n")
	if err := applyFile(r, path); err != nil {
		t.Fatal(err)
	}
	if c := r.Config(); c.AQM != "fq-codel" || c.Rate != 30*aqm.Mbit || c.Params != "target=10ms" {
		t.Fatalf("in effect %+v", c)
	}
	for _, bad := range []struct{ text, want string }{
		{"aqm fifo\n", "line 1"},
		{"aqm = fifo\nrate = -5\n", "rate"},
		{"aqm = pie\nparams = nosuch=1\n", "AQM"},
	} {
		write(bad.text)
		if err := applyFile(r, path); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v; want an error naming %s", bad.text, err, bad.want)
		}
		if c := r.Config(); c.AQM != "fq-codel" || c.Rate != 30*aqm.Mbit {
			t.Fatalf("a refused file changed the configuration: %+v", c)
		}
	}
}

// TestLoopback protects the rule that /config is served on loopback only.
func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:9": true, "[::1]:9": true, "localhost:9": true, "0.0.0.0:9": false, "10.1.2.3:9": false, ":9": false} {
		if loopback(addr) != want {
			t.Errorf("loopback(%q) = %v", addr, !want)
		}
	}
}

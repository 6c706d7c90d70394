package main

// The router's control surface: the queue, its parameters and the rate,
// changed while it runs, from a file re-read on SIGHUP (-control) or through
// /config beside the metrics on a loopback address (-metrics).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/lab/router"
)

// settings are the fields the control surface changes, as it shows them.
type settings struct {
	AQM    string `json:"aqm"`
	Rate   string `json:"rate"`
	Limit  int    `json:"limit"`
	Params string `json:"params"`
}

func settingsOf(c router.Config) settings {
	return settings{AQM: c.AQM, Rate: c.Rate.String(), Limit: c.LimitPackets, Params: c.Params}
}

// applySettings returns cfg with the settings in kv applied: aqm, rate (tc
// syntax), limit (packets) and params (name=value,...; an empty value
// clears them). An error names the setting; cfg is then returned as it
// was.
func applySettings(cfg router.Config, kv map[string]string) (router.Config, error) {
	next := cfg
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		v := kv[k]
		switch k {
		case "aqm":
			next.AQM = v
		case "rate":
			var r aqm.Rate
			if err := r.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("rate %q: %v", v, err))
				continue
			}
			next.Rate = r
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("limit %q: want a number of packets, 0 for the preset", v))
				continue
			}
			next.LimitPackets = n
		case "params":
			next.Params = v
		default:
			errs = append(errs, fmt.Errorf("%s: unknown setting (want aqm, rate, limit or params)", k))
		}
	}
	if len(errs) > 0 {
		return cfg, errors.Join(errs...)
	}
	return next, nil
}

// readSettings reads a control file: one name = value (or name=value) per
// line; blank lines and lines starting with # are skipped.
func readSettings(r io.Reader) (map[string]string, error) {
	kv := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want name = value", n)
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return kv, sc.Err()
}

// reconfigure applies kv to the running router r, or changes nothing and
// says why.
func reconfigure(r *router.Router, kv map[string]string) error {
	cfg, err := applySettings(r.Config(), kv)
	if err != nil {
		return err
	}
	return r.Reconfigure(cfg)
}

// applyFile reads the control file at path and applies it to r.
func applyFile(r *router.Router, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	kv, err := readSettings(f)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := reconfigure(r, kv); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// watchHUP re-reads the control file on every SIGHUP until ctx ends.
func watchHUP(ctx context.Context, r *router.Router, path string, logf func(string, ...any)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := applyFile(r, path); err != nil {
				logf("control: %v (configuration unchanged)", err)
				continue
			}
			logf("control: %s: now %v", path, r)
		}
	}
}

// controlHandler serves /config: GET shows the settings in effect as JSON;
// POST with form values aqm, rate, limit and params (each optional) changes
// them and shows the result, or answers 400 naming the bad setting and
// changes nothing.
func controlHandler(r *router.Router, count func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet:
		case http.MethodPost:
			if err := req.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			kv := map[string]string{}
			for k, vs := range req.PostForm {
				kv[k] = vs[len(vs)-1]
			}
			if err := reconfigure(r, kv); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if count != nil {
				count()
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(settingsOf(r.Config()))
	})
}

// loopback reports whether addr (host:port) names a loopback address, where
// the control endpoint may be served.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

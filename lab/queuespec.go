package lab

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aqmkit/aqmkit/queues"
)

// ParseQueues reads the -queues list: comma-separated router queue specs
//
//	[LABEL=]NAME[:LIMIT][[PARAMS]]
//
// NAME is the router's -aqm name, LIMIT its -limit in packets, PARAMS its
// -params (name=value pairs separated by commas, which the brackets keep
// out of the list's own split) and LABEL the name the queue goes by in
// reports instead of the spec itself:
//
//	fifo:1000,fq-codel,no-guard=fq-codel[disable-flood-guard=true]
//
// For a name in the library's registry the params are checked against its
// Config here, so a misspelt field fails before any run. "" gives nil (each
// test's default); "none" gives no router queue.
func ParseQueues(s string) ([]Queue, error) {
	if s == "" {
		return nil, nil
	}
	if s == "none" {
		return []Queue{}, nil
	}
	fields, err := splitSpecs(s)
	if err != nil {
		return nil, err
	}
	out := make([]Queue, 0, len(fields))
	for _, f := range fields {
		q, err := ParseQueue(f)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// splitSpecs splits s at the commas outside brackets.
func splitSpecs(s string) ([]string, error) {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("%q: nested '['", s)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("%q: ']' without '['", s)
			}
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", s)
	}
	return append(out, s[from:]), nil
}

// ParseQueue reads one router queue spec, [LABEL=]NAME[:LIMIT][[PARAMS]]
// (see ParseQueues).
func ParseQueue(spec string) (Queue, error) {
	f := strings.TrimSpace(spec)
	head, params, bracket := strings.Cut(f, "[")
	if bracket {
		var ok bool
		if params, ok = strings.CutSuffix(params, "]"); !ok || strings.ContainsAny(params, "[]") {
			return Queue{}, fmt.Errorf("%q: the params must close the spec, as NAME[name=value,...]", spec)
		}
		if strings.TrimSpace(params) == "" {
			return Queue{}, fmt.Errorf("%q: empty params []", spec)
		}
	}
	var q Queue
	if label, rest, ok := strings.Cut(head, "="); ok {
		if label = strings.TrimSpace(label); label == "" || strings.ContainsAny(label, " \t:") {
			return Queue{}, fmt.Errorf("%q: the label before '=' must be one word", spec)
		}
		q.Name, head = label, rest
	}
	name, lim, hasLim := strings.Cut(strings.TrimSpace(head), ":")
	if name == "" || strings.ContainsAny(name, " \t=") {
		return Queue{}, fmt.Errorf("%q: no queue name", spec)
	}
	q.Router, q.Params = name, strings.TrimSpace(params)
	if hasLim {
		n, err := strconv.Atoi(lim)
		if err != nil || n <= 0 {
			return Queue{}, fmt.Errorf("%q: limit must be a positive number of packets", spec)
		}
		q.Limit = n
	}
	if q.Params != "" {
		if s, ok := queues.Lookup(name); ok {
			cfg, err := s.Config(queues.Options{})
			if err == nil {
				_, err = queues.SetParams(cfg, q.Params)
			}
			if err != nil {
				return Queue{}, fmt.Errorf("%q: %v", spec, err)
			}
		}
	}
	return q, nil
}

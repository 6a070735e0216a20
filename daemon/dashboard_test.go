package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardFile is the Grafana dashboard shipped for the server's metrics.
const dashboardFile = "../metrics/grafana/gonfsrdma.json"

// dashboardQueries returns every PromQL expression of a Grafana
// dashboard: panel targets (rows' nested panels too) and query
// variables.
func dashboardQueries(t *testing.T, raw []byte) []string {
	t.Helper()
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has a target without an expression", p.Title)
				}
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if json.Unmarshal(v.Query, &s) != nil {
				t.Fatalf("variable query %s", v.Query)
			}
			q.Query = s
		}
		// label_values(METRIC, label) names METRIC.
		if rest, ok := strings.CutPrefix(q.Query, "label_values("); ok {
			if i := strings.IndexByte(rest, ','); i > 0 {
				out = append(out, strings.TrimSpace(rest[:i]))
				continue
			}
		}
		t.Errorf("variable query %q is not label_values(METRIC, LABEL)", q.Query)
	}
	return out
}

// promqlKeywords are identifiers of PromQL that are not metric names.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"offset": true, "bool": true, "and": true, "or": true, "unless": true, "atan2": true,
	"inf": true, "nan": true,
	// aggregation operators, which may be followed by by/without before "("
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// promqlMetricNames extracts the metric names a PromQL expression
// selects: identifiers outside label matchers, ranges and strings that
// are neither functions or aggregations (followed by "("), keywords,
// the label lists of by/without/on/ignoring/group_*, nor Grafana
// variables ($name).
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	isStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isPart := func(c byte) bool { return isStart(c) || c >= '0' && c <= '9' }
	skipTo := func(i int, close byte) (int, error) {
		for ; i < len(expr); i++ {
			switch expr[i] {
			case close:
				return i + 1, nil
			case '"', '\'', '`':
				q := expr[i]
				for i++; i < len(expr) && expr[i] != q; i++ {
					if expr[i] == '\\' {
						i++
					}
				}
			}
		}
		return 0, fmt.Errorf("unclosed %q in %q", close, expr)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '{':
			j, err := skipTo(i+1, '}')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '[':
			j, err := skipTo(i+1, ']')
			if err != nil {
				return nil, err
			}
			i = j
		case c == '"' || c == '\'' || c == '`':
			j, err := skipTo(i+1, c)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '$':
			for i++; i < len(expr) && (isPart(expr[i]) || expr[i] == '{' || expr[i] == '}'); i++ {
			}
		case c >= '0' && c <= '9' || c == '.':
			for i++; i < len(expr) && (isPart(expr[i]) || expr[i] == '.'); i++ {
			}
		case isStart(c):
			j := i
			for j < len(expr) && isPart(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && expr[k] == ' ' {
				k++
			}
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				if k < len(expr) && expr[k] == '(' {
					end, err := skipTo(k+1, ')')
					if err != nil {
						return nil, err
					}
					k = end
				}
				j = k
			case promqlKeywords[strings.ToLower(word)]:
			case k < len(expr) && expr[k] == '(':
				// a function or an aggregation
			default:
				names = append(names, word)
			}
			i = j
		default:
			i++
		}
	}
	return names, nil
}

func TestPromQLMetricNames(t *testing.T) {
	cases := map[string][]string{
		`sum by (le, procedure) (rate(gonfsrdma_rpc_call_duration_seconds_bucket{instance=~"$instance",procedure=~"a|b"}[$__rate_interval]))`: {"gonfsrdma_rpc_call_duration_seconds_bucket"},
		`time() - gonfsrdma_exports_last_reload_success_timestamp_seconds{x="}"}`:                                                             {"gonfsrdma_exports_last_reload_success_timestamp_seconds"},
		`topk(10, sum without (direction) (a_total)) / on (client) group_left (version) b_info > 0.5 and bool c`:                              {"a_total", "b_info", "c"},
		`histogram_quantile(0.99, x_bucket offset 5m)`:                                                                                        {"x_bucket"},
	}
	for expr, want := range cases {
		got, err := promqlMetricNames(expr)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", expr, got, err, want)
		}
	}
	if _, err := promqlMetricNames(`rate(x{a="b"[5m])`); err == nil {
		t.Error("an unclosed matcher passed")
	}
}

// TestDashboardNamesExportedMetrics checks that every query of the
// shipped Grafana dashboard names a metric a live server exports: the
// daemon serves a workload over TCP and RDMA and its /metrics is
// scraped.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	queries := dashboardQueries(t, raw)
	if len(queries) < 10 {
		t.Fatalf("only %d queries in the dashboard", len(queries))
	}
	m := startMetricsDaemon(t)
	runMetricsWorkload(t, m)
	exported := m.scrape(t).Names()
	for _, q := range queries {
		names, err := promqlMetricNames(q)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("query %q names no metric", q)
		}
		for _, n := range names {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suffix); ok && exported[b] == "histogram" {
					base = b
				}
			}
			if _, ok := exported[base]; !ok {
				t.Errorf("query %q names %s, which the server does not export", q, n)
			}
		}
	}
}

// TestDashboardStatusNames checks that every status a dashboard query
// matches on (status=~"A|B", status!~"...") is one the server's calls
// can be counted under: a name in one of its programs' status tables or
// one of the dispatcher's outcomes.
func TestDashboardStatusNames(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	m := startMetricsDaemon(t)
	known := map[string]bool{"SUCCESS": true, "GARBAGE_ARGS": true, "SYSTEM_ERR": true, "AUTH_ERROR": true, "OTHER": true}
	for _, p := range m.d.disp.Programs() {
		for _, name := range p.Statuses {
			known[name] = true
		}
	}
	for _, name := range []string{"NFS3_OK", "MNT3_OK", "NLM4_GRANTED", "STAT_SUCC"} {
		if !known[name] {
			t.Fatalf("the server's status tables lack %s: %v", name, known)
		}
	}
	matcher := regexp.MustCompile(`status\s*(?:=~|!~|!=|=)\s*"([^"]*)"`)
	seen := 0
	for _, q := range dashboardQueries(t, raw) {
		for _, sm := range matcher.FindAllStringSubmatch(q, -1) {
			for _, name := range strings.Split(sm[1], "|") {
				seen++
				if !known[name] {
					t.Errorf("query %q matches status %q, which no call is counted under", q, name)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no query of the dashboard matches on status")
	}
}

package tasks

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
)

// dashScopeTable routes "wan" to a DashScope provider.
func dashScopeTable(t *testing.T) *providers.Table {
	t.Helper()
	p := &providers.Provider{Name: "p", Protocol: providers.ProtocolDashScope, BaseURLs: []string{"http://x"}}
	table, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{{Pattern: "wan", Kind: providers.KindImage, Provider: p}})
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func TestDashScopeBody(t *testing.T) {
	table := dashScopeTable(t)
	for i, c := range []struct {
		body string
		want map[string]string // gjson path: raw value; "" for absent
	}{
		{`{"model":"wan","prompt":"a lake","size":"1024x768","n":2,"seed":7,"watermark":false}`, map[string]string{
			"model": `"wan-up"`, "input.prompt": `"a lake"`, "parameters.size": `"1024*768"`, "parameters.n": `2`,
			"parameters.seed": `7`, "parameters.watermark": `false`, "prompt": "", "size": "",
		}},
		{`{"model":"wan","prompt":"x","img_url":"https://a/b.png","\u0077atermark":true,"bad.key":1,"":2,"style":{"a":[1]}}`, map[string]string{
			"input.img_url": `"https://a/b.png"`, "parameters.watermark": `true`, "parameters.bad\\.key": "",
			"parameters.style": `{"a":[1]}`, "parameters.img_url": "",
		}},
		// An image's seconds or duration is not the gateway's: copied.
		{`{"model":"wan","prompt":"x","duration":3}`, map[string]string{"parameters.duration": `3`}},
		{`{"model":"wan","prompt":"x","negative_prompt":"dogs"}`, map[string]string{
			"input.negative_prompt": `"dogs"`, "parameters.size": `"1024*1024"`,
		}},
	} {
		r, aerr := parseRequest([]byte(c.body), table, 0)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		got, err := dashScopeBody(&call{model: "wan-up", maxDepth: 128}, r)
		if err != nil || !json.Valid(got) {
			t.Fatalf("Test %d: %v: %s", i, err, got)
		}
		for path, want := range c.want {
			if v := gjson.GetBytes(got, path).Raw; v != want {
				t.Errorf("Test %d: %s = %s, want %q (body %s)", i, path, v, want, got)
			}
		}
	}
}

// TestDashScopeBodyManyMembers checks that a body of many members is
// rebuilt in one pass: what it allocates grows with the body, not with the
// body times its members (as setting each member by path did).
func TestDashScopeBodyManyMembers(t *testing.T) {
	table := dashScopeTable(t)
	var b strings.Builder
	b.WriteString(`{"model":"wan","prompt":"x"`)
	for i := range 5000 {
		fmt.Fprintf(&b, `,"k%d":0`, i)
	}
	b.WriteString(`}`)
	r, aerr := parseRequest([]byte(b.String()), table, 0)
	if aerr != nil {
		t.Fatal(aerr)
	}
	c := &call{model: "wan-up", maxDepth: 128}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := dashScopeBody(c, r)
	runtime.ReadMemStats(&after)
	if err != nil || gjson.GetBytes(out, "parameters.k4999").Raw != "0" {
		t.Fatalf("%v: the last member is not forwarded", err)
	}
	if n, limit := after.TotalAlloc-before.TotalAlloc, uint64(8*b.Len()+64<<10); n > limit {
		t.Errorf("a body of %d bytes and 5,000 members allocated %d bytes, want at most %d", b.Len(), n, limit)
	}
}

// TestDashScopeBodyDuration: a video's duration reaches DashScope as the
// "duration" it reads and bills by, whichever name the client gave it.
func TestDashScopeBodyDuration(t *testing.T) {
	p := &providers.Provider{Name: "p", Protocol: providers.ProtocolDashScope, BaseURLs: []string{"http://x"}}
	table, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{{Pattern: "wan", Kind: providers.KindVideo, Provider: p}})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		`{"model":"wan","prompt":"x","seconds":6}`,
		`{"model":"wan","prompt":"x","duration":"6"}`,
		`{"model":"wan","prompt":"x","seconds":"6","duration":6}`,
	} {
		r, aerr := parseRequest([]byte(body), table, 0)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		got, err := dashScopeBody(&call{model: "wan-up", maxDepth: 128}, r)
		if err != nil {
			t.Fatal(err)
		}
		if d, s := gjson.GetBytes(got, "parameters.duration").Raw, gjson.GetBytes(got, "parameters.seconds"); d != "6" || s.Exists() || r.seconds != 6 {
			t.Errorf("Test %d: billed %d s, sent %s", i, r.seconds, got)
		}
	}
}

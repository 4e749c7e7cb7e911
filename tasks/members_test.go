package tasks

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

func TestCheckUnique(t *testing.T) {
	for i, c := range []struct {
		body      string
		set       MemberSet
		wantParam string // "" when the body passes
	}{
		{`{"model":"m","n":1,"n":5}`, TaskMembers, "n"},
		{`{"n":1,"model":"m","n":5}`, TaskMembers, "n"},
		{`{"size":"1x1","size":"2x2"}`, TaskMembers, "size"},
		{`{"seconds":4,"duration":4,"seconds":8}`, TaskMembers, "seconds"},
		{`{"\u006e":1,"n":5}`, TaskMembers, "n"},
		{`{"mod\u0065l":"a","model":"b"}`, TaskMembers, "model"},
		{`{"negative_prompt":"a","negative\u005fprompt":"b"}`, TaskMembers, "negative_prompt"},
		{`{"response_format":"url","response_format":"b64_json"}`, ImagesMembers, "response_format"},
		// Repeats the gateway does not read pass.
		{`{"response_format":"url","response_format":"b64_json"}`, TaskMembers, ""},
		{`{"quality":"low","quality":"hd","user":"a","user":"b"}`, ImagesMembers, ""},
		{`{"extra":{"n":1,"n":2},"n":3}`, TaskMembers, ""},
		{`{"n\n":1,"n":2,"\u00f1":3,"\u00f1":4}`, TaskMembers, ""},
		{`{"model":"m","prompt":"x","size":"1x1","n":1,"seed":1,"seconds":1,"duration":1,"negative_prompt":""}`, ImagesMembers, ""},
		// Not an object: left to the caller.
		{`[1,1]`, TaskMembers, ""},
		{`{"n":1,"n":`, TaskMembers, ""},
	} {
		aerr := CheckUnique([]byte(c.body), 0, c.set)
		switch {
		case c.wantParam == "" && aerr != nil:
			t.Errorf("Test %d: %s refused: %v", i, c.body, aerr)
		case c.wantParam != "" && aerr == nil:
			t.Errorf("Test %d: %s passed, want a repeated %q refused", i, c.body, c.wantParam)
		case aerr != nil && (aerr.Status != 400 || aerr.Type != "invalid_request_error" || aerr.Param == nil || *aerr.Param != c.wantParam):
			t.Errorf("Test %d: %s: %+v, want a 400 invalid_request_error about %q", i, c.body, aerr, c.wantParam)
		}
	}
}

// TestManyMembersBoundedMemory checks that validating and forwarding a body
// of 200,000 distinct members allocates a bounded amount, not some bytes
// per member: the members the gateway reads are tracked in a MemberSet.
func TestManyMembersBoundedMemory(t *testing.T) {
	p := &providers.Provider{Name: "p", Protocol: "openai", BaseURLs: []string{"http://x"}}
	table, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{
		{Pattern: "img", Kind: providers.KindImage, Provider: p},
		{Pattern: "vid", Kind: providers.KindVideo, Provider: p},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model string
		edits forwardEdits
	}{
		{"img", forwardEdits{model: "gpt-image-1", drop: membersOf(memberNegativePrompt, memberSeed), defaultSize: "1024x1024"}},
		{"vid", forwardEdits{model: "sora-2", drop: membersOf(memberNegativePrompt, memberSeed, memberN), seconds: 4}},
	} {
		var b strings.Builder
		b.WriteString(`{"model":"` + c.model + `","prompt":"x","seconds":4`)
		for i := range 200_000 {
			fmt.Fprintf(&b, `,"k%d":0`, i)
			if i%1000 == 0 {
				fmt.Fprintf(&b, `,"\u006b%d":1`, i) // escaped keys too
			}
		}
		b.WriteString(`}`)
		body := []byte(b.String())
		run := func() {
			r, aerr := parseRequest(body, table, 128)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if _, err := forwardBody(r.body, 128, c.edits); err != nil {
				t.Fatal(err)
			}
		}
		run() // warm up
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		allocs := testing.AllocsPerRun(5, run)
		runtime.ReadMemStats(&after)
		perRun := (after.TotalAlloc - before.TotalAlloc) / 6 // AllocsPerRun runs once more to warm up
		if allocs > 50 || perRun > 64<<10 {
			t.Errorf("%s: a body of %d bytes and 200,000 members: %.0f allocations, %d bytes per request; want at most 50 and 64 KiB",
				c.model, len(body), allocs, perRun)
		}
	}
}

// TestCheckUniqueEverySpelling: every member the gateway reads, repeated
// with any one of its letters escaped (in either copy, \u00XX in either
// case), is refused naming it, on /v1/tasks and /v1/images/generations.
func TestCheckUniqueEverySpelling(t *testing.T) {
	for m, name := range memberNames {
		for _, set := range []MemberSet{TaskMembers, ImagesMembers} {
			if !set.has(member(m)) {
				continue
			}
			for at := range len(name) {
				for _, f := range []string{`\u%04x`, `\u%04X`} {
					esc := name[:at] + fmt.Sprintf(f, name[at]) + name[at+1:]
					for _, body := range []string{
						fmt.Sprintf(`{"%s":1,"x":0,"%s":2}`, name, esc),
						fmt.Sprintf(`{"%s":1,"%s":2}`, esc, name),
					} {
						aerr := CheckUnique([]byte(body), 0, set)
						if aerr == nil || aerr.Param == nil || *aerr.Param != name {
							t.Errorf("%s: %+v, want %q refused", body, aerr, name)
						}
					}
				}
			}
		}
	}
}

package tasks

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
)

// A key limited to some models reads only the tasks of those models: the
// others are left out of its lists, however they page, and answer 404
// like an unknown task (their media links with them).
func TestScopedOwnerReadsItsModelsOnly(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI,
		&providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage},
		&providers.Route{Pattern: "other-image", Kind: providers.KindImage})
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+b64+`"}]}`)
	})
	clock := fakeclock.New(time.Now())
	s := e.service(func(c *Config) { c.Clock = clock.Now })
	ctx := context.Background()
	var mine, others []string
	for i := range 12 {
		model := "gpt-image-1"
		if i%3 != 0 {
			model = "other-image"
		}
		tk, aerr := s.Create(ctx, alice, []byte(`{"model":"`+model+`","prompt":"p"}`), testMediaBase)
		if aerr != nil || tk.Status != StatusSucceeded {
			t.Fatalf("creating task %d: %v", i, aerr)
		}
		if model == "gpt-image-1" {
			mine = append([]string{tk.ID}, mine...)
		} else {
			others = append([]string{tk.ID}, others...)
		}
		clock.Advance(time.Millisecond)
	}
	scoped := alice
	scoped.Scope = func(m string) bool { return m == "gpt-image-1" }

	for _, id := range others {
		if _, aerr := s.Get(ctx, scoped, id); aerr == nil || aerr.Status != http.StatusNotFound {
			t.Errorf("the scoped key read %s, another model's task: %v", id, aerr)
		}
	}
	for _, id := range mine {
		if _, aerr := s.Get(ctx, scoped, id); aerr != nil {
			t.Errorf("the scoped key cannot read its model's task %s: %v", id, aerr)
		}
	}
	if _, aerr := s.Get(ctx, alice, others[0]); aerr != nil {
		t.Errorf("an unscoped key cannot read %s: %v", others[0], aerr)
	}
	// Pages of 2 walk the 4 tasks of the key's model, has_more on the
	// first page only, skipping the 8 others however they fall.
	var got []string
	after := ""
	for pages := 1; ; pages++ {
		p, aerr := s.ListPage(ctx, scoped, after, 2)
		if aerr != nil {
			t.Fatal(aerr)
		}
		for _, tk := range p.Tasks {
			got = append(got, tk.ID)
		}
		if !p.HasMore {
			if pages != 2 {
				t.Errorf("%d pages, want 2", pages)
			}
			break
		}
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		after = p.Tasks[len(p.Tasks)-1].ID
	}
	if len(got) != len(mine) {
		t.Fatalf("listed %v, want %v", got, mine)
	}
	for i := range got {
		if got[i] != mine[i] {
			t.Errorf("listed %v, want %v", got, mine)
		}
	}
	if _, aerr := s.ListPage(ctx, scoped, others[0], 20); aerr == nil || aerr.Status != http.StatusBadRequest {
		t.Errorf("paging after another model's task: %v, want 400", aerr)
	}
}

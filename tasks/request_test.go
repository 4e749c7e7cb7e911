package tasks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
)

// TestCheckCreate: a create's body is refused for its nesting and for a
// repeated member the gateway reads, before its model is read; a valid
// one gives its model.
func TestCheckCreate(t *testing.T) {
	for _, tc := range []struct {
		name, body, model, param string
		status                   int
	}{
		{name: "model", body: `{"model":"flux","prompt":"a cat"}`, model: "flux"},
		{name: "no model", body: `{"prompt":"a cat"}`},
		{name: "too deep", body: `{"model":"flux","x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, status: http.StatusBadRequest},
		{name: "repeated model", body: `{"model":"a","model":"b"}`, status: http.StatusBadRequest, param: "model"},
		{name: "invalid JSON passes to the service", body: `{"model":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, aerr := CheckCreate([]byte(tc.body), 32)
			if tc.status == 0 {
				if aerr != nil || model != tc.model {
					t.Fatalf("CheckCreate = %q, %v; want %q, nil", model, aerr, tc.model)
				}
				return
			}
			if aerr == nil || aerr.Status != tc.status {
				t.Fatalf("CheckCreate = %q, %v; want status %d", model, aerr, tc.status)
			}
			if tc.param != "" && (aerr.Param == nil || *aerr.Param != tc.param) {
				t.Errorf("param = %v, want %q", aerr.Param, tc.param)
			}
		})
	}
}

// TestCreateForRefuses: a model the caller may not use is refused before
// the storage guard, and a guard's refusal before any reservation.
func TestCreateForRefuses(t *testing.T) {
	forbidden := apierror.New(http.StatusForbidden, apierror.TypePermission, "", "no")
	down := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "storage_unavailable", "down")
	admitted := false
	admit := func(Estimate) (Hold, *apierror.Error) { admitted = true; return nil, nil }
	var guarded bool
	guard := func() *apierror.Error { guarded = true; return down }
	_, aerr := (*Service)(nil).CreateFor(context.Background(), Caller{
		Allow: func(model string) *apierror.Error {
			if model != "flux" {
				t.Errorf("Allow(%q), want flux", model)
			}
			return forbidden
		},
		Guard: guard, Admit: admit,
	}, "flux", []byte(`{"model":"flux"}`), nil)
	if aerr != forbidden || guarded || admitted {
		t.Fatalf("a forbidden model: %v (guarded %v, admitted %v), want the Allow refusal alone", aerr, guarded, admitted)
	}
	_, aerr = (*Service)(nil).CreateFor(context.Background(), Caller{
		Allow: func(string) *apierror.Error { return nil }, Guard: guard, Admit: admit,
	}, "flux", []byte(`{"model":"flux"}`), nil)
	if aerr != down || admitted {
		t.Fatalf("storage down: %v (admitted %v), want the guard's refusal", aerr, admitted)
	}
}

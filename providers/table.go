package providers

import (
	"fmt"
	"path"
	"sort"
)

// deployments checks r's deployments, filling them from Provider and
// UpstreamModel when r names none.
func (t *Table) deployments(r *Route) error {
	if len(r.Deployments) == 0 {
		if r.Provider == nil {
			return fmt.Errorf("model %q: no provider", r.Pattern)
		}
		r.Deployments = []*Deployment{{Provider: r.Provider, UpstreamModel: r.UpstreamModel}}
	}
	r.Provider, r.UpstreamModel = r.Deployments[0].Provider, r.Deployments[0].UpstreamModel
	for _, d := range r.Deployments {
		if d.Provider == nil {
			return fmt.Errorf("model %q: deployment without a provider", r.Pattern)
		}
		if _, ok := t.providers[d.Provider.Name]; !ok {
			return fmt.Errorf("model %q: unknown provider %q", r.Pattern, d.Provider.Name)
		}
		if d.Weight < 0 || d.MaxConcurrent < 0 || d.RPM < 0 || d.TPM < 0 {
			return fmt.Errorf("model %q: negative weight or limit", r.Pattern)
		}
		for _, k := range d.Keys {
			if k < 0 || k >= max(len(d.Provider.APIKeys), 1) {
				return fmt.Errorf("model %q: provider %q has no key #%d", r.Pattern, d.Provider.Name, k)
			}
		}
	}
	switch r.Policy {
	case "", PolicyWeightedRandom, PolicyRoundRobin, PolicyLeastRequests, PolicyLowestLatency:
	default:
		return fmt.Errorf("model %q: unknown lb_policy %q", r.Pattern, r.Policy)
	}
	return nil
}

// checkMixed checks a model whose deployments are on providers of
// different protocols: only a chat or messages model may mix them, each
// request translated for the deployment that takes it, and only on
// protocols that serve chat.
func checkMixed(r *Route) error {
	for _, d := range r.Deployments {
		if d.Provider.Protocol == r.Provider.Protocol {
			continue
		}
		if !translated(r.Kind) {
			return fmt.Errorf("model %q: deployments on providers of different protocols (%s, %s): only chat and messages models may mix them", r.Pattern, r.Provider.Protocol, d.Provider.Protocol)
		}
		if d.Provider.Protocol == ProtocolCohere || r.Provider.Protocol == ProtocolCohere {
			return fmt.Errorf("model %q: a cohere provider serves no chat model", r.Pattern)
		}
	}
	return nil
}

// checkFallbacks checks that r's fallbacks are exact models of its kind
// and protocol, so that the request can be sent to them unchanged, or
// chat and messages models falling back on each other, whose requests
// are translated.
func (t *Table) checkFallbacks(r *Route) error {
	for _, f := range r.Fallbacks {
		fr, ok := t.exact[f]
		switch {
		case !ok:
			return fmt.Errorf("model %q: fallback %q is not a configured model id", r.Pattern, f)
		case fr == r:
			return fmt.Errorf("model %q: falls back to itself", r.Pattern)
		case translated(r.Kind) && translated(fr.Kind):
		case fr.Kind != r.Kind || fr.Provider.Protocol != r.Provider.Protocol:
			return fmt.Errorf("model %q: fallback %q is a %s model on a %s provider, not %s on %s",
				r.Pattern, f, fr.Kind, fr.Provider.Protocol, r.Kind, r.Provider.Protocol)
		}
	}
	return nil
}

// Lookup returns the route serving model, or ErrUnknownModel.
func (t *Table) Lookup(model string) (*Route, error) {
	if t == nil {
		return nil, ErrUnknownModel
	}
	if r, ok := t.exact[model]; ok {
		return r, nil
	}
	for _, r := range t.globs {
		if ok, _ := path.Match(r.Pattern, model); ok {
			return r, nil
		}
	}
	return nil, ErrUnknownModel
}

// Provider returns the named provider, or nil.
func (t *Table) Provider(name string) *Provider { return t.providers[name] }

// Providers returns every provider, sorted by name.
func (t *Table) Providers() []*Provider {
	out := make([]*Provider, 0, len(t.providers))
	for _, p := range t.providers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Models returns the exact (non-glob) model ids in declaration order.
func (t *Table) Models() []*Route {
	out := make([]*Route, 0, len(t.exact))
	for _, r := range t.ordered {
		if !r.IsGlob() {
			out = append(out, r)
		}
	}
	return out
}

// Routes returns every route, exact and glob, in declaration order.
func (t *Table) Routes() []*Route {
	return append([]*Route(nil), t.ordered...)
}

// SingleTable is a table in which p alone serves every model ("*"),
// without NewTable's checks: the routing of a caller that has no table.
func SingleTable(p *Provider) *Table {
	r := &Route{Pattern: "*", Provider: p, Kind: DefaultKind(p.Protocol),
		Deployments: []*Deployment{{Provider: p}}}
	return &Table{providers: map[string]*Provider{p.Name: p}, exact: map[string]*Route{}, globs: []*Route{r}, ordered: []*Route{r}}
}

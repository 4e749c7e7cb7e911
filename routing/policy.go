package routing

import (
	"math/rand/v2"
	"sync/atomic"

	"github.com/caddy-air/caddy-air/providers"
)

// group is the routing state of one model route.
type group struct {
	route  *providers.Route
	deps   []*deployment
	policy policy
	rr     atomic.Uint64
	// weights are the deployments' weights in this model.
	weights map[*deployment]int
	// budget is how many attempts a request may make on this model.
	budget int
}

// policy picks one of the candidate deployments, which are never empty.
type policy func(g *group, cands []*deployment) *deployment

// policies by name.
var policies = map[string]policy{
	"":                             weightedRandom,
	providers.PolicyWeightedRandom: weightedRandom,
	providers.PolicyRoundRobin:     roundRobin,
	providers.PolicyLeastRequests:  leastRequests,
	providers.PolicyLowestLatency:  lowestLatency,
}

// newGroup builds the state of route rt.
func (r *Router) newGroup(rt *providers.Route) *group {
	g := &group{route: rt, policy: policies[rt.Policy], weights: make(map[*deployment]int)}
	if g.policy == nil {
		g.policy = weightedRandom
	}
	retries := 0
	for _, d := range rt.Deployments {
		dep := r.newDeployment(d)
		if g.weights[dep] == 0 {
			g.deps = append(g.deps, dep)
		}
		g.weights[dep] += max(d.Weight, 1)
		retries = max(retries, d.Provider.Retries)
	}
	g.budget = retries + 1
	return g
}

// weightedRandom picks a deployment with a probability proportional to
// its weight.
func weightedRandom(g *group, cands []*deployment) *deployment {
	if len(cands) == 1 {
		return cands[0]
	}
	total := 0
	for _, d := range cands {
		total += g.weights[d]
	}
	n := rand.IntN(total)
	for _, d := range cands {
		if n -= g.weights[d]; n < 0 {
			return d
		}
	}
	return cands[len(cands)-1]
}

// roundRobin picks the candidates in turn.
func roundRobin(g *group, cands []*deployment) *deployment {
	return cands[int((g.rr.Add(1)-1)%uint64(len(cands)))]
}

// leastRequests picks the deployment with the fewest requests in flight,
// at random among ties.
func leastRequests(_ *group, cands []*deployment) *deployment {
	return pickMin(cands, func(d *deployment) float64 { return float64(d.inflight.Load()) })
}

// lowestLatency picks the deployment with the lowest moving average of
// time to first byte, at random among ties; one never measured counts as
// the fastest, so that each gets measured.
func lowestLatency(_ *group, cands []*deployment) *deployment {
	return pickMin(cands, (*deployment).latency)
}

// pickMin picks the candidate of least score, at random among ties
// (reservoir sampling).
func pickMin(cands []*deployment, score func(*deployment) float64) *deployment {
	var best *deployment
	var bestScore float64
	ties := 0
	for _, d := range cands {
		s := score(d)
		switch {
		case best == nil || s < bestScore:
			best, bestScore, ties = d, s, 1
		case s == bestScore:
			ties++
			if rand.IntN(ties) == 0 {
				best = d
			}
		}
	}
	return best
}

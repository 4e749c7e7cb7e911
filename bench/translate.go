package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// translateScenarioID is the number of scenario translate in the set of
// wanted scenarios; -scenarios takes it by name.
const translateScenarioID = 11

// maxTranslateCPURatio is issue #29's target: a translated exchange costs
// at most 1.5× the CPU per request of the same exchange passed through.
const maxTranslateCPURatio = 1.5

// translateLabels are the rows of scenario translate: the same chat
// completions request for benchModel (passed through to the mock's chat
// completions) and for translatedModel (translated to the mock's Messages
// API, its answer translated back).
var translateLabels = [2]string{"passed through (" + benchModel + ")", "translated (" + translatedModel + ")"}

// translateScenario runs scenario translate: chat JSON at -rate and SSE
// at -stream-rate (the mock's default chunks: extensions such as
// mock_chunks do not survive a translation), sent by an OpenAI chat client
// to caddy-air for both models, alternating which goes first, and
// returns its table and verdicts.
func (b *bench) translateScenario(ctx context.Context) (string, error) {
	o := b.opts
	t := b.targets[1]
	var tbl, verdict strings.Builder
	tbl.WriteString("| Load | Model | req/s | p50 ms | p99 ms | first byte p50 / p99 ms | CPU µs/req | × passed through | errors |\n")
	tbl.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, load := range []struct {
		title  string
		stream bool
		rate   int
	}{
		{fmt.Sprintf("translate-1. chat, JSON, %d req/s", o.rate), false, o.rate},
		{fmt.Sprintf("translate-2. chat, SSE, %d req/s", o.streamRate), true, o.streamRate},
	} {
		body := chatBody(load.stream, "")
		bodies := [2][]byte{body, bytes.Replace(body, []byte(`"model":"`+benchModel+`"`), []byte(`"model":"`+translatedModel+`"`), 1)}
		runs := [2][]run{}
		for i := range bodies {
			req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: bodies[i], Stream: load.stream}
			if res := constantRate(ctx, t.client, req, load.rate, o.warmup, o.inflight, 30*time.Second); res.Errors > 0 {
				return "", fmt.Errorf("%s: warm-up, %s: %d errors, first: %s", load.title, translateLabels[i], res.Errors, res.FirstError)
			}
		}
		for round := range o.rounds {
			for k := range bodies {
				i := k
				if round%2 == 1 {
					i = 1 - k
				}
				if err := ctx.Err(); err != nil {
					return "", err
				}
				req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: bodies[i], Stream: load.stream}
				r, _, err := measure(t, func() result {
					return constantRate(ctx, t.client, req, load.rate, o.duration, o.inflight, 30*time.Second)
				})
				if err != nil {
					return "", err
				}
				b.logf("%s round %d %-28s %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  CPU %6.0f µs/req  errors %d %s",
					load.title, round+1, translateLabels[i], r.RPS(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.99)),
					r.CPUPerRequest(), r.Errors, r.FirstError)
				runs[i] = append(runs[i], r)
				time.Sleep(500 * time.Millisecond)
			}
		}
		base := summarize(runs[0])
		for i, rs := range runs {
			s := summarize(rs)
			var fb50, fb99 []float64
			for _, r := range rs {
				fb50 = append(fb50, ms(percentile(r.FirstBytes, 0.5)))
				fb99 = append(fb99, ms(percentile(r.FirstBytes, 0.99)))
			}
			first := "–"
			if load.stream {
				first = f(median(fb50), 2) + " / " + f(median(fb99), 2)
			}
			fmt.Fprintf(&tbl, "| %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", load.title, translateLabels[i],
				f(s.RPS, 0), f(s.P50, 2), f(s.P99, 2), first, f(s.CPU, 0), f(ratio(s.CPU, base.CPU), 2), s.Errors)
		}
		r := ratio(summarize(runs[1]).CPU, base.CPU)
		check := "PASS"
		if r > maxTranslateCPURatio {
			check = "**MISS**"
		}
		fmt.Fprintf(&verdict, "- %s: translated CPU/req %s× passed through (target ≤ %.2f×): %s\n", load.title, f(r, 2), maxTranslateCPURatio, check)
	}
	return "\n" + tbl.String() + "\n" + verdict.String(), nil
}

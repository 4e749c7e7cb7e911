package keys

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// MaxAllowIPs bounds the CIDRs of a key's allow-list.
const MaxAllowIPs = 64

// MaxGrace bounds the grace period of a regenerated key's old secret.
const MaxGrace = 30 * 24 * time.Hour

// ErrBadGrace is the error of a regenerate with a grace out of range.
var ErrBadGrace = fmt.Errorf("grace must be from 0 to %s", MaxGrace)

// ErrReplaced is the error of a request with a key's secret that was
// regenerated and whose grace period has ended; its text is safe to show.
var ErrReplaced = errors.New("this API key's secret has been regenerated; use the new secret")

// ErrIPNotAllowed is the error of a request from an address outside its
// key's allow-list; its text is safe to show to the client.
type ErrIPNotAllowed struct {
	// IP is the client's address.
	IP string
}

// Error implements error.
func (e *ErrIPNotAllowed) Error() string {
	return fmt.Sprintf("this API key may not be used from %s", e.IP)
}

// checkAllowIPs validates an allow-list: CIDRs or single addresses (IPv4
// or IPv6), returned as their masked CIDRs, without duplicates.
func checkAllowIPs(list []string) ([]string, []netip.Prefix, error) {
	var out []string
	var prefixes []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parsePrefix(s)
		if err != nil {
			return nil, nil, fmt.Errorf("allow_ips: %q is not a CIDR or an IP address", s)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p.String())
		prefixes = append(prefixes, p)
	}
	if len(out) > MaxAllowIPs {
		return nil, nil, fmt.Errorf("allow_ips: at most %d entries", MaxAllowIPs)
	}
	return out, prefixes, nil
}

// parsePrefix reads a CIDR or a single address, masked; an IPv4-mapped
// IPv6 address counts as its IPv4 one.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errors.New("bad address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// AllowsIP reports whether k may be used from ip, a client address as
// Caddy's client_ip gives it: k has no allow-list, or one of its CIDRs
// holds ip. An address that cannot be read is refused by a key with an
// allow-list.
func (k *Key) AllowsIP(ip string) bool {
	if len(k.AllowIPs) == 0 {
		return true
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.WithZone("").Unmap()
	for _, p := range k.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Regenerate gives key id a new secret, returned once. The old secret
// keeps working for grace (0: it stops at once), then is refused with
// ErrReplaced; a secret replaced by an earlier regenerate stops at once.
// Every instance's cache drops the key. A revoked key is not regenerated.
func (s *Service) Regenerate(ctx context.Context, id string, grace time.Duration) (string, *Key, error) {
	if grace < 0 || grace > MaxGrace {
		return "", nil, ErrBadGrace
	}
	stored, err := s.store.List(ctx, "")
	if err != nil {
		return "", nil, err
	}
	found := false
	for _, k := range stored {
		if k.ID == id {
			if k.RevokedAt != nil {
				return "", nil, ErrRevoked
			}
			found = true
		}
	}
	if !found {
		return "", nil, ErrNoSuchKey
	}
	secret, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	sk, err := s.store.Regenerate(ctx, id, Hash(secret), s.now().Add(grace))
	k, err := s.changed(sk, err)
	if err != nil {
		return "", nil, err
	}
	s.forget(sk.PrevHash)
	return secret, k, nil
}

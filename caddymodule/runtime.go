package caddymodule

import (
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
)

// loadPrices reads the price file at config load, so that a malformed one
// fails the load (and a reload keeps the old config). The file's text is
// kept for the console's operators' page.
func (a *App) loadPrices() (*billing.PriceTable, error) {
	if a.Prices == "" {
		return billing.ParsePrices("(no price file)", []byte(`{"models":{}}`))
	}
	data, err := os.ReadFile(a.Prices)
	if err != nil {
		return nil, fmt.Errorf("loading prices: reading price file: %w", err)
	}
	pt, err := billing.ParsePrices(a.Prices, data)
	if err != nil {
		return nil, fmt.Errorf("loading prices: %w", err)
	}
	a.priceText = string(data)
	return pt, nil
}

// logAtStart reports what a config starts with.
func (a *App) logAtStart() {
	a.logger.Info("air app started",
		zap.String("storage", storageName(a.storage)),
		zap.String("dir", a.storage.Directory()),
		zap.Int("providers", len(a.Providers)),
		zap.Int("models", len(a.Models)),
		zap.Bool("priced", a.Prices != ""))
}

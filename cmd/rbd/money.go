package main

import (
	"strconv"

	"github.com/runbookdev/runbook/rbtype"
)

// money prints an amount of money or credits as a person writes it: the
// shortest decimal, without float noise (0.01, not 0.010000000000000009)
// and without an exponent (0.0000015, not 1.5e-06).
func money(v float64) string {
	return strconv.FormatFloat(rbtype.Money(v), 'f', -1, 64)
}

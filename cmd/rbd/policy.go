package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/runbookdev/runbook/registry"
	"github.com/runbookdev/runbook/registry/policy"
)

// policyFile is rbd serve --policy: the policy in force, read at start
// (a missing or broken file stops the daemon) and again at each SIGHUP (a
// broken file then keeps the policy in force, and the log says why).
// Without --policy the built-in policy applies, and SIGHUP only says so.
type policyFile struct {
	path  string
	known []string
	cur   atomic.Pointer[policy.Policy]
	log   *slog.Logger
}

// loadPolicy reads the policy file against the catalogue's tags (a
// pattern must match one), or takes the built-in policy without a file.
func loadPolicy(path string, cat *registry.Catalogue, log *slog.Logger) (*policyFile, error) {
	pf := &policyFile{path: path, log: log}
	if cat != nil {
		pf.known = policy.KnownTags(cat.PolicyTags())
	} else {
		pf.known = policy.KnownTags(nil)
	}
	if path == "" {
		pf.cur.Store(policy.Builtin())
		return pf, nil
	}
	p, err := policy.ReadFile(path, pf.known)
	if err != nil {
		return nil, err
	}
	pf.cur.Store(p)
	return pf, nil
}

// current is the policy in force.
func (pf *policyFile) current() *policy.Policy { return pf.cur.Load() }

// reload reads the file again: the new policy replaces the old one for
// every plan admitted from now on; a file that does not read leaves the
// old one in force.
func (pf *policyFile) reload() {
	if pf.path == "" {
		pf.log.Info("SIGHUP: no --policy file; the built-in policy stays in force (only read_only steps run unattended)")
		return
	}
	old := pf.current()
	p, err := policy.ReadFile(pf.path, pf.known)
	if err != nil {
		pf.log.Error("SIGHUP: the policy file does not read; the policy in force is kept", "file", pf.path, "policy_hash", old.Hash(), "err", err)
		return
	}
	pf.cur.Store(p)
	pf.log.Info("SIGHUP: policy reloaded; runbooks admitted before keep what it decided then", "file", pf.path,
		"policy_hash", p.Hash(), "previous_hash", old.Hash(), "tenants", len(p.Tenants()))
}

// reloadOnHangup reloads the policy at each SIGHUP until ctx ends.
func (pf *policyFile) reloadOnHangup(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				pf.reload()
			}
		}
	}()
}

package httpapi

import (
	"net/http"
	"slices"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/rbtype"
	"github.com/runbookdev/runbook/runtime"
)

// notify is POST /v1/notifications, the webhook external processes call:
// 202 for a new notification, 200 for a repeat with the same payload, 409
// for the same correlation key with another payload, 401 for a missing,
// forged or stale signature, 400 for a malformed body, 413 for one over
// the cap. The signature is checked over the raw bytes, before the body is
// parsed, so nothing from an unsigned sender is interpreted.
func (s *Server) notify(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	if p := viaMCP(r); p != nil {
		// The notify tool of /mcp: the caller's token, not a signature,
		// is the authority, and only for its own tenant's waits.
		scope, err := s.mcpNotifier(p)
		if err != nil {
			return err
		}
		r = r.WithContext(runtime.WithScope(r.Context(), scope))
	} else if len(s.cfg.WebhookSecrets) > 0 {
		i, err := verifySignature(r.Header.Get(SignatureHeader), body, s.cfg.WebhookSecrets, s.cfg.Now())
		if err != nil {
			return s.refuse(r, reasonSignature, errorf(http.StatusUnauthorized, CodeUnauthorized, "%v", err))
		}
		if i < len(s.cfg.WebhookTenants) && s.cfg.WebhookTenants[i] != "" {
			// A tenant's secret ends only its tenant's waits.
			r = r.WithContext(runtime.WithScope(r.Context(), runtime.Scope{Tenant: s.cfg.WebhookTenants[i]}))
		}
	}
	var req apitype.NotificationRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	if req.Status == rbtype.OutcomeHeartbeat {
		at, err := s.engine.Heartbeat(r.Context(), req.CorrelationKey, req.Extend)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, apitype.NotificationResponse{Status: rbtype.InboxAccepted.String(), TimeoutAt: &at})
		return nil
	}
	n := runtime.Notification{CorrelationKey: req.CorrelationKey, Status: req.Status, Result: req.Result, Sender: senderSpan(r)}
	if req.Error != nil {
		n.ErrorCode, n.ErrorMessage = req.Error.Code, req.Error.Message
	}
	if req.Usage != nil {
		n.Usage = *req.Usage
	}
	res, err := s.engine.Notify(r.Context(), n)
	if err != nil {
		return err
	}
	switch res {
	case rbtype.InboxDuplicate:
		writeJSON(w, http.StatusOK, apitype.NotificationResponse{Status: res.String()})
	case rbtype.InboxConflict:
		return errorf(http.StatusConflict, CodeConflict,
			"correlation key %q was notified before with another payload; the first notification stands", req.CorrelationKey)
	default:
		writeJSON(w, http.StatusAccepted, apitype.NotificationResponse{Status: res.String()})
	}
	return nil
}

// mcpNotifier says whose waits the notify tool of /mcp may end for the
// principal p: those of its tenant (every tenant's for an admin), if its
// token holds the notify role. A daemon with no tokens but signed
// webhooks takes no notification through /mcp, which would go round the
// signature.
func (s *Server) mcpNotifier(p *Principal) (runtime.Scope, error) {
	if len(s.tokens.digests) == 0 && len(s.cfg.WebhookSecrets) > 0 {
		return runtime.Scope{}, errorf(http.StatusForbidden, CodeForbidden,
			"this daemon's notifications are signed (--webhook-secret-file) and its API has no tokens: the notify tool needs a token with the notify role")
	}
	if !p.has(RoleNotify) {
		return runtime.Scope{}, errorf(http.StatusForbidden, CodeForbidden, "this token (actor %s) lacks the notify role that the notify tool needs", p.Actor)
	}
	return runtime.Scope{Tenant: p.Tenant, All: slices.Contains(p.Roles, RoleAdmin)}, nil
}

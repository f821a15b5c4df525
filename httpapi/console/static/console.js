// rbd console: plain JavaScript, no libraries, no build step.
//
// Rules this file keeps, because the page shows data that anyone who can
// submit a runbook controls (step keys, arguments, results, errors):
//   - the DOM is built with createElement and textContent, never innerHTML;
//   - the API token lives in sessionStorage (this tab only) and travels
//     only in the Authorization header: never in a URL, never in a cookie;
//   - every action is the same /v1 API call the rbd client commands make.
"use strict";

(() => {
  const TOKEN_KEY = "rbd-token";
  const BY_KEY = "rbd-by";
  // The states the list filters by: the view's, a status or what a running
  // runbook waits for.
  const STATES = ["awaiting_approval", "in_doubt", "parked", "executing", "held_open", "in_progress",
    "escalated", "failed", "partial", "complete", "cancelled"];
  const PAGE = 50;
  const WAITING = 100; // runbooks waiting on a person shown at once
  const LEDGER_ROWS = 500; // rows kept on screen; the API has them all

  const main = document.getElementById("main");
  const logoutButton = document.getElementById("logout");
  const whoLabel = document.getElementById("who");

  // me is GET /v1/whoami's answer for the token in use: who it speaks for
  // and its roles; null before it is asked, or when the daemon has no
  // such endpoint. A token whose line names its actor is recorded as that
  // actor, so the gates then ask for no name.
  let me = null;
  async function whoami(signal) {
    if (me) return me;
    try {
      me = await api("GET", "/v1/whoami", null, signal);
    } catch (err) {
      if (err instanceof Unauthorized) throw err;
      return null;
    }
    sayWho();
    whoLabel.hidden = false;
    return me;
  }

  // sayWho says in the header who the ledger records as acting: the
  // token's actor when its line names one; else the name given at a gate
  // (kept for the tab), since such a token names no one and its "token-N"
  // is not a person. docs/daemon.md, "The console".
  function sayWho() {
    if (!me) return;
    const tenant = me.tenant ? " (" + me.tenant + ")" : "";
    if (me.actor_named) whoLabel.textContent = "Signed in as " + me.actor + tenant;
    else if (decider) whoLabel.textContent = "Deciding as " + decider + ", with " + me.actor + tenant;
    else whoLabel.textContent = "Signed in with " + me.actor + tenant + ", which names no one: you give a name when you decide";
  }

  function forgetMe() {
    me = null;
    whoLabel.hidden = true;
    whoLabel.textContent = "";
  }

  // current holds what the page on screen needs to stop: its live stream.
  let current = { abort: new AbortController() };
  // listCursors is the stack of cursors of the pages before this one.
  let listCursors = [];

  // ---------- DOM helpers: text only ----------

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  const SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      // A function is a listener ("onclick"); anything else is an
      // attribute's text, never code.
      if (typeof v === "function") e.addEventListener(k.replace(/^on/, ""), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
  }

  function append(e, children) {
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
  }

  function show(...children) {
    clear(main);
    append(main, children);
  }

  function badge(status) {
    return el("span", { class: "badge s-" + String(status).replace(/[^a-z_]/g, ""), "data-state": status }, String(status).replace(/_/g, " "));
  }

  // clock is a time of day, for the rows of a ledger, whose cells carry
  // the whole time as their title.
  function clock(s) {
    const d = new Date(s);
    return isNaN(d) ? String(s || "") : d.toISOString().slice(11, 19);
  }

  function time(s) {
    if (!s) return "";
    const d = new Date(s);
    return isNaN(d) ? String(s) : d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function json(v, attrs) {
    return el("pre", attrs || {}, v === undefined ? "" : JSON.stringify(v, null, 2));
  }

  // compact is a value on one line, shortened for a table cell.
  function compact(v, n) {
    const s = typeof v === "string" ? v : JSON.stringify(v);
    return s === undefined ? "" : short(s, n || 120);
  }

  function short(s, n) {
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // ago and left say a duration in the largest two units: "3d 4h".
  function span(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    const parts = [[Math.floor(s / 86400), "d"], [Math.floor(s / 3600) % 24, "h"], [Math.floor(s / 60) % 60, "m"], [s % 60, "s"]];
    const first = parts.findIndex(([n]) => n > 0);
    if (first < 0) return "0s";
    return parts.slice(first, first + 2).filter(([n]) => n > 0).map(([n, u]) => n + u).join(" ");
  }

  // countdown shows the time left until when, kept current by the ticker
  // below; past it, how long ago it was due.
  function countdown(when) {
    const e = el("span", { class: "countdown", "data-until": when });
    tickOne(e);
    return e;
  }

  function tickOne(e) {
    const left = new Date(e.getAttribute("data-until")) - Date.now();
    e.textContent = left >= 0 ? "in " + span(left) : "overdue by " + span(-left);
    e.classList.toggle("overdue", left < 0);
  }
  setInterval(() => {
    document.querySelectorAll(".countdown").forEach(tickOne);
    document.querySelectorAll(".waited").forEach((e) => { e.textContent = span(Date.now() - new Date(e.getAttribute("data-since"))); });
  }, 1000);

  function since(when) {
    return when ? span(Date.now() - new Date(when)) + " ago" : "";
  }

  function riskBadge(risk) {
    const r = String(risk || "low").replace(/[^a-z]/g, "");
    return el("span", { class: "risk risk-" + r }, r);
  }

  // gateWhy says in words what put a gate in front of a step.
  function gateWhy(why, policy) {
    switch (why) {
      case "policy": return policyText(policy);
      case "risk": return "its verb is high risk: such a step always waits for a person";
      case "verb": return "its verb declares a gate (human_confirm)";
      case "call": return "the runbook asks for it (:gate \"human_confirm\")";
    }
    return "";
  }

  // trustText is the tenant's earned trust in a gated step's verb, when
  // its policy has a trust rule for it (docs/design/semantics.md section
  // 17): each approval counts; a rejection or a failed attempt resets.
  function trustText(t) {
    if (!t || !t.after) return "";
    if (t.earned) return t.approvals + " of " + t.after + " approvals: earned; its next runbooks run unattended";
    return t.approvals + " of " + t.after + " approvals to auto-execute";
  }

  // policyText is what a policy's POLICY_GATED event said: its rule when it
  // names one, else all it said.
  function policyText(p) {
    if (!p) return "the tenant's policy";
    const rule = p.rule || p.tag || p.tags;
    return "the tenant's policy" + (rule ? ": " + compact(rule, 80) : " " + compact(p, 80));
  }

  function kv(pairs, attrs) {
    const dl = el("dl", Object.assign({ class: "kv" }, attrs || {}));
    for (const [k, v] of pairs) {
      if (v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)) continue;
      append(dl, [el("dt", {}, k), el("dd", { "data-fact": k }, v)]);
    }
    return dl;
  }

  // ---------- the API ----------

  class Unauthorized extends Error {}

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  function headers(extra) {
    const h = Object.assign({ Accept: "application/json" }, extra || {});
    const t = token();
    if (t) h.Authorization = "Bearer " + t;
    return h;
  }

  async function api(method, path, body, signal) {
    const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}), signal, cache: "no-store" };
    if (body) init.body = JSON.stringify(body);
    const res = await fetch(path, init);
    if (res.status === 401) throw new Unauthorized();
    const data = res.status === 204 ? null : await res.json().catch(() => null);
    if (!res.ok) {
      const err = (data && data.error) || {};
      throw new Error((err.code || res.status) + ": " + (err.message || res.statusText));
    }
    return data;
  }

  const rb = (id) => "/v1/runbooks/" + encodeURIComponent(id);

  // follow reads a runbook's live ledger (text/event-stream) through
  // fetch, since EventSource cannot send an Authorization header. It
  // resumes after a dropped connection and returns when the runbook has
  // finished ("end") or the page changed (abort).
  async function follow(id, onEvent, onState, signal) {
    let last = 0;
    while (!signal.aborted) {
      try {
        const res = await fetch(rb(id) + "/events?after=" + last, {
          headers: headers({ Accept: "text/event-stream" }), signal, cache: "no-store",
        });
        if (res.status === 401) throw new Unauthorized();
        if (res.status === 204) { onState("ended"); return; }
        if (!res.ok) throw new Error("events: " + res.status);
        onState("live");
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        let ev = { type: "message", data: "" };
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let nl;
          while ((nl = buf.indexOf("\n")) >= 0) {
            const line = buf.slice(0, nl).replace(/\r$/, "");
            buf = buf.slice(nl + 1);
            if (line === "") {
              if (ev.type === "end") { onState("ended"); return; }
              if (ev.data) {
                const e = JSON.parse(ev.data);
                if (e.id) last = Math.max(last, e.id);
                onEvent(e);
              }
              ev = { type: "message", data: "" };
            } else if (!line.startsWith(":")) {
              const i = line.indexOf(":");
              const field = i < 0 ? line : line.slice(0, i);
              const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
              if (field === "event") ev.type = val;
              else if (field === "data") ev.data += (ev.data ? "\n" : "") + val;
              else if (field === "id" && /^\d+$/.test(val)) last = Math.max(last, Number(val));
            }
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof Unauthorized) throw err;
      }
      onState("reconnecting");
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  // ---------- login ----------

  function showLogin(message) {
    // The login page signs no one in: whoever the last token spoke for is
    // forgotten with it.
    forgetMe();
    logoutButton.hidden = true;
    // No name attribute: were the form ever submitted natively (script
    // blocked, say), the token would otherwise land in the URL.
    const input = el("input", { type: "password", id: "token", autocomplete: "off", required: true, "aria-describedby": "token-help" });
    const form = el("form", { class: "card login", id: "login" },
      el("h1", {}, "Sign in to rbd"),
      el("label", { for: "token" }, "API token"),
      input,
      el("p", { class: "muted", id: "token-help" }, "A token from rbd's --api-token-file. It is kept in this tab only and sent as Authorization: Bearer."),
      message ? el("p", { class: "error", role: "alert" }, message) : null,
      el("button", { type: "submit", class: "primary" }, "Sign in"));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      try {
        await api("GET", "/v1/runbooks?limit=1");
        route();
      } catch (err) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(err instanceof Unauthorized ? "That token was refused." : String(err.message));
      }
    });
    show(form);
    input.focus();
  }

  // refused forgets a token the API turned down (a typo, or rotated
  // away) and asks for another.
  function refused() {
    current.abort.abort();
    forgetMe();
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("That token was refused.");
  }

  logoutButton.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    forgetMe();
    showLogin();
  });

  // ---------- the inbox: the runbooks ----------

  // waitsOn says what a runbook waits on, most pressing first: a person's
  // decision, resolution or retry, then the outside world.
  function waitsOn(r) {
    const out = [];
    for (const b of r.blocked_on || []) {
      if (b.reason === "REQUIRES_APPROVAL") out.push(["person", "approval of " + b.step, b.step]);
      else if (b.reason === "AWAITING_NOTIFICATION") out.push(["world", "a notification for " + b.step, b.step]);
      else if (b.reason === "AWAITING_TIMER") out.push(["world", "its timer, " + b.step, b.step]);
    }
    // What it waits on, whoever may do it: this token's next actions and
    // those only another token may take (unavailable_actions).
    for (const a of (r.next_actions || []).concat(r.unavailable_actions || [])) {
      if (a.kind === "resolve") out.push(["person", "a resolution of " + a.step, a.step]);
      else if (a.kind === "retry") out.push(["person", "a retry of " + a.step + (r.mode === "draft_only" ? " (for real)" : ""), a.step]);
      else if (a.kind === "close") out.push(["agent", "its agent, to close it", ""]);
    }
    return out;
  }

  function runbookRow(r, showTenant) {
    const href = "#/runbooks/" + encodeURIComponent(r.id);
    const waits = waitsOn(r);
    return el("tr", { "data-id": r.id, "data-needs-person": r.needs_person ? "true" : "false" },
      el("td", { class: "name" },
        el("a", { href, class: "rb-link" }, r.name || "runbook " + r.id.slice(0, 8)),
        el("div", { class: "id muted" }, r.id)),
      el("td", {}, badge(r.state || r.status), r.mode !== "execute" ? el("span", { class: "muted" }, " " + r.mode) : null),
      el("td", { class: "waits" }, waits.length
        ? waits.map(([who, text]) => el("div", { class: "wait-" + who }, text))
        : el("span", { class: "muted" }, "nothing", r.error ? el("div", { class: "code" }, r.error.code) : null)),
      el("td", { class: "opt" }, r.actor || ""),
      showTenant ? el("td", { class: "tenant" }, r.tenant) : null,
      el("td", { class: "opt" }, time(r.created_at), el("div", { class: "muted" }, since(r.updated_at) ? "updated " + since(r.updated_at) : "")));
  }

  function runbookTable(id, runbooks, showTenant) {
    return el("table", { id, class: "runbooks" },
      el("thead", {}, el("tr", {}, el("th", {}, "Runbook"), el("th", {}, "State"), el("th", {}, "Waits on"),
        el("th", { class: "opt" }, "Submitted by"), showTenant ? el("th", {}, "Tenant") : null, el("th", { class: "opt" }, "Created"))),
      el("tbody", {}, runbooks.map((r) => runbookRow(r, showTenant))));
  }

  // listPage is the console's home: the runbooks that wait on a person
  // first (a gate to decide, an escalation to resolve, a failure a retry
  // may fix), each with its name and what it waits on, then the rest,
  // newest first and paged. A state filter shows one list of that state;
  // an admin may pick a tenant.
  async function listPage(params, signal) {
    const state = params.get("state") || "";
    const tenant = params.get("tenant") || "";
    const after = params.get("after") || "";
    const query = (extra) => {
      const q = new URLSearchParams(extra);
      if (tenant) q.set("tenant", tenant);
      return "/v1/runbooks?" + q;
    };
    let waiting = null;
    let page;
    if (state === "person") {
      page = await api("GET", query({ limit: String(PAGE), needs_person: "true", ...(after ? { after } : {}) }), null, signal);
    } else if (state) {
      page = await api("GET", query({ limit: String(PAGE), state, ...(after ? { after } : {}) }), null, signal);
    } else {
      [waiting, page] = await Promise.all([
        after ? Promise.resolve(null) : api("GET", query({ limit: String(WAITING), needs_person: "true" }), null, signal),
        api("GET", query({ limit: String(PAGE), needs_person: "false", ...(after ? { after } : {}) }), null, signal),
      ]);
    }
    const all = (waiting ? waiting.runbooks : []).concat(page.runbooks);
    const tenants = new Set(all.map((r) => r.tenant));
    // An admin's token may pick a tenant; only it sees more than one
    // tenant's runbooks.
    const admin = !!(me && (me.roles || []).includes("admin"));
    const showTenant = admin || tenants.size > 1 || tenant !== "";

    const go = (p) => {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(p)) if (v) q.set(k, v);
      location.hash = "#/" + (q.toString() ? "?" + q : "");
    };
    const select = el("select", { id: "state-filter", "aria-label": "Filter by state" },
      el("option", { value: "" }, "waiting on a person first"),
      el("option", { value: "person", selected: state === "person" }, "only what waits on a person"),
      STATES.map((s) => el("option", { value: s, selected: s === state }, s)));
    select.addEventListener("change", () => { listCursors = []; go({ state: select.value, tenant }); });
    let tenantBox = null;
    if (showTenant) {
      tenantBox = el("input", { id: "tenant-filter", type: "text", placeholder: "every tenant", value: tenant, "aria-label": "Tenant", size: 14 });
      tenantBox.addEventListener("change", () => { listCursors = []; go({ state, tenant: tenantBox.value.trim() }); });
    }
    const nav = (label, cursor, enabled, back) => el("button", {
      type: "button", "data-nav": back ? "newer" : "older", disabled: !enabled, onclick: () => {
        if (back) listCursors.pop(); else listCursors.push(after);
        go({ state, tenant, after: cursor });
      },
    }, label);

    const sections = [];
    if (waiting) {
      sections.push(el("section", { id: "inbox", "aria-labelledby": "inbox-title" },
        el("h2", { id: "inbox-title" }, "Waiting on a person ", el("span", { class: "count" + (waiting.runbooks.length ? "" : " zero") }, String(waiting.runbooks.length) + (waiting.next ? "+" : ""))),
        waiting.runbooks.length
          ? runbookTable("waiting", waiting.runbooks, showTenant)
          : el("p", { class: "muted", id: "waiting" }, "Nothing waits on a person."),
        waiting.next ? el("p", {}, el("a", { href: "#/?state=person" + (tenant ? "&tenant=" + encodeURIComponent(tenant) : "") }, "All that wait on a person →")) : null));
    }
    const title = waiting ? "Everything else" : state === "person" ? "Waiting on a person" : "State: " + state;
    sections.push(el("section", { "aria-labelledby": "rest-title" },
      el("h2", { id: "rest-title" }, title),
      el("div", { class: "toolbar" },
        nav("← Newer", listCursors[listCursors.length - 1] || "", after !== "", true),
        nav("Older →", page.next || "", !!page.next, false),
        el("span", { class: "muted" }, page.runbooks.length + " shown, newest first")),
      page.runbooks.length === 0
        ? el("p", { class: "muted" }, "No runbooks" + (state && state !== "person" ? " in state " + state : "") + ".")
        : runbookTable("runbooks", page.runbooks, showTenant)));

    show(
      el("h1", {}, "Runbooks"),
      el("div", { class: "toolbar filters" }, el("label", { for: "state-filter" }, "Show"), select,
        tenantBox ? el("label", { for: "tenant-filter" }, "Tenant") : null, tenantBox),
      sections);
  }

  // ---------- the DAG ----------

  const NODE_W = 168, NODE_H = 44, GAP_X = 28, GAP_Y = 60, PAD = 20;

  // layout places steps in layers (a step one below its deepest
  // predecessor) and orders each layer by the mean position of its
  // predecessors, a few sweeps of the barycentre heuristic: linear in the
  // steps and edges, so a 1,000-step plan lays out at once.
  function layout(plan) {
    const keys = plan.steps.map((s) => s.key);
    const preds = new Map(keys.map((k) => [k, []]));
    const succs = new Map(keys.map((k) => [k, []]));
    for (const e of plan.edges || []) {
      if (!preds.has(e.to) || !preds.has(e.from)) continue;
      preds.get(e.to).push(e.from);
      succs.get(e.from).push(e.to);
    }
    const indeg = new Map(keys.map((k) => [k, preds.get(k).length]));
    const layer = new Map();
    const queue = keys.filter((k) => indeg.get(k) === 0);
    for (const k of queue) layer.set(k, 0);
    for (let i = 0; i < queue.length; i++) {
      const k = queue[i];
      for (const s of succs.get(k)) {
        layer.set(s, Math.max(layer.get(s) || 0, layer.get(k) + 1));
        indeg.set(s, indeg.get(s) - 1);
        if (indeg.get(s) === 0) queue.push(s);
      }
    }
    for (const k of keys) if (!layer.has(k)) layer.set(k, 0); // a cycle: never in a valid plan
    // Failure hooks run after everything else, and have no edges: they
    // stand apart, in a layer of their own below the rest.
    const hooks = plan.steps.filter((s) => s.kind === "hook").map((s) => s.key);
    if (hooks.length) {
      let last = -1;
      for (const k of keys) if (!hooks.includes(k)) last = Math.max(last, layer.get(k));
      for (const k of hooks) layer.set(k, last + 1);
    }
    const layers = [];
    for (const k of keys) (layers[layer.get(k)] ||= []).push(k);
    const pos = new Map();
    layers.forEach((l) => l.forEach((k, i) => pos.set(k, i)));
    const sweep = (l, nbrs) => {
      const bary = new Map(l.map((k) => {
        const n = nbrs.get(k);
        return [k, n.length ? n.reduce((a, p) => a + pos.get(p), 0) / n.length : pos.get(k)];
      }));
      l.sort((a, b) => bary.get(a) - bary.get(b));
      l.forEach((k, i) => pos.set(k, i));
    };
    for (let round = 0; round < 2; round++) {
      for (let i = 1; i < layers.length; i++) sweep(layers[i], preds);
      for (let i = layers.length - 2; i >= 0; i--) sweep(layers[i], succs);
    }
    const widest = Math.max(1, ...layers.map((l) => l.length));
    const width = PAD * 2 + widest * NODE_W + (widest - 1) * GAP_X;
    const at = new Map();
    const right = []; // each layer's right edge, for routing long edges
    layers.forEach((l, li) => {
      const offset = (width - (l.length * NODE_W + (l.length - 1) * GAP_X)) / 2;
      l.forEach((k, i) => at.set(k, { x: offset + i * (NODE_W + GAP_X), y: PAD + li * (NODE_H + GAP_Y), layer: li }));
      right[li] = offset + l.length * NODE_W + (l.length - 1) * GAP_X;
    });
    // An edge that skips layers would run under the nodes between: it
    // goes round them on the right, each in a lane of its own.
    const lanes = new Map();
    let extra = 0, lane = 0;
    for (const e of plan.edges || []) {
      const a = at.get(e.from), b = at.get(e.to);
      if (!a || !b || b.layer - a.layer < 2) continue;
      let x = 0;
      for (let li = a.layer + 1; li < b.layer; li++) x = Math.max(x, right[li]);
      x += 14 + (lane++ % 8) * 8;
      lanes.set(e, x);
      extra = Math.max(extra, x + PAD - width);
    }
    return { at, lanes, width: width + extra, height: PAD * 2 + layers.length * NODE_H + (layers.length - 1) * GAP_Y };
  }

  function short(s, n) {
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // What the plan's v1.2 and v1.3 forms look like (docs/language.md, "The
  // plan format"): a template (a step with a loop) is one node with its
  // iterations' count, and opens into them; a failure hook stands apart
  // below the rest; a step with a condition has a dashed outline and its
  // condition in its title, and the edges its condition reads are marked
  // "when"; a step skipped by a condition (or after one) is drawn apart
  // from one skipped after a failure.

  // planValue renders a plan value as a runbook writes it.
  function planValue(v) {
    if (v === null) return "nil";
    if (Array.isArray(v)) return "[" + v.map(planValue).join(" ") + "]";
    if (typeof v === "object") {
      const [k] = Object.keys(v);
      if (Object.keys(v).length === 1) {
        if (k === "$ref" || k === "$failure" || k === "$item") return "@" + v[k];
        if (k === "$input") return "$" + v[k];
        if (k === "$str") return "(str " + v[k].map(planValue).join(" ") + ")";
      }
      return "{" + Object.keys(v).map((x) => ":" + x + " " + planValue(v[x])).join(" ") + "}";
    }
    return JSON.stringify(v);
  }

  // condText renders a condition as a runbook writes it: (< @lag.seconds 5).
  function condText(c) {
    const logical = c.op === "and" || c.op === "or" || c.op === "not";
    return "(" + c.op + " " + c.args.map((a) => logical ? condText(a) : planValue(a)).join(" ") + ")";
  }

  // condReads lists the steps a condition reads: each $ref's key is its
  // longest prefix, cut before a "." or "[", that is a step of the plan.
  function condReads(c, keys, out = new Set()) {
    for (const a of c.args) {
      if (a && a.op) { condReads(a, keys, out); continue; }
      const refs = [];
      (function walk(v) {
        if (v && typeof v === "object") {
          if (!Array.isArray(v) && typeof v.$ref === "string" && Object.keys(v).length === 1) refs.push(v.$ref);
          else Object.values(v).forEach(walk);
        }
      })(a);
      for (const r of refs) {
        for (let end = r.length; end > 0; end--) {
          if (end < r.length && r[end] !== "." && r[end] !== "[") continue;
          if (keys.has(r.slice(0, end))) { out.add(r.slice(0, end)); break; }
        }
      }
    }
    return out;
  }

  const QUIET = ["CONDITION_FALSE", "UPSTREAM_SKIPPED", "NO_FAILURE"];

  // nodeClass is a node's class: its status, and what kind of step it is.
  function nodeClass(ps, vs) {
    const st = (vs && vs.status) || "pending";
    let c = "node st-" + st;
    if (ps.loop) c += " template";
    if (ps.kind === "hook") c += " hook";
    if (ps.when) c += " conditional";
    if (st === "skipped" && vs.error && QUIET.includes(vs.error.code)) c += " quiet";
    return c;
  }

  // iterationsText is a template's count: ×3: 2 done, 1 running.
  function iterationsText(vs) {
    const it = vs && vs.iterations;
    if (!it) return "for each: list not known yet";
    let t = "×" + it.count + ": " + it.done + " done";
    if (it.running) t += ", " + it.running + " under way";
    if (it.failed) t += ", " + it.failed + " failed";
    return t;
  }

  // visiblePlan is the plan as drawn: the instances of templates not
  // opened left out (and their edges), and, for each template opened, an
  // edge from each of its instances to it, where their results gather.
  function visiblePlan(plan, opened) {
    const templates = new Set(plan.steps.filter((s) => s.loop).map((s) => s.key));
    const owner = (k) => {
      const m = /^(.*)\[\d+\]$/.exec(k);
      return m && templates.has(m[1]) ? m[1] : "";
    };
    const hidden = (k) => {
      for (let o = owner(k); o; o = owner(o)) if (!opened.has(o)) return true;
      return false;
    };
    const steps = plan.steps.filter((s) => !hidden(s.key));
    const shown = new Set(steps.map((s) => s.key));
    const edges = (plan.edges || []).filter((e) => shown.has(e.from) && shown.has(e.to));
    for (const s of steps) {
      const o = owner(s.key);
      if (o && shown.has(o)) edges.push({ from: s.key, to: o, kind: "collect" });
    }
    return { steps, edges };
  }

  // drawGraph returns the SVG and a map from step key to its node, whose
  // class the live updates change. opened holds the templates shown open,
  // and toggle opens or closes one.
  function drawGraph(id, fullPlan, view, opened = new Set(), toggle = () => {}) {
    const plan = visiblePlan(fullPlan, opened);
    const { at, lanes, width, height } = layout(plan);
    const status = new Map(view.steps.map((s) => [s.key, s.status]));
    const viewStep = new Map(view.steps.map((s) => [s.key, s]));
    const keys = new Set(fullPlan.steps.map((s) => s.key));
    const reads = new Map(plan.steps.filter((s) => s.when).map((s) => [s.key, condReads(s.when, keys)]));
    const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": "Steps of the runbook" });
    root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }))));
    const edges = svg("g", { class: "edges" });
    for (const e of plan.edges || []) {
      const a = at.get(e.from), b = at.get(e.to);
      if (!a || !b) continue;
      const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y;
      const my = (y1 + y2) / 2, lx = lanes.get(e);
      const d = lx === undefined
        ? `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`
        : `M${x1},${y1} C${x1},${y1 + GAP_Y / 2} ${lx},${y1} ${lx},${y1 + GAP_Y / 2} L${lx},${y2 - GAP_Y / 2} C${lx},${y2} ${x2},${y2 - GAP_Y / 2} ${x2},${y2}`;
      const when = reads.has(e.to) && reads.get(e.to).has(e.from);
      edges.append(svg("path", {
        d,
        class: "edge " + (e.kind === "sequence" ? "sequence" : e.kind === "collect" ? "collect" : "data") + (when ? " when" : ""),
        "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to, "data-kind": e.kind,
      }));
      if (when) edges.append(svg("text", { x: (x1 + x2) / 2 + 4, y: my, class: "edge-label" }, "when"));
    }
    root.append(edges);
    const nodes = new Map();
    const g = svg("g", { class: "nodes" });
    for (const s of plan.steps) {
      const p = at.get(s.key);
      const st = status.get(s.key) || "pending";
      const vs = viewStep.get(s.key);
      const what = s.loop ? s.key + "[*]" : s.key;
      const title = s.key + " (" + s.verb + "): " + st + (s.when ? "; runs when " + condText(s.when) : "") +
        (s.kind === "hook" ? "; runs once the runbook has failed or been cancelled" : "") +
        (s.loop ? "; one step for each element of its list" : "");
      const node = svg("a", {
        href: "#/runbooks/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(s.key),
        class: nodeClass(s, vs), "data-key": s.key, "data-status": st, "aria-label": what + ": " + st,
      },
      svg("title", {}, title),
      s.loop ? svg("rect", { x: p.x + 4, y: p.y - 4, width: NODE_W, height: NODE_H, class: "stack" }) : null,
      svg("rect", { x: p.x, y: p.y, width: NODE_W, height: NODE_H }),
      svg("text", { x: p.x + 8, y: p.y + 18 }, short((s.kind === "hook" ? "on failure: " : "") + what, 24)),
      s.loop
        ? svg("text", { x: p.x + 8, y: p.y + 34, class: "verb count" }, short(iterationsText(vs), 28))
        : svg("text", { x: p.x + 8, y: p.y + 34, class: "verb" }, short(s.verb, 28)));
      nodes.set(s.key, node);
      g.append(node);
      if (s.loop && vs && vs.iterations) {
        // Open or close the template's iterations.
        const open = opened.has(s.key);
        const flip = () => toggle(s.key);
        g.append(svg("g", {
          class: "toggle", role: "button", tabindex: "0", "data-toggle": s.key,
          "aria-label": (open ? "Close " : "Open ") + "the iterations of " + s.key, "aria-expanded": open ? "true" : "false",
          onclick: flip, onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); flip(); } },
        },
        svg("circle", { cx: p.x + NODE_W - 12, cy: p.y + 12, r: 9 }),
        svg("text", { x: p.x + NODE_W - 12, y: p.y + 16 }, open ? "−" : "+")));
      }
    }
    root.append(g);
    return { root, nodes };
  }

  // paintNodes colours each node by its step's state and kind, and marks
  // a step whose effect a compensation undid.
  function paintNodes(nodes, view, plan) {
    const planStep = new Map(plan.steps.map((s) => [s.key, s]));
    for (const s of view.steps) {
      const n = nodes.get(s.key);
      if (!n) continue;
      const ps = planStep.get(s.key) || {};
      if (ps.loop) {
        const count = n.querySelector(".count");
        if (count) count.textContent = short(iterationsText(s), 28);
      }
      const undone = !!(s.compensation && s.compensation.status === "complete");
      const cls = nodeClass(ps, s) + (undone ? " undone" : "");
      if (n.getAttribute("data-status") === s.status && n.getAttribute("class") === cls) continue;
      n.setAttribute("class", cls);
      n.setAttribute("data-status", s.status);
      n.setAttribute("aria-label", (ps.loop ? s.key + "[*]" : s.key) + ": " + s.status + (undone ? ", undone" : ""));
      n.firstChild.textContent = n.firstChild.textContent.replace(/: [a-z_]+(, undone by its compensation)?(;|$)/, ": " + s.status + (undone ? ", undone by its compensation" : "") + "$2");
    }
  }

  // ---------- one runbook ----------

  // decider is the name typed in a gate's "by" box, and comments what is
  // typed in its comment box, by step. They outlive the boxes: the panel is
  // rebuilt when events arrive, and what the user was typing must survive.
  let decider = sessionStorage.getItem(BY_KEY) || "";
  const comments = new Map();

  function gateButtons(id, key, after) {
    // A token that names its actor decides as that actor: no name to ask.
    const named = me && me.actor_named;
    const by = named ? null : el("input", { type: "text", "aria-label": "Decided by", placeholder: "your name", value: decider, "data-by": key, autocomplete: "name" });
    if (by) by.addEventListener("input", () => { decider = by.value; });
    const comment = el("input", { type: "text", "aria-label": "Comment", placeholder: "comment (optional)", value: comments.get(key) || "", "data-comment": key });
    comment.addEventListener("input", () => { comments.set(key, comment.value); });
    const msg = el("span", { class: "error", role: "status" });
    const decide = (what) => async () => {
      const body = {};
      if (by) {
        const who = by.value.trim();
        if (!who) { msg.textContent = "Say who decides."; by.focus(); return; }
        decider = who;
        sessionStorage.setItem(BY_KEY, who);
        sayWho();
        body.by = who;
      }
      if (comment.value.trim()) body.comment = comment.value.trim();
      try {
        await api("POST", rb(id) + "/steps/" + encodeURIComponent(key) + "/" + what, body);
        msg.textContent = "";
        comments.delete(key);
        after();
      } catch (err) {
        if (err instanceof Unauthorized) return refused();
        msg.textContent = err.message;
      }
    };
    return el("div", { class: "gate" }, by, comment,
      el("div", { class: "decide" },
        el("button", { type: "button", class: "approve", "data-action": "approve", "data-step": key, "aria-label": "Approve " + key, onclick: decide("approve") }, "Approve"),
        el("button", { type: "button", class: "reject", "data-action": "reject", "data-step": key, "aria-label": "Reject " + key, onclick: decide("reject") }, "Reject")),
      msg);
  }

  // nameBox asks who acts, for a token that names no actor (null for one
  // that does: the daemon records its actor). What is typed is the same
  // name the gates use.
  function nameBox(tag) {
    if (me && me.actor_named) return null;
    const box = el("input", { type: "text", "aria-label": "Acting as", placeholder: "your name", value: decider, "data-by": tag, autocomplete: "name" });
    box.addEventListener("input", () => { decider = box.value; });
    return box;
  }

  // actedBy puts the name from box into body as "by"; false, with msg
  // said, when one is needed and none was given.
  function actedBy(box, body, msg) {
    if (!box) return true;
    const who = box.value.trim();
    if (!who) { msg.textContent = "Say who acts."; box.focus(); return false; }
    decider = who;
    sessionStorage.setItem(BY_KEY, who);
    sayWho();
    body.by = who;
    return true;
  }

  // confirmThen shows a question and two buttons in place of a control,
  // the console's confirmation for what cannot be taken back (a cancel,
  // a resolution as failed): the first press asks, the second acts.
  function confirmThen(holder, question, yes, act, extra) {
    const box = el("div", { class: "confirm", role: "group", "aria-label": question },
      el("p", {}, question), extra || null,
      el("div", { class: "decide" },
        el("button", { type: "button", class: "reject", "data-confirm": "yes", onclick: async () => { await act(); } }, yes),
        el("button", { type: "button", "data-confirm": "no", onclick: () => { box.remove(); holder.hidden = false; holder.focus(); } }, "Keep it")));
    holder.hidden = true;
    holder.after(box);
    box.querySelector('button[data-confirm="yes"]').focus();
    return box;
  }

  // cancelControl cancels a runbook that has not finished, through the
  // same endpoint as rbd cancel: after a confirmation saying what happens
  // (the compensations of its completed steps run, newest first), or,
  // ticked, without undoing (rbd cancel --no-compensate). A token
  // without the submit role, which POST .../cancel needs, is not offered
  // it (the view is the token's: docs/daemon.md, "The gate").
  function cancelControl(id, view, after) {
    const roles = me ? me.roles || [] : ["admin"];
    if (view.finished_at || !(roles.includes("submit") || roles.includes("admin"))) return el("span", {});
    const msg = el("span", { class: "error", role: "status" });
    const by = nameBox("cancel");
    const wrap = el("span", { class: "cancel-control" });
    const button = el("button", { type: "button", class: "reject", "data-action": "cancel", "aria-label": "Cancel this runbook" }, "Cancel runbook…");
    button.addEventListener("click", () => {
      const keep = el("input", { type: "checkbox", id: "no-compensate", "data-no-compensate": "" });
      confirmThen(button, "Cancel this runbook? Nothing more of it runs, and the compensations of its completed steps undo what they did, newest first.",
        "Cancel runbook", async () => {
          const body = {};
          if (!actedBy(by, body, msg)) return;
          if (keep.checked) body.compensate = false;
          try {
            await api("POST", rb(id) + "/cancel", body);
            msg.textContent = "";
            after();
          } catch (err) {
            if (err instanceof Unauthorized) return refused();
            msg.textContent = err.message;
          }
        }, el("div", {}, el("label", { class: "muted" }, keep, " leave what it did as it is (no compensation)"), by));
    });
    append(wrap, [button, msg]);
    return wrap;
  }

  // resolveButtons settle a step that escalated to a person, through the
  // same endpoint as rbd resolve: complete it (with a result, JSON,
  // optional), run it again, or fail it (after a confirmation).
  function resolveButtons(id, key, after) {
    const msg = el("span", { class: "error", role: "status" });
    const by = nameBox("resolve-" + key);
    const result = el("input", { type: "text", "aria-label": "Result of " + key + " (JSON)", placeholder: "result, JSON (optional)", "data-result": key });
    const resolve = (action) => async () => {
      const body = { action };
      if (!actedBy(by, body, msg)) return;
      if (action === "complete" && result.value.trim()) {
        try { body.result = JSON.parse(result.value); } catch (e) { msg.textContent = "The result is not JSON."; result.focus(); return; }
      }
      try {
        await api("POST", rb(id) + "/steps/" + encodeURIComponent(key) + "/resolve", body);
        msg.textContent = "";
        after();
      } catch (err) {
        if (err instanceof Unauthorized) return refused();
        msg.textContent = err.message;
      }
    };
    const fail = el("button", { type: "button", class: "reject", "data-action": "resolve-fail", "data-step": key, "aria-label": "Fail " + key }, "Fail");
    fail.addEventListener("click", () => confirmThen(fail, "Fail " + key + "? The runbook goes on as its on_failure says.", "Fail it", resolve("fail")));
    return el("div", { class: "gate resolve" }, by, result,
      el("div", { class: "decide" },
        el("button", { type: "button", class: "approve", "data-action": "resolve-complete", "data-step": key, "aria-label": "Complete " + key, onclick: resolve("complete") }, "Complete"),
        el("button", { type: "button", "data-action": "resolve-retry", "data-step": key, "aria-label": "Run " + key + " again", onclick: resolve("retry") }, "Run again"),
        fail),
      msg);
  }

  // bulkBar decides every selected gate, one request each, in order:
  // each decision is recorded on its own (its own GATE_APPROVED or
  // GATE_REJECTED, by, comment), as rbd approve would record it. It is
  // offered when more than one gate waits: the steps of a for-each that
  // each wait at their gate, say.
  // bulk is what outlives the bulk bar, which is rebuilt as each decision
  // lands: the gates selected, by runbook and step, and how the last
  // decision of many went.
  const bulk = { chosen: new Set(), status: "", errors: "" };
  const chosenKey = (id, key) => id + "\u0000" + key;

  function selectBox(id, key) {
    const box = el("input", { type: "checkbox", "data-select": key, "aria-label": "Select " + key, checked: bulk.chosen.has(chosenKey(id, key)) });
    box.addEventListener("change", () => {
      if (box.checked) bulk.chosen.add(chosenKey(id, key)); else bulk.chosen.delete(chosenKey(id, key));
      const count = document.querySelector("[data-selected-count]");
      if (count) count.textContent = document.querySelectorAll("#gates input[data-select]:checked").length + " selected";
    });
    return box;
  }

  function bulkBar(id, keys, after) {
    const msg = el("span", { class: "error", role: "status" }, bulk.errors);
    const done = el("span", { class: "muted", role: "status", "data-bulk-status": "" }, bulk.status);
    const by = nameBox("bulk");
    const comment = el("input", { type: "text", "aria-label": "Comment for each", placeholder: "comment for each (optional)", "data-bulk-comment": "" });
    const selected = () => keys.filter((k) => bulk.chosen.has(chosenKey(id, k)));
    const count = el("span", { "data-selected-count": "" }, selected().length + " selected");
    const all = el("button", { type: "button", "data-action": "select-all" }, "Select all " + keys.length);
    all.addEventListener("click", () => {
      const on = keys.some((k) => !bulk.chosen.has(chosenKey(id, k)));
      for (const k of keys) if (on) bulk.chosen.add(chosenKey(id, k)); else bulk.chosen.delete(chosenKey(id, k));
      for (const b of document.querySelectorAll("#gates input[data-select]")) b.checked = on;
      count.textContent = selected().length + " selected";
    });
    const decide = (what) => async () => {
      const picked = selected();
      if (!picked.length) { msg.textContent = "Select the gates to decide."; return; }
      const body = {};
      if (!actedBy(by, body, msg)) return;
      if (comment.value.trim()) body.comment = comment.value.trim();
      msg.textContent = "";
      let ok = 0;
      const failed = [];
      const say = () => {
        bulk.status = (what === "approve" ? "approved " : "rejected ") + ok + " of " + picked.length;
        bulk.errors = failed.join("; ");
        const d = document.querySelector("[data-bulk-status]"), m = document.querySelector("#bulk .error");
        if (d) d.textContent = bulk.status;
        if (m) m.textContent = bulk.errors;
      };
      for (const key of picked) {
        try {
          await api("POST", rb(id) + "/steps/" + encodeURIComponent(key) + "/" + what, body);
          ok++;
        } catch (err) {
          if (err instanceof Unauthorized) return refused();
          failed.push(key + ": " + err.message);
        }
        bulk.chosen.delete(chosenKey(id, key));
        say();
      }
      after();
    };
    return el("div", { class: "card bulk", id: "bulk", "aria-label": "Decide many gates" },
      el("h2", {}, keys.length + " gates wait"),
      el("div", { class: "gate" }, all, count, by, comment,
        el("div", { class: "decide" },
          el("button", { type: "button", class: "approve", "data-action": "approve-selected", onclick: decide("approve") }, "Approve selected"),
          el("button", { type: "button", class: "reject", "data-action": "reject-selected", onclick: decide("reject") }, "Reject selected"))),
      done, msg);
  }

  // retryButton runs a failed step again, through the same endpoint as
  // rbd retry, as the token's actor or the name given (nameBox). It is
  // shown only where the view's next_actions offer a retry.
  function retryButton(id, key, after) {
    const msg = el("span", { class: "error", role: "status" });
    const by = nameBox("retry-" + key);
    const retry = async () => {
      const body = { steps: [key] };
      if (!actedBy(by, body, msg)) return;
      try {
        await api("POST", rb(id) + "/retry", body);
        msg.textContent = "";
        after();
      } catch (err) {
        if (err instanceof Unauthorized) return refused();
        msg.textContent = err.message;
      }
    };
    return el("span", {}, " ", by,
      el("button", { type: "button", class: "retry", "data-action": "retry", "data-step": key, "aria-label": "Retry " + key, onclick: retry }, "Retry"),
      msg);
  }

  const stepHref = (id, key) => "#/runbooks/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(key);

  // gatePanel is what the person at a gate decides on, first on the page:
  // the step's risk, effect and target, its arguments as they will be
  // sent, why it is gated, who submitted the runbook, how long it has
  // waited and whether it times out, then Approve and Reject.
  function gatePanel(id, view, refresh) {
    const gates = view.blocked_on.filter((b) => b.reason === "REQUIRES_APPROVAL" && b.gate);
    if (!gates.length) return null;
    // Only the gates this token may decide get buttons and a place in the
    // bulk bar; the others say whom to ask (docs/daemon.md, "The gate").
    const mine = gates.filter((b) => offered(view, "approve", b.step));
    const many = mine.length > 1;
    return el("div", {}, many ? bulkBar(id, mine.map((b) => b.step), refresh) : null,
      el("section", { id: "gates", "aria-label": "Waiting for a decision" }, gates.map((b) => {
      const g = b.gate;
      return el("div", { class: "card gate-card risk-" + String(g.risk || "low").replace(/[^a-z]/g, ""), "data-step": b.step },
        el("h2", {}, many && offered(view, "approve", b.step) ? selectBox(id, b.step) : null,
          "Decide ", el("a", { href: stepHref(id, b.step) }, b.step), " ", el("span", { class: "muted" }, g.verb)),
        kv([
          ["risk", riskBadge(g.risk)],
          ["effect", g.side_effects + (g.target ? " on " + g.target : "")],
          ["gated by", g.why === "call" && g.when ? "the runbook asks for it when its :gate-when holds" : gateWhy(g.why, g.policy)],
          ["gate when", g.when ? [el("code", {}, g.when), el("span", { class: "muted" }, " held when the step became ready")] : ""],
          ["approvers", g.approvers ? "tokens of group " + g.approvers + " (or an admin) decide" : ""],
          ["trust", trustText(g.trust)],
          ["submitted by", view.actor || el("span", { class: "muted" }, "no one named (its token has no actor)")],
          ["waiting", g.since ? [el("span", { class: "waited", "data-since": g.since }, span(Date.now() - new Date(g.since))),
            el("span", { class: "muted" }, ", since " + time(g.since))] : ""],
          ["times out", el("span", { class: "muted" }, "never: it waits until someone decides")],
        ], { class: "kv facts" }),
        el("div", { class: "args-label muted" }, "arguments, as they will be sent"),
        json(g.args, { class: "args" }),
        offered(view, "approve", b.step) ? gateButtons(id, b.step, refresh) : notYours(view, "approve", b.step));
    })));
  }

  // offered reports whether the view offers this token an action of a
  // kind on a step: the view is computed for the token asking, and what
  // it may not do is in unavailable_actions instead.
  function offered(view, kind, step) {
    return (view.next_actions || []).some((a) => a.kind === kind && a.step === step);
  }

  // notYours says why this token may not take an action the runbook
  // waits for, and so whom to ask, where its buttons would be.
  function notYours(view, kind, step) {
    const a = (view.unavailable_actions || []).find((x) => x.kind === kind && x.step === step);
    return el("p", { class: "muted not-yours", "data-not-yours": step, role: "note" },
      "Not yours to decide: " + (a ? a.reason : "this token may not."));
  }

  // undone lists what was undone after a failure or a cancel: each
  // compensation with its verb and how it went, and each failure hook.
  function undone(view, seen) {
    const rows = [];
    for (const s of view.steps) {
      if (!s.compensation) continue;
      const started = seen.compensations.get(s.key);
      rows.push(el("li", { "data-step": s.key, "data-status": s.compensation.status },
        el("span", { class: "badge s-" + (s.compensation.status === "complete" ? "complete" : s.compensation.status === "failed" ? "failed" : "running") },
          s.compensation.status === "complete" ? "undone" : s.compensation.status),
        " ", el("strong", {}, s.key),
        started ? el("span", {}, " by ", el("code", {}, started)) : null,
        s.compensation.error ? el("div", { class: "error" }, s.compensation.error) : null));
    }
    for (const [key, h] of seen.hooks) {
      rows.push(el("li", { "data-hook": key, "data-status": h.status },
        el("span", { class: "badge s-" + (h.status === "succeeded" ? "complete" : h.status === "failed" ? "failed" : "running") }, "hook " + h.status),
        " ", el("strong", {}, key), h.verb ? el("span", {}, " ", el("code", {}, h.verb)) : null,
        h.error ? el("div", { class: "error" }, h.error) : null));
    }
    if (!rows.length) return null;
    return el("div", { class: "card" }, el("h2", {}, "Undone"),
      el("p", { class: "muted" }, "What ran to undo the completed steps, and the failure hooks."),
      el("ul", { class: "undone", id: "undone" }, rows));
  }

  function summary(id, view, seen, refresh) {
    const byKey = new Map(view.steps.map((s) => [s.key, s]));
    const blocked = view.blocked_on.filter((b) => b.reason !== "REQUIRES_APPROVAL" || !b.gate).map((b) => {
      const s = byKey.get(b.step) || {};
      return el("li", { "data-step": b.step },
        el("a", { href: stepHref(id, b.step) }, b.step),
        " ", el("span", { class: "muted" }, b.reason),
        kv([["correlation key", b.correlation_key], ["parked since", time(s.parked_at)],
          ["times out", s.timeout_at ? [countdown(s.timeout_at), el("span", { class: "muted" }, " (" + time(s.timeout_at) + ")")] : ""],
          ["until", b.until ? [countdown(b.until)] : ""], ["message", b.message]]),
        b.reason !== "REQUIRES_APPROVAL" || s.status !== "waiting_approval" ? null
          : offered(view, "approve", b.step) ? gateButtons(id, b.step, refresh) : notYours(view, "approve", b.step));
    });
    // The gates are in the panel above; here they are named so that the
    // list of what it waits for is whole.
    for (const b of view.blocked_on.filter((x) => x.reason === "REQUIRES_APPROVAL" && x.gate)) {
      blocked.unshift(el("li", { "data-step": b.step, class: "gated" },
        el("a", { href: stepHref(id, b.step) }, b.step), " ", el("span", { class: "muted" }, "REQUIRES_APPROVAL, above")));
    }
    const counts = {};
    for (const s of view.steps) counts[s.status] = (counts[s.status] || 0) + 1;
    return el("div", { id: "summary" },
      el("div", { class: "card" },
        kv([["status", badge(view.status)], ["state", view.state], ["name", view.name], ["submitted by", view.actor],
          ["scheduled by", seen.schedule ? el("a", { href: "#/schedules", "data-scheduled-by": "" }, seen.schedule) : ""],
          ["tenant", view.tenant], ["mode", view.mode], ["version", view.version],
          ["created", time(view.created_at)], ["finished", time(view.finished_at)],
          ["error", view.error ? view.error.code + ": " + (view.error.message || "") : ""],
          ["steps", Object.entries(counts).map(([k, n]) => k + " " + n).join(", ")]])),
      el("div", { class: "card" }, el("h2", {}, "Blocked on"),
        blocked.length ? el("ul", { class: "blocked", id: "blocked" }, blocked)
          : el("p", { class: "muted", id: "blocked" }, view.finished_at ? "Nothing: it has finished." : "Nothing: it moves by itself.")),
      el("div", { class: "card" }, el("h2", {}, "Next"),
        (view.next_actions || []).length + (view.unavailable_actions || []).length
          ? el("ul", { class: "actions", id: "next" }, (view.next_actions || []).map((n) => el("li", { "data-kind": n.kind, "data-step": n.step || "" },
            el("span", { class: "muted" }, n.kind), " ", el("code", {}, n.command),
            n.kind === "retry" ? retryButton(id, n.step, refresh) : null,
            n.kind === "resolve" ? resolveButtons(id, n.step, refresh) : null)).concat(
            (view.unavailable_actions || []).map((n) => el("li", { class: "not-yours", "data-kind": n.kind, "data-step": n.step || "", "data-not-yours": "" },
              el("span", { class: "muted" }, n.kind + ", not yours"), " ", el("code", {}, n.command), el("div", { class: "muted" }, n.reason)))))
          : el("p", { class: "muted", id: "next" }, !view.finished_at ? "Nothing: it moves by itself."
            : !(view.failures && view.failures.length) ? "Nothing: it has finished."
              : view.steps.some((s) => s.compensation) ? "Nothing to retry: what it did was undone. Submit it again (rbd submit --new) to run it anew."
                : "Nothing: a retry would send the same arguments and fail the same way. Regenerate it with other inputs, or submit a fixed runbook.")),
      el("div", { class: "card" }, el("h2", {}, "Failures"),
        view.failures && view.failures.length
          ? el("ul", { class: "failures", id: "failures" }, view.failures.map((f) => el("li", { "data-step": f.step },
            el("a", { href: stepHref(id, f.step) }, f.step),
            " ", el("span", { class: "code" }, f.code), f.message ? el("div", { class: "muted" }, f.message) : null)))
          : el("p", { class: "muted", id: "failures" }, "None.")),
      undone(view, seen),
      // HOOK(cost): the cost roll-up comes with tenants and the job ledger.
      el("div", { class: "card" }, el("h2", {}, "Outcomes"),
        Object.keys(view.outcomes).length ? json(view.outcomes) : el("p", { class: "muted" }, "None yet.")),
      el("div", { class: "card" }, el("h2", {}, "Inputs"), json(view.inputs)));
  }

  // eventDetail says what an event's data means: who decided a gate and
  // why, why a step failed, what undid it.
  function eventDetail(e) {
    const d = e.data || {};
    const by = (x) => (x.by ? "by " + x.by : "") + (x.note ? " (said " + x.note + ")" : "");
    const failed = (x) => (x.code || "") + (x.message ? ": " + x.message : "");
    switch (e.type) {
      case "RUNBOOK_SUBMITTED": return (d.actor ? "by " + d.actor : "") + (d.mode && d.mode !== "execute" ? (d.actor ? ", " : "") + d.mode : "");
      case "GATE_REQUESTED": return "waits for a person" + (d.when ? ", as " + d.when + " held" : "") + (d.approvers ? "; group " + d.approvers + " decides" : "");
      case "STEP_REMINDED": return "reminder sent" + (d.verb ? " (" + d.verb + ")" : "") + " after " + d.remind_after + "; still waits until " + time(d.timeout_at);
      case "STEP_TIMEOUT_DEFAULTED": return "no answer by " + time(d.timeout_at) + "; took its default " + compact(d.result, 80);
      case "GATE_APPROVED": return "approved " + by(d) + (d.comment ? ": " + d.comment : "");
      case "GATE_REJECTED": return "rejected " + by(d) + (d.comment ? ": " + d.comment : "");
      case "POLICY_GATED": return policyText(d);
      case "STEP_FAILED": case "COMPENSATION_FAILED": case "ESCALATION_FAILED": case "HOOK_FAILED":
      case "INVOCATION_CANCEL_FAILED": return failed(d);
      case "STEP_VERIFY_FAILED": return failed(d) || compact(d);
      case "STEP_RETRY_SCHEDULED": return failed(d) + "; again " + time(d.next_attempt_at);
      case "STEP_PARKED": return "times out " + time(d.timeout_at);
      case "SCHEDULE_FIRED": return "made by schedule " + (d.name || d.schedule_id) + ", its tick of " + time(d.tick);
      case "SCHEDULE_SKIPPED": return "the tick of " + time(d.tick) + " of schedule " + (d.name || d.schedule_id) + " was skipped: this runbook still runs (overlap: skip)";
      case "STEP_TIMED_OUT": return "no notification by " + time(d.timeout_at) + "; " + d.on_timeout;
      case "STEP_SKIPPED": case "STEP_CANCELLED":
        return d.reason ? d.reason : d.because ? "because " + d.because + " " + (d.status || "ended") + (d.aborted ? " (abort)" : "") : "";
      case "COMPENSATION_STARTED": case "ESCALATION_STARTED": case "HOOK_STARTED": return "runs " + (d.verb || "");
      case "COMPENSATION_SUCCEEDED": return "undone";
      case "RUNBOOK_CANCELLED": case "RUNBOOK_CLOSED": return by(d);
      case "RUNBOOK_RETRIED": return by(d) + (d.steps && d.steps.length ? "; " + d.steps.join(", ") : "") + (d.execute ? "; for real" : "");
      case "STEP_RESOLVED": return d.action + " " + by(d);
      case "RUNBOOK_FAILED": case "RUNBOOK_ESCALATED":
        return [d.failed_steps && d.failed_steps.length ? "failed: " + d.failed_steps.join(", ") : "",
          d.escalated_steps && d.escalated_steps.length ? "escalated: " + d.escalated_steps.join(", ") : ""].filter(Boolean).join("; ");
      case "STEP_SUCCEEDED": return d.provenance === "default" ? "the default (:timeout-result), not an answer" : d.receipt ? "from its receipt" : d.cache === "hit" ? "from the cache" : d.simulated ? "simulated" : "";
    }
    return e.data === undefined || e.data === null ? "" : compact(e.data, 100);
  }

  // eventClass marks the rows a reader looks for: decisions, failures,
  // what undid them.
  function eventClass(type) {
    if (type === "GATE_APPROVED") return "ev-approved";
    if (type === "GATE_REJECTED" || /FAILED$/.test(type)) return "ev-failed";
    if (/^(COMPENSATION|HOOK)_/.test(type)) return "ev-undo";
    return "";
  }

  function ledgerRow(e, id) {
    return el("tr", { "data-event": e.id, "data-type": e.type, class: eventClass(e.type) },
      el("td", {}, e.seq || e.id),
      el("td", { class: "opt", title: time(e.at) }, clock(e.at)),
      el("td", {}, e.type),
      el("td", {}, e.step ? el("a", { href: stepHref(id, e.step) }, e.step) : ""),
      el("td", { class: "detail" }, eventDetail(e)),
      el("td", { class: "opt" }, e.attempt || ""));
  }

  function ledger() {
    const body = el("tbody", {});
    const table = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", { class: "opt" }, "At (UTC)"), el("th", {}, "Event"),
      el("th", {}, "Step"), el("th", {}, "Detail"), el("th", { class: "opt" }, "Attempt"))), body);
    return {
      node: el("div", { class: "ledger", id: "ledger" }, table),
      add(row) {
        body.append(row);
        while (body.childElementCount > LEDGER_ROWS) body.removeChild(body.firstChild);
      },
    };
  }

  // watch follows the ledger and calls load again when events arrive, at
  // most a few times a second however fast they come.
  function watch(id, signal, load, onView, onEvent, liveLabel) {
    let pending = null;
    const refresh = () => {
      if (pending) return;
      pending = setTimeout(async () => {
        pending = null;
        try {
          onView(await load());
        } catch (err) {
          if (err instanceof Unauthorized) refused();
        }
      }, 250);
    };
    follow(id, (e) => { onEvent(e); refresh(); }, (state) => {
      liveLabel.textContent = state === "live" ? "following live" : state === "ended" ? "finished" : "reconnecting…";
      liveLabel.setAttribute("class", "live" + (state === "live" ? " on" : ""));
      if (state === "ended") refresh();
    }, signal).catch((err) => {
      if (err instanceof Unauthorized) refused();
    });
    return refresh;
  }

  // keepFocus rebuilds a part of the page, and gives the keyboard's focus
  // back to the box or button that had it.
  function keepFocus(container, build) {
    const focused = document.activeElement && container.contains(document.activeElement) ? document.activeElement : null;
    const again = focused && (focused.getAttribute("data-by") !== null
      ? `[data-by="${CSS.escape(focused.getAttribute("data-by"))}"]`
      : focused.getAttribute("data-comment") !== null ? `[data-comment="${CSS.escape(focused.getAttribute("data-comment"))}"]`
        : focused.getAttribute("data-action") ? `[data-action="${focused.getAttribute("data-action")}"][data-step="${CSS.escape(focused.getAttribute("data-step"))}"]` : null);
    clear(container);
    append(container, [build()]);
    const f = again && container.querySelector(again);
    if (f) f.focus();
  }

  async function runbookPage(id, signal) {
    const t0 = performance.now();
    const [view, first] = await Promise.all([api("GET", rb(id), null, signal), api("GET", rb(id) + "/plan", null, signal)]);
    const t1 = performance.now();
    // The graph is drawn again when a template is opened or closed, and
    // when the plan grows (a for-each expanded, an extension).
    let plan = first, latest = view, drawing = null;
    const opened = new Set();
    let drawn = drawGraph(id, plan, view, opened, toggle);
    function toggle(key) {
      if (opened.has(key)) opened.delete(key); else opened.add(key);
      const next = drawGraph(id, plan, latest, opened, toggle);
      drawn.root.replaceWith(next.root);
      drawn = next;
      const again = next.root.querySelector(`[data-toggle="${CSS.escape(key)}"]`);
      if (again) again.focus();
    }
    const side = el("div", {});
    const gates = el("div", { id: "gate-panel" });
    const acts = el("span", { class: "acts" });
    const live = el("span", { class: "live" }, "connecting…");
    const led = ledger();
    // What the ledger says that the view does not: which verb undid a
    // step, how each failure hook went.
    const seen = { compensations: new Map(), hooks: new Map(), schedule: "" };
    let refresh = () => {};
    let shown = "";
    let current = view;
    const render = (v) => {
      latest = v;
      current = v;
      if (v.plan_hash !== plan.plan_hash && !drawing) {
        drawing = api("GET", rb(id) + "/plan", null, signal).then((p) => {
          plan = p;
          const next = drawGraph(id, plan, latest, opened, toggle);
          drawn.root.replaceWith(next.root);
          drawn = next;
        }).catch(() => {}).finally(() => { drawing = null; });
      }
      paintNodes(drawn.nodes, v, plan);
      const sig = v.updated_at + v.status + v.state + JSON.stringify(v.blocked_on) + v.steps.map((s) => s.status + (s.compensation ? s.compensation.status : "")).join() +
        seen.compensations.size + JSON.stringify([...seen.hooks]) + seen.schedule;
      if (sig === shown) return;
      shown = sig;
      keepFocus(gates, () => gatePanel(id, v, () => refresh()) || el("span", {}));
      keepFocus(acts, () => cancelControl(id, v, () => refresh()));
      keepFocus(side, () => summary(id, v, seen, () => refresh()));
    };
    const title = el("h1", {}, view.name || "Runbook", " ", el("span", { class: "id muted" }, view.name ? id.slice(0, 8) : id));
    show(
      title,
      el("div", { class: "toolbar" }, el("a", { href: "#/" }, "← Runbooks"), badge(view.state || view.status), live, acts),
      gates,
      el("div", { class: "layout" },
        el("section", { "aria-label": "Graph" },
          el("div", { class: "legend" },
            el("span", {}, el("span", { class: "swatch" }), "data edge"),
            el("span", {}, el("span", { class: "swatch sequence" }), "sequence edge"),
            el("span", {}, el("span", { class: "swatch when" }), "read by a condition"),
            el("span", { class: "muted" }, plan.steps.length + " steps")),
          el("div", { class: "graph", id: "graph" }, drawn.root),
          el("h2", {}, "Ledger"), led.node),
        el("aside", { "aria-label": "Runbook" }, side)));
    render(view);
    // The figures BENCHMARKS.md reports: from the route to the first frame
    // painted with the graph in it, and of that, the two API calls and
    // building the page (layout and DOM; style and paint are the rest).
    const t2 = performance.now();
    requestAnimationFrame(() => requestAnimationFrame(() => {
      document.body.setAttribute("data-fetch-ms", (t1 - t0).toFixed(1));
      document.body.setAttribute("data-build-ms", (t2 - t1).toFixed(1));
      document.body.setAttribute("data-render-ms", (performance.now() - t0).toFixed(1));
    }));
    const note = (e) => {
      const d = e.data || {};
      if (e.type === "COMPENSATION_STARTED" && e.step) seen.compensations.set(e.step, d.verb);
      if (e.type === "SCHEDULE_FIRED") seen.schedule = "schedule " + (d.name || d.schedule_id) + ", its tick of " + time(d.tick);
      const hook = /^HOOK_(STARTED|SUCCEEDED|FAILED)$/.exec(e.type);
      if (hook) {
        const key = e.step || d.hook || d.verb || "hook";
        const h = seen.hooks.get(key) || {};
        seen.hooks.set(key, { verb: d.verb || h.verb, status: hook[1].toLowerCase(), error: hook[1] === "FAILED" ? (d.code || "") + (d.message ? ": " + d.message : "") : "" });
      }
    };
    refresh = watch(id, signal, () => api("GET", rb(id), null, signal), (v) => {
      render(v);
      const b = main.querySelector(".toolbar .badge");
      if (b) b.replaceWith(badge(v.state || v.status));
    }, (e) => { note(e); led.add(ledgerRow(e, id)); if (/^(COMPENSATION|HOOK)_|^SCHEDULE_FIRED$/.test(e.type)) render(current); }, live);
  }

  // ---------- one step ----------

  // argsFrom says where the resolved arguments shown come from.
  const argsFrom = {
    attempt: "as its last attempt was called",
    resolved: "resolved from the inputs and the results so far: what it will be called with",
    ended: "resolved from the inputs and the results: what it would have been called with",
    partial: "resolved as far as the results so far go; a reference to a step without a result is left as the plan has it",
  };
  const ended = ["complete", "failed", "skipped", "cancelled", "escalated"];

  async function stepPage(id, key, signal) {
    const path = rb(id) + "/steps/" + encodeURIComponent(key);
    // A step at its gate: whether this token may decide it is the
    // runbook's view's to say (its next_actions are this token's).
    const fetchStep = async () => {
      const s = await api("GET", path, null, signal);
      if (s.status === "waiting_approval") {
        const v = await api("GET", rb(id) + "?steps_limit=1", null, signal);
        s.offer = { next_actions: v.next_actions, unavailable_actions: v.unavailable_actions };
      }
      return s;
    };
    const step = await fetchStep();
    const side = el("div", {});
    const args = el("div", {});
    const live = el("span", { class: "live" }, "connecting…");
    const led = ledger();
    let refresh = () => {};
    let shown = "";
    const render = (s) => {
      const sig = JSON.stringify(s);
      if (sig === shown) return; // unchanged: keep what the user is typing
      shown = sig;
      const gate = s.gate === "human_confirm"
        ? el("span", {}, "human_confirm", el("div", { class: "muted" }, gateWhy(s.gate_why, s.policy)))
        : s.gated_by && s.gated_by !== key
          ? el("span", {}, "none of its own; ", el("a", { href: stepHref(id, s.gated_by) }, s.gated_by), "'s gate stands in front of it")
          : "none";
      keepFocus(side, () => el("div", {}, el("div", { class: "card", id: "step" },
        kv([["status", badge(s.status || "pending")], ["verb", s.verb], ["gate", gate],
          ["gate when", s.gate_when ? [el("code", {}, s.gate_when), el("span", { class: "muted" }, " (the gate applies only when this holds, decided when the step becomes ready)")] : ""],
          ["approvers", s.approvers ? "tokens of group " + s.approvers + " (or an admin)" : ""], ["risk", riskBadge(s.risk)],
          ["effect", s.side_effects + (s.target ? " on " + s.target : "")], ["attempts", s.attempt],
          ["correlation key", s.correlation_key], ["parked since", time(s.parked_at)],
          ["times out", s.timeout_at ? [countdown(s.timeout_at), el("span", { class: "muted" }, " (" + time(s.timeout_at) + ")")] : ""],
          ["next attempt", time(s.next_attempt_at)], ["started", time(s.started_at)], ["finished", time(s.finished_at)],
          ["decision", s.gate_decision ? s.gate_decision.decision + " by " + s.gate_decision.by + " at " + time(s.gate_decision.at) +
            (s.gate_decision.comment ? ": " + s.gate_decision.comment : "") : ""],
          ["compensation", s.compensation ? s.compensation.status + (s.compensation.error ? ": " + s.compensation.error : "") : ""]]),
        s.status !== "waiting_approval" ? null
          : offered(s.offer, "approve", key) ? gateButtons(id, key, () => refresh()) : notYours(s.offer, "approve", key)),
      el("div", { class: "card" }, el("h2", {}, "Result"), s.result !== undefined ? json(s.result) : el("p", { class: "muted" }, "None.")),
      el("div", { class: "card" }, el("h2", {}, "Error"), s.error ? json(s.error) : el("p", { class: "muted" }, "None."))));
      clear(args);
      append(args, [el("div", { class: "card", id: "arguments" }, el("h2", {}, "Arguments"),
        el("p", { class: "muted" }, argsFrom[s.args_from === "resolved" && ended.includes(s.status) ? "ended" : s.args_from] || ""),
        json(s.resolved_args, { id: "resolved-args" }),
        el("details", {}, el("summary", {}, "As frozen in the plan"), json(s.args, { id: "frozen-args" }))),
      el("div", { class: "card" }, el("h2", {}, "Execution block (frozen in the plan)"), json(s.execution, { id: "execution" }),
        kv([["verb hash", s.verb_hash], ["source", s.pos ? s.pos.file + ":" + s.pos.line : ""]]))]);
    };
    show(
      el("h1", {}, "Step ", key, " ", el("span", { class: "muted" }, step.verb)),
      el("div", { class: "toolbar" }, el("a", { href: "#/runbooks/" + encodeURIComponent(id) }, "← Runbook " + id.slice(0, 8)), live),
      el("div", { class: "layout step-layout" },
        el("section", {}, args, el("h2", {}, "Events of this step"), led.node),
        el("aside", {}, side)));
    render(step);
    refresh = watch(id, signal, fetchStep, render, (e) => { if (e.step === key) led.add(ledgerRow(e, id)); }, live);
  }

  // ---------- routing ----------

  async function route() {
    current.abort.abort();
    current = { abort: new AbortController() };
    const signal = current.abort.signal;
    const hash = location.hash.replace(/^#/, "") || "/";
    const [path, query] = hash.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    try {
      // With no token, the API may be open (no --api-token-file): ask it.
      if (!token()) await api("GET", "/v1/runbooks?limit=1", null, signal);
      logoutButton.hidden = !token();
      await whoami(signal);
      if (parts.length === 0) await listPage(new URLSearchParams(query || ""), signal);
      else if (parts[0] === "runbooks" && parts.length === 2) await runbookPage(parts[1], signal);
      else if (parts[0] === "runbooks" && parts.length === 4 && parts[2] === "steps") await stepPage(parts[1], parts[3], signal);
      // Pages kept in files of their own (schedules.js) register here.
      else if (parts.length === 1 && window.rbdPages && Object.hasOwn(window.rbdPages, parts[0])) {
        await window.rbdPages[parts[0]]({ el, api, badge, time, show, kv }, signal);
      }
      else show(el("h1", {}, "Not found"), el("a", { href: "#/" }, "Runbooks"));
      main.focus({ preventScroll: true });
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof Unauthorized) {
        const had = token() !== "";
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(had ? "That token was refused." : "");
        return;
      }
      show(el("h1", {}, "Something went wrong"), el("p", { class: "error", role: "alert" }, err.message), el("a", { href: "#/" }, "Runbooks"));
    }
  }

  window.addEventListener("hashchange", route);
  route();
})();

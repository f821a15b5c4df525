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
  const STATUSES = ["executing", "complete", "failed", "cancelled", "escalated"];
  const PAGE = 50;
  const LEDGER_ROWS = 500; // rows kept on screen; the API has them all

  const main = document.getElementById("main");
  const logoutButton = document.getElementById("logout");
  const whoLine = document.getElementById("who");
  // me is GET /v1/whoami's answer for the token in use: who is signed in.
  // A token whose line names its actor is recorded as that actor, so the
  // gates then ask for no name.
  let me = null;

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
    return el("span", { class: "badge s-" + String(status).replace(/[^a-z_]/g, "") }, status);
  }

  function time(s) {
    if (!s) return "";
    const d = new Date(s);
    return isNaN(d) ? String(s) : d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function json(v) {
    return el("pre", {}, v === undefined ? "" : JSON.stringify(v, null, 2));
  }

  function kv(pairs) {
    const dl = el("dl", { class: "kv" });
    for (const [k, v] of pairs) {
      if (v === undefined || v === null || v === "") continue;
      append(dl, [el("dt", {}, k), el("dd", {}, v)]);
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
    logoutButton.hidden = true;
    me = null;
    whoLine.hidden = true;
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
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("That token was refused.");
  }

  logoutButton.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });

  // ---------- the runbooks list ----------

  async function listPage(params, signal) {
    const status = params.get("status") || "";
    const after = params.get("after") || "";
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (status) q.set("status", status);
    if (after) q.set("after", after);
    const page = await api("GET", "/v1/runbooks?" + q, null, signal);

    const select = el("select", { id: "status-filter", "aria-label": "Filter by status" },
      el("option", { value: "" }, "all statuses"),
      STATUSES.map((s) => el("option", { value: s, selected: s === status }, s)));
    select.addEventListener("change", () => {
      listCursors = [];
      location.hash = "#/" + (select.value ? "?status=" + encodeURIComponent(select.value) : "");
    });

    const rows = page.runbooks.map((r) => el("tr", {},
      el("td", { class: "id" }, el("a", { href: "#/runbooks/" + encodeURIComponent(r.id) }, r.id)),
      el("td", {}, badge(r.status)),
      el("td", { class: "opt" }, r.mode),
      el("td", {}, time(r.created_at)),
      el("td", { class: "opt" }, time(r.updated_at)),
      el("td", { class: "opt" }, r.error ? r.error.code : "")));

    const nav = (label, cursor, enabled, back) => el("button", {
      type: "button", disabled: !enabled, onclick: () => {
        if (back) listCursors.pop(); else listCursors.push(after);
        const p = new URLSearchParams();
        if (status) p.set("status", status);
        if (cursor) p.set("after", cursor);
        location.hash = "#/" + (p.toString() ? "?" + p : "");
      },
    }, label);

    show(
      el("h1", {}, "Runbooks"),
      el("div", { class: "toolbar" },
        select,
        nav("← Newer", listCursors[listCursors.length - 1] || "", after !== "", true),
        nav("Older →", page.next || "", !!page.next, false),
        el("span", { class: "muted" }, page.runbooks.length + " shown, newest first")),
      page.runbooks.length === 0
        ? el("p", { class: "muted" }, "No runbooks" + (status ? " with status " + status : "") + ".")
        : el("table", { id: "runbooks" },
          el("thead", {}, el("tr", {}, el("th", {}, "Runbook"), el("th", {}, "Status"), el("th", { class: "opt" }, "Mode"),
            el("th", {}, "Created"), el("th", { class: "opt" }, "Updated"), el("th", { class: "opt" }, "Error"))),
          el("tbody", {}, rows)));
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
      if (n.getAttribute("data-status") === s.status && n.getAttribute("class") === nodeClass(ps, s)) continue;
      n.setAttribute("class", nodeClass(ps, s));
      n.setAttribute("data-status", s.status);
      n.setAttribute("aria-label", (ps.loop ? s.key + "[*]" : s.key) + ": " + s.status);
      n.firstChild.textContent = n.firstChild.textContent.replace(/: [a-z_]+(;|$)/, ": " + s.status + "$1");
    }
  }

  // ---------- one runbook ----------

  // decider is the name typed in a gate's "by" box. It outlives the box:
  // the panel is rebuilt when events arrive, and what the user was typing
  // must survive that.
  let decider = sessionStorage.getItem(BY_KEY) || "";

  function gateButtons(id, key, after) {
    // A token that names its actor decides as that actor: no name to ask.
    const named = me && me.actor_named;
    const by = named ? null : el("input", { type: "text", "aria-label": "Decided by", placeholder: "your name", value: decider, "data-by": key });
    if (by) by.addEventListener("input", () => { decider = by.value; });
    const msg = el("span", { class: "error", role: "status" });
    const decide = (what) => async () => {
      const body = {};
      if (by) {
        const who = by.value.trim();
        if (!who) { msg.textContent = "Say who decides."; by.focus(); return; }
        decider = who;
        sessionStorage.setItem(BY_KEY, who);
        body.by = who;
      }
      try {
        await api("POST", rb(id) + "/steps/" + encodeURIComponent(key) + "/" + what, body);
        msg.textContent = "";
        after();
      } catch (err) {
        if (err instanceof Unauthorized) return refused();
        msg.textContent = err.message;
      }
    };
    return el("div", { class: "gate" }, by,
      el("button", { type: "button", class: "approve", "data-action": "approve", "data-step": key, "aria-label": "Approve " + key, onclick: decide("approve") }, "Approve"),
      el("button", { type: "button", class: "reject", "data-action": "reject", "data-step": key, "aria-label": "Reject " + key, onclick: decide("reject") }, "Reject"),
      msg);
  }

  // retryButton runs a failed step again, through the same endpoint as
  // rbd retry, as the name in the gate's "by" box (or "console").
  function retryButton(id, key, after) {
    const msg = el("span", { class: "error", role: "status" });
    const retry = async () => {
      try {
        await api("POST", rb(id) + "/retry", me && me.actor_named ? { steps: [key] } : { steps: [key], by: decider || "console" });
        msg.textContent = "";
        after();
      } catch (err) {
        if (err instanceof Unauthorized) return refused();
        msg.textContent = err.message;
      }
    };
    return el("span", {}, " ",
      el("button", { type: "button", class: "retry", "data-action": "retry", "data-step": key, "aria-label": "Retry " + key, onclick: retry }, "Retry"),
      msg);
  }

  function summary(id, view, refresh) {
    const byKey = new Map(view.steps.map((s) => [s.key, s]));
    const blocked = view.blocked_on.map((b) => {
      const s = byKey.get(b.step) || {};
      return el("li", { "data-step": b.step },
        el("a", { href: "#/runbooks/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(b.step) }, b.step),
        " ", el("span", { class: "muted" }, b.reason),
        kv([["correlation key", b.correlation_key], ["parked since", time(s.parked_at)], ["times out", time(s.timeout_at)],
          ["until", time(b.until)], ["message", b.message]]),
        b.reason === "REQUIRES_APPROVAL" && s.status === "waiting_approval" ? gateButtons(id, b.step, refresh) : null);
    });
    const counts = {};
    for (const s of view.steps) counts[s.status] = (counts[s.status] || 0) + 1;
    return el("div", { id: "summary" },
      el("div", { class: "card" },
        kv([["status", badge(view.status)], ["state", view.state], ["mode", view.mode], ["version", view.version],
          ["created", time(view.created_at)], ["finished", time(view.finished_at)],
          ["error", view.error ? view.error.code + ": " + (view.error.message || "") : ""],
          ["steps", Object.entries(counts).map(([k, n]) => k + " " + n).join(", ")]])),
      el("div", { class: "card" }, el("h2", {}, "Blocked on"),
        blocked.length ? el("ul", { class: "blocked", id: "blocked" }, blocked) : el("p", { class: "muted", id: "blocked" }, "Nothing.")),
      el("div", { class: "card" }, el("h2", {}, "Next"),
        view.next_actions && view.next_actions.length
          ? el("ul", { class: "actions", id: "next" }, view.next_actions.map((n) => el("li", { "data-kind": n.kind, "data-step": n.step || "" },
            el("span", { class: "muted" }, n.kind), " ", el("code", {}, n.command),
            n.kind === "retry" ? retryButton(id, n.step, refresh) : null)))
          : el("p", { class: "muted", id: "next" }, "Nothing: it moves by itself, or it has finished.")),
      el("div", { class: "card" }, el("h2", {}, "Failures"),
        view.failures && view.failures.length
          ? el("ul", { class: "failures", id: "failures" }, view.failures.map((f) => el("li", { "data-step": f.step },
            el("a", { href: "#/runbooks/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(f.step) }, f.step),
            " ", el("span", { class: "muted" }, f.code), f.message ? " " + f.message : "")))
          : el("p", { class: "muted", id: "failures" }, "None.")),
      // HOOK(cost): the cost roll-up comes with tenants and the job ledger.
      el("div", { class: "card" }, el("h2", {}, "Outcomes"),
        Object.keys(view.outcomes).length ? json(view.outcomes) : el("p", { class: "muted" }, "None yet.")),
      el("div", { class: "card" }, el("h2", {}, "Inputs"), json(view.inputs)));
  }

  function ledgerRow(e, id) {
    return el("tr", { "data-event": e.id },
      el("td", {}, e.id),
      el("td", {}, time(e.at)),
      el("td", {}, e.type),
      el("td", {}, e.step ? el("a", { href: "#/runbooks/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(e.step) }, e.step) : ""),
      el("td", { class: "opt" }, e.attempt || ""));
  }

  function ledger() {
    const body = el("tbody", {});
    const table = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "#"), el("th", {}, "At"), el("th", {}, "Event"),
      el("th", {}, "Step"), el("th", { class: "opt" }, "Attempt"))), body);
    return {
      node: el("div", { class: "ledger", id: "ledger" }, table),
      add(row) {
        body.append(row);
        while (body.childElementCount > LEDGER_ROWS) body.removeChild(body.firstChild);
      },
    };
  }

  // watch follows the ledger and re-reads the view when events arrive, at
  // most a few times a second however fast they come.
  function watch(id, signal, onView, onEvent, liveLabel) {
    let pending = null;
    const refresh = () => {
      if (pending) return;
      pending = setTimeout(async () => {
        pending = null;
        try {
          onView(await api("GET", rb(id), null, signal));
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
    const live = el("span", { class: "live" }, "connecting…");
    const led = ledger();
    let refresh = () => {};
    let shown = "";
    const render = (v) => {
      latest = v;
      if (v.plan_hash !== plan.plan_hash && !drawing) {
        drawing = api("GET", rb(id) + "/plan", null, signal).then((p) => {
          plan = p;
          const next = drawGraph(id, plan, latest, opened, toggle);
          drawn.root.replaceWith(next.root);
          drawn = next;
        }).catch(() => {}).finally(() => { drawing = null; });
      }
      paintNodes(drawn.nodes, v, plan);
      const sig = v.updated_at + v.status + v.state + JSON.stringify(v.blocked_on) + v.steps.map((s) => s.status).join();
      if (sig === shown) return;
      shown = sig;
      const focused = document.activeElement && side.contains(document.activeElement) ? document.activeElement : null;
      const again = focused && (focused.getAttribute("data-by") !== null
        ? `[data-by="${CSS.escape(focused.getAttribute("data-by"))}"]`
        : focused.getAttribute("data-action") ? `[data-action="${focused.getAttribute("data-action")}"][data-step="${CSS.escape(focused.getAttribute("data-step"))}"]` : null);
      clear(side);
      side.append(summary(id, v, () => refresh()));
      const f = again && side.querySelector(again);
      if (f) f.focus();
    };
    show(
      el("h1", {}, "Runbook ", el("span", { class: "id" }, id)),
      el("div", { class: "toolbar" }, el("a", { href: "#/" }, "← Runbooks"), badge(view.status), live),
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
    refresh = watch(id, signal, (v) => {
      render(v);
      const b = main.querySelector(".toolbar .badge");
      if (b) b.replaceWith(badge(v.status));
    }, (e) => led.add(ledgerRow(e, id)), live);
  }

  // ---------- one step ----------

  async function stepPage(id, key, signal) {
    const [view, plan] = await Promise.all([api("GET", rb(id), null, signal), api("GET", rb(id) + "/plan", null, signal)]);
    const planStep = plan.steps.find((s) => s.key === key);
    if (!planStep) throw new Error("NOT_FOUND: no step " + key + " in runbook " + id);
    const side = el("div", {});
    const live = el("span", { class: "live" }, "connecting…");
    const led = ledger();
    let refresh = () => {};
    let shown = "";
    const render = (v) => {
      const s = v.steps.find((x) => x.key === key) || {};
      const sig = JSON.stringify(s);
      if (sig === shown) return; // unchanged: keep what the user is typing
      shown = sig;
      clear(side);
      side.append(el("div", { class: "card", id: "step" },
        kv([["status", badge(s.status || "pending")], ["verb", s.verb], ["attempts", s.attempt], ["gate", s.gate],
          ["correlation key", s.correlation_key], ["parked since", time(s.parked_at)], ["times out", time(s.timeout_at)],
          ["next attempt", time(s.next_attempt_at)], ["started", time(s.started_at)], ["finished", time(s.finished_at)],
          ["decision", s.gate_decision ? s.gate_decision.decision + " by " + s.gate_decision.by + " at " + time(s.gate_decision.at) : ""],
          ["compensation", s.compensation ? s.compensation.status : ""]]),
        s.status === "waiting_approval" ? gateButtons(id, key, () => refresh()) : null),
      // HOOK(retry, regenerate): a later issue adds these buttons here
      // (POST /v1/runbooks/{id}/retry exists; regenerate does not yet).
      el("div", { class: "card" }, el("h2", {}, "Result"), s.result !== undefined ? json(s.result) : el("p", { class: "muted" }, "None.")),
      el("div", { class: "card" }, el("h2", {}, "Error"), s.error ? json(s.error) : el("p", { class: "muted" }, "None.")));
    };
    show(
      el("h1", {}, "Step ", key),
      el("div", { class: "toolbar" }, el("a", { href: "#/runbooks/" + encodeURIComponent(id) }, "← Runbook " + id.slice(0, 8)), live),
      el("div", { class: "layout step-layout" },
        el("section", {},
          el("div", { class: "card" }, el("h2", {}, "Arguments"), json(planStep.args)),
          el("div", { class: "card" }, el("h2", {}, "Execution block (frozen in the plan)"), json(planStep.execution),
            kv([["verb hash", planStep.verb_hash], ["source", planStep.pos ? planStep.pos.file + ":" + planStep.pos.line : ""]])),
          el("h2", {}, "Events of this step"), led.node),
        el("aside", {}, side)));
    render(view);
    refresh = watch(id, signal, render, (e) => { if (e.step === key) led.add(ledgerRow(e, id)); }, live);
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
      if (!me) {
        me = await api("GET", "/v1/whoami", null, signal);
        whoLine.textContent = "Signed in as " + me.actor + " (" + me.tenant + ")";
        whoLine.hidden = false;
      }
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

// rbd console: the schedules page (docs/design/semantics.md section 14),
// a page of its own that console.js's router shows at #/schedules. It
// keeps console.js's rules: the DOM from text only, the token in a
// header only, every action the same /v1 call rbd schedule makes.
"use strict";

(() => {
  window.rbdPages = window.rbdPages || {};

  // schedules lists the caller's schedules with their next tick and the
  // runbook their last tick made, with a pause or resume button each.
  window.rbdPages.schedules = async (ui, signal) => {
    const { el, api, badge, time, show } = ui;
    const res = await api("GET", "/v1/schedules", null, signal);
    const list = res.schedules || [];
    const reload = () => window.rbdPages.schedules(ui, signal).catch((err) => {
      if (!signal.aborted) show(el("p", { class: "error", role: "alert" }, err.message));
    });

    const toggle = (s) => {
      const pause = !s.paused;
      const button = el("button", {
        type: "button", class: pause ? "" : "primary",
        "aria-label": (pause ? "Pause " : "Resume ") + s.name,
        onclick: async () => {
          button.disabled = true;
          try {
            await api("PATCH", "/v1/schedules/" + encodeURIComponent(s.id), { paused: pause }, signal);
            await reload();
          } catch (err) {
            button.disabled = false;
            button.after(el("span", { class: "error", role: "alert" }, " " + err.message));
          }
        },
      }, pause ? "Pause" : "Resume");
      return button;
    };

    const lastRunbook = (s) => {
      if (!s.last_runbook) return el("span", { class: "muted" }, "none yet");
      return el("span", {},
        el("a", { href: "#/runbooks/" + encodeURIComponent(s.last_runbook.id) }, s.last_runbook.id.slice(0, 8)),
        " ", s.last_runbook.status ? badge(s.last_runbook.status) : "");
    };

    const rows = list.map((s) => el("tr", { "data-schedule": s.id },
      el("td", {}, el("strong", {}, s.name), s.paused ? el("span", { class: "muted" }, " paused") : ""),
      el("td", { class: "id" }, s.cron),
      el("td", { class: "opt" }, s.timezone),
      el("td", { class: "next" }, s.paused ? el("span", { class: "muted" }, "—") : time(s.next_fire_at)),
      el("td", { class: "last" }, lastRunbook(s),
        s.last_error ? el("div", { class: "error" }, s.last_error) : ""),
      el("td", { class: "opt" }, String(s.skipped || 0)),
      el("td", {}, toggle(s))));

    show(
      el("h1", {}, "Schedules"),
      el("p", { class: "muted" }, "Each tick submits a runbook; times are UTC. Make one with rbd schedule create."),
      list.length === 0
        ? el("p", { class: "muted" }, "No schedules.")
        : el("table", { id: "schedules" },
          el("thead", {}, el("tr", {}, el("th", {}, "Schedule"), el("th", {}, "Cron"), el("th", { class: "opt" }, "Time zone"),
            el("th", {}, "Next tick"), el("th", {}, "Last runbook"), el("th", { class: "opt" }, "Skipped"), el("th", {}, ""))),
          el("tbody", {}, rows)));
  };
})();

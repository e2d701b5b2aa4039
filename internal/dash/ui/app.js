// spillway's dashboard: one server-sent-events stream from the gateway
// (/ui/events) carries the whole state first, then each attempt and model
// switch as it happens, and the state again every two seconds. Nothing is
// fetched from anywhere else; every text from the gateway goes in as text.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) {
    if (k !== null && k !== undefined) e.append(k.nodeType ? k : String(k));
  }
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

const pct = (r) => (r * 100).toFixed(r > 0 && r < 0.1 ? 1 : 0) + "%";
const clock = (ts) => new Date(ts).toLocaleTimeString([], { hour12: false });
// ms is a duration; "–" for none (a median of no attempts is 0)
function ms(v, zero) {
  if (!v && !zero) return "–";
  return v < 1000 ? v + " ms" : (v / 1000).toFixed(1) + " s";
}
function secs(s) {
  if (s <= 0) return "now";
  if (s < 60) return Math.ceil(s) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.ceil(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

let state = null; // the last state
let fallbacks = 0;

function pill(status) {
  return el("span", { class: "pill " + status, "data-status": status }, status);
}

function breakerText(b, next) {
  if (b === "closed") return "closed";
  // half open: no timer runs; the next request for the model is its probe
  if (b === "half_open" || b === "half-open") return "half open · the next request probes it";
  return b + " · probe in " + secs(next);
}

function renderHealth(st) {
  $("window-note").textContent = "(success and p50 over the last " + st.window_min + " min)";
  const down = st.providers_down || [];
  $("down").hidden = down.length === 0;
  $("down").textContent = down.length ? "Unreachable providers: " + down.join(", ") : "";
  const box = el("div", { class: "chains" });
  for (const c of st.chains || []) {
    const rows = el("tbody");
    for (const m of c.models || []) {
      const r = m.rolling;
      rows.append(el("tr", { class: "model", "data-model": m.name, "data-status": m.status },
        el("td", null, el("span", { class: "tier " + m.tier }, m.tier || "–")),
        el("td", { class: "name" }, m.name, el("small", null, " " + m.provider)),
        el("td", null, pill(m.status)),
        el("td", { class: "breaker" }, breakerText(m.breaker, m.next_probe_s)),
        el("td", { class: "num" }, r.ok + r.failed ? pct(r.success_rate) : "–"),
        el("td", { class: "num opt" }, ms(r.p50_ms)),
        el("td", { class: "num opt" }, r.ok + r.failed)));
      for (const d of m.deployments || []) {
        const q = d.rolling;
        rows.append(el("tr", { class: "deployment", "data-model": m.name, "data-deployment": d.name, "data-status": d.status },
          el("td"),
          el("td", { class: "name" }, "↳ " + d.name, el("small", null, " " + d.provider)),
          el("td", null, pill(d.status)),
          el("td", { class: "breaker" }, breakerText(d.breaker, d.next_probe_s)),
          el("td", { class: "num" }, q.ok + q.failed ? pct(q.success_rate) : "–"),
          el("td", { class: "num opt" }, ms(q.p50_ms)),
          el("td", { class: "num opt" }, q.ok + q.failed)));
      }
    }
    box.append(el("div", { class: "chain", "data-chain": c.name },
      el("h3", null, c.name),
      el("div", { class: "scroll" }, el("table", null,
        el("thead", null, el("tr", null, el("th", null, "tier"), el("th", null, "model"), el("th", null, "health"),
          el("th", null, "breaker"), el("th", { class: "num" }, "success"), el("th", { class: "num opt" }, "p50"), el("th", { class: "num opt" }, "attempts"))),
        rows))));
  }
  $("chains").replaceChildren(box);
}

function flowItem(a) {
  const failed = a.class !== "ok";
  const li = el("li", { class: failed ? "failed" : "ok", "data-class": a.class });
  li.append(el("time", null, clock(a.ts)));
  const route = a.requested_model && a.requested_model !== a.model ? a.requested_model + " → " + a.model : a.model;
  li.append(el("span", { class: "route" }, route + (a.deployment ? " @" + a.deployment : "")));
  li.append(el("span", { class: "cls " + a.class }, a.class));
  li.append(el("span", { class: "num" }, ms(a.latency_ms, true)));
  if (a.summary) li.title = a.summary;
  return li;
}

function switchItem(s) {
  return el("li", { class: "switch", "data-class": s.class },
    el("time", null, clock(s.ts)),
    el("span", { class: "route" }, "fallback " + s.from + " → " + s.to),
    el("span", { class: "cls " + s.class }, s.class),
    el("span", { class: "num" }, ""));
}

function pushFlow(li) {
  const ol = $("flow");
  ol.prepend(li);
  while (ol.children.length > 60) ol.lastChild.remove();
}

function renderFlow(st) {
  const ol = $("flow");
  ol.replaceChildren(...(st.flow || []).slice().reverse().map((x) => x.kind === "fallback" ? switchItem(x) : flowItem(x)));
}

function failureRow(f) {
  return el("tr", { "data-class": f.class, "data-model": f.model },
    el("td", null, clock(f.ts)),
    el("td", null, f.model + (f.deployment ? " @" + f.deployment : "")),
    el("td", null, el("span", { class: "cls " + f.class }, f.class)),
    el("td", { class: "why" }, f.summary, f.message ? el("small", null, f.message) : null));
}

function renderFailures(list) {
  $("no-failures").textContent = "None since the gateway started."; // known now, not while connecting
  $("no-failures").hidden = list.length > 0;
  $("failures").hidden = list.length === 0;
  $("failures").tBodies[0].replaceChildren(...list.slice().reverse().map(failureRow));
}

function renderQueue(q) {
  $("queue-section").hidden = !q;
  if (!q) return;
  const order = ["running", "queued", "waiting for capacity", "waiting for the usage limit's reset", "waiting to retry", "scheduled", "succeeded", "failed", "cancelled"];
  const names = Object.keys(q.counts || {}).sort((a, b) => (order.indexOf(a) + 99) % 99 - (order.indexOf(b) + 99) % 99);
  $("queue-counts").replaceChildren(...names.map((n) => el("div", null, el("dt", null, n), el("dd", null, q.counts[n]))));
  $("queue-error").hidden = !q.error;
  $("queue-error").textContent = q.error ? "The queue could not be read: " + q.error : "";
  $("queue-running").hidden = !(q.running || []).length;
  $("queue-running").tBodies[0].replaceChildren(...(q.running || []).map((t) =>
    el("tr", null, el("td", null, "#" + t.id), el("td", null, t.name),
      el("td", null, t.attempt + " of " + t.max_attempts), el("td", null, clock(t.since)))));
}

function renderHeat(h) {
  const g = $("heatmap");
  const kids = [];
  for (let hour = 0; hour < 24; hour += 3) {
    const t = svg("text", { x: 40 + hour * 26 + 13, y: 12, "text-anchor": "middle", class: "axis" });
    t.textContent = String(hour).padStart(2, "0");
    kids.push(t);
  }
  for (let d = 0; d < 7; d++) {
    const t = svg("text", { x: 34, y: 20 + d * 26 + 17, "text-anchor": "end", class: "axis" });
    t.textContent = h.weekdays[d];
    kids.push(t);
    for (let hour = 0; hour < 24; hour++) {
      const c = h.cells[d][hour];
      const fill = h.fills[d][hour];
      const r = svg("rect", { x: 40 + hour * 26, y: 20 + d * 26, width: 24, height: 24, rx: 3,
        class: fill ? "cell" : "cell empty", "data-weekday": d, "data-hour": hour, fill: fill || "#ffffff" });
      const title = svg("title");
      title.textContent = h.weekdays[d] + " " + String(hour).padStart(2, "0") + ":00 — " +
        (c.attempts ? c.attempts + " attempts, " + c.capacity + " capacity" : "no attempts");
      r.append(title);
      kids.push(r);
    }
  }
  g.replaceChildren(...kids);
  $("heat-note").textContent = h.since ? "(since " + h.since + ", " + h.tz + (h.reading ? "; still reading the event log" : "") + ")" : "(reading the event log…)";
  const w = [];
  if (h.quiet) w.push("Quietest hours: " + h.quiet.spec + " (" + pct(h.quiet.capacity_rate) + " capacity).");
  if (h.peak) w.push("Peak: " + h.peak.spec + " (" + pct(h.peak.capacity_rate) + ").");
  $("windows").textContent = w.join(" ");
  $("heat-models").tBodies[0].replaceChildren(...(h.models || []).slice(0, 20).map((m) =>
    el("tr", { "data-model": m.model }, el("td", null, m.model), el("td", { class: "num" }, m.attempts),
      el("td", { class: "num" }, pct(m.failure_rate)), el("td", { class: "num" }, pct(m.capacity_rate)),
      el("td", { class: "num" }, m.fallbacks), el("td", { class: "num" }, ms(m.latency_p50_ms ? Math.round(m.latency_p50_ms) : 0)))));
}

function renderCounts(st) {
  $("requests").textContent = st.requests;
  $("inflight").textContent = st.inflight;
  fallbacks = st.fallbacks; // the gateway's count (a restarted gateway starts again)
  $("fallbacks").textContent = fallbacks;
}

function render(st) {
  state = st;
  renderCounts(st);
  renderHealth(st);
  renderFlow(st);
  renderFailures(st.failures || []);
  renderQueue(st.queue);
  if (st.heat) renderHeat(st.heat); // later states carry it only when it changed
}

function live(word) {
  $("live").dataset.live = word;
  $("live").textContent = word;
}

function connect() {
  const es = new EventSource("/ui/events");
  es.addEventListener("open", () => live("live"));
  es.addEventListener("error", () => live(es.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…"));
  es.addEventListener("state", (e) => render(JSON.parse(e.data)));
  es.addEventListener("attempt", (e) => {
    const a = JSON.parse(e.data);
    pushFlow(flowItem(a));
    if (state && a.summary) {
      state.failures = (state.failures || []).concat([a]).slice(-30);
      renderFailures(state.failures);
    }
  });
  es.addEventListener("fallback", (e) => {
    const s = JSON.parse(e.data);
    fallbacks = Math.max(fallbacks, s.fallbacks);
    $("fallbacks").textContent = fallbacks;
    pushFlow(switchItem(s));
  });
}

connect();

// Decisions: paged and filtered through /api/scheduler/decisions/ (filters live in the URL), live on
// the first page; a compact breakdown (top candidates, the rest collapsed) of the selected call.
(function () {
  const N = window.netaware;
  const TOP = 10;
  const form = document.getElementById("filters");
  const tbody = document.querySelector("#decision-table tbody");
  const sizeSelect = document.getElementById("page-size");
  let offset = 0, count = 0, openId = null;
  const params0 = new URLSearchParams(location.search);
  [...form.elements].forEach(el => { if (el.name && params0.get(el.name)) el.value = params0.get(el.name); });
  if (params0.get("offset")) offset = parseInt(params0.get("offset"), 10) || 0;
  if (params0.get("open")) openId = params0.get("open");
  if (params0.get("limit") && [...sizeSelect.options].some(o => o.value === params0.get("limit"))) sizeSelect.value = params0.get("limit");
  // Everything the view shows is in its address (filters, page, page size, the open decision):
  // a reload or a shared link shows the same.
  function state() {
    const p = filters();
    if (offset) p.set("offset", offset);
    if (sizeSelect.value !== "50") p.set("limit", sizeSelect.value);
    if (openId) p.set("open", openId);
    return p;
  }
  function saveState() { history.replaceState(null, "", "?" + state().toString()); }
  function select(tr, id) {
    tbody.querySelectorAll("tr.selected").forEach(x => { x.classList.remove("selected"); });
    tr.classList.add("selected"); openId = id; saveState(); show(id);
  }

  function filters() {
    const p = new URLSearchParams();
    [...form.elements].forEach(el => {
      if (!el.name || !el.value) return;
      p.set(el.name, el.type === "datetime-local" ? new Date(el.value + "Z").toISOString() : el.value.trim());
    });
    return p;
  }
  function url() {
    const p = filters(); p.set("limit", sizeSelect.value); p.set("offset", offset);
    return "/api/scheduler/decisions/?" + p.toString();
  }
  function summary(d) {
    const r = d.result || {};
    if (d.verb === "filter") {
      const failed = Object.keys(r.failed || {}).length + Object.keys(r.unresolvable || {}).length;
      const plan = r.plan ? " — plan " + r.plan.id + " (" + r.plan.method + (r.plan.followed === false ? ", not followed" : "")
        + (r.plan.zones && r.plan.zones.length ? ": " + r.plan.zones.join(", ") : "") + ")" : "";
      return (r.passed ?? "?") + " of " + d.candidates + " passed" + (failed ? ", " + failed + " rejected" : "") + plan;
    }
    if (d.verb === "prioritize") return r.neutral ? "neutral scores" : (r.best || d.node ? "best " + (r.best || d.node) : "scored");
    if (d.verb === "bind") return r.bound === false ? "not bound" : (d.node ? "bound to " + d.node : "bound");
    if (d.verb === "preempt") return "kept " + (Array.isArray(r.kept) ? r.kept.length : Object.keys(r.kept || {}).length) + " node(s)";
    return JSON.stringify(r).slice(0, 80);
  }
  function render(body) {
    const rows = body.results || [];
    count = body.count || 0;
    tbody.innerHTML = "";
    document.getElementById("decision-count").textContent = count ? (offset + 1) + "–" + (offset + rows.length) + " of " + count : "no decision";
    document.getElementById("newer").disabled = offset === 0;
    document.getElementById("older").disabled = offset + rows.length >= count;
    if (!rows.length) { const tr = N.el("tr"); tr.appendChild(N.el("td", { colspan: 8 }, "No decisions match.")); tbody.appendChild(tr); }
    if (openId === "newest") openId = rows.length ? String(rows[0].id) : null;  // ?open=newest: the first row, opened
    rows.forEach(d => {
      const tr = N.el("tr", { "data-id": d.id, style: "cursor:pointer" });
      // The time is a link to this decision (focusable, Enter opens it here, shareable).
      const when = N.el("td"), p = state(); p.set("open", d.id);
      const link = N.el("a", { href: "?" + p.toString(), class: "open-decision", "aria-label": d.verb + " " + (d.pod || "") + " at " + (d.ts || "").replace("T", " ").slice(0, 19) + ": show the breakdown" },
        (d.ts || "").replace("T", " ").slice(0, 19));
      link.addEventListener("click", ev => { ev.preventDefault(); ev.stopPropagation(); select(tr, d.id); });
      when.appendChild(link); tr.appendChild(when);
      [d.verb, d.pod || "–", d.workload || "–", d.profile || "", String(d.candidates ?? "")]
        .forEach(t => tr.appendChild(N.el("td", {}, t)));
      tr.appendChild(N.el("td", d.error ? { class: "bad" } : {}, d.error ? "error: " + d.error : summary(d)));
      tr.appendChild(N.el("td", {}, N.fmt(d.duration_ms, 2)));
      if (String(d.id) === String(openId)) tr.classList.add("selected");
      tr.addEventListener("click", () => select(tr, d.id));
      tbody.appendChild(tr);
    });
  }
  const live = N.live(url, 10, render, { onError: r => N.showError("decisions-error", "Could not load decisions: HTTP " + r.status + " " + JSON.stringify(r.body)) });
  function reload() {
    saveState();
    N.showError("decisions-error", ""); live.refresh();
  }
  form.addEventListener("submit", e => { e.preventDefault(); offset = 0; reload(); });
  form.addEventListener("reset", () => setTimeout(() => { offset = 0; reload(); }, 0));
  sizeSelect.addEventListener("change", () => { offset = 0; reload(); });
  document.getElementById("newer").addEventListener("click", () => { offset = Math.max(0, offset - parseInt(sizeSelect.value, 10)); reload(); });
  document.getElementById("older").addEventListener("click", () => { offset += parseInt(sizeSelect.value, 10); reload(); });

  function table(el, cols, nodes, bd) {
    const head = el.querySelector("thead"), body = el.querySelector("tbody");
    head.innerHTML = ""; body.innerHTML = "";
    const htr = N.el("tr"); ["node", ...cols].forEach(c => htr.appendChild(N.el("th", {}, c))); head.appendChild(htr);
    nodes.forEach(n => {
      const tr = N.el("tr"); tr.appendChild(N.el("td", {}, n));
      cols.forEach(c => { const v = bd[n][c]; tr.appendChild(N.el("td", c === "reason" && v ? { class: "bad" } : {}, typeof v === "number" ? N.fmt(v, 2) : (v ?? ""))); });
      body.appendChild(tr);
    });
  }
  async function show(id) {
    const r = await N.getJSON("/api/scheduler/decisions/" + id + "/");
    if (!r.ok) { N.showError("decisions-error", "Could not load decision " + id + ": HTTP " + r.status); return; }
    const d = r.body, bd = d.breakdown || {}, result = d.result || {};
    const nodes = Object.keys(bd);
    const rank = n => (typeof bd[n].total === "number" ? bd[n].total : typeof bd[n].extender === "number" ? bd[n].extender : -1);
    nodes.sort((a, b) => rank(b) - rank(a) || a.localeCompare(b));
    document.getElementById("breakdown-panel").style.display = "";
    document.getElementById("breakdown-title").textContent = d.verb + " " + (d.pod || "") + " — " + d.candidates + " candidate node(s)"
      + (d.profile ? " — profile " + d.profile : "") + (d.node ? " — chose " + d.node : "");
    const ul = document.getElementById("breakdown-result"); ul.innerHTML = "";
    ul.appendChild(N.el("li", {}, summary(d) + (d.error ? " — error: " + d.error : "")));
    (result.notes || []).forEach(note => ul.appendChild(N.el("li", {}, note)));
    if (result.plan) {  // the placement plan this answer followed, and why it was (re)computed
      const p = result.plan;
      ul.appendChild(N.el("li", {}, "placement plan " + p.id + " (" + p.method + (p.value != null ? ", predicted score " + p.value : "")
        + "): zone(s) " + ((p.zones || []).join(", ") || "none left") + ((p.nodes || []).length ? ", node(s) " + p.nodes.join(", ") : "")
        + (p.followed === false ? " — not followed (no candidate there)" : "") + (p.reason ? " — computed because: " + p.reason : "")));
      (p.diagnosis || []).forEach(text => ul.appendChild(N.el("li", {}, "plan: " + text)));
    }
    Object.entries(result).forEach(([k, v]) => {  // any other field, as it comes (the log format may grow)
      if (["notes", "passed", "best", "neutral", "bound", "plan"].includes(k)) return;
      const text = typeof v === "object" ? (Array.isArray(v) ? v.length + " item(s)" : Object.keys(v).length + " entr(ies): " + Object.entries(v).slice(0, 5).map(([a, b]) => a + " " + (typeof b === "object" ? JSON.stringify(b) : b)).join("; ")) : String(v);
      ul.appendChild(N.el("li", { class: "muted" }, k + ": " + text));
    });
    const scorers = new Set();
    nodes.forEach(n => Object.keys(bd[n] || {}).forEach(k => { if (typeof bd[n][k] === "number" && !["total", "extender"].includes(k)) scorers.add(k); }));
    const cols = ["total", "extender", ...scorers, "reason"].filter(c => nodes.some(n => bd[n][c] !== undefined && bd[n][c] !== null && bd[n][c] !== ""));
    const top = nodes.slice(0, TOP), rest = nodes.slice(TOP);
    const traces = [...scorers].map(s => ({ type: "bar", name: s, x: top, y: top.map(n => bd[n][s]) }));
    if (top.some(n => typeof bd[n].total === "number")) traces.push({ type: "scatter", mode: "markers", name: "total (0–100)", x: top, y: top.map(n => bd[n].total), marker: { size: 11, color: "#111827", symbol: "diamond" } });
    if (top.some(n => typeof bd[n].extender === "number")) traces.push({ type: "scatter", mode: "lines+markers", name: "extender answer (0–10)", x: top, y: top.map(n => bd[n].extender), yaxis: "y2", line: { dash: "dot", color: "#b45309" } });
    const chart = document.getElementById("breakdown-chart");
    if (traces.length) {
      chart.style.display = "";
      N.plotly().then(() => Plotly.react(chart, traces, { barmode: "group", yaxis: { title: { text: "score (0–100)" }, range: [0, 105] },
        yaxis2: { title: { text: "extender (0–10)" }, overlaying: "y", side: "right", range: [0, 10.5] },
        xaxis: { type: "category" }, legend: { orientation: "h", y: 1.15 }, margin: { t: 30 } }, { responsive: true, displaylogo: false }));
    } else { chart.style.display = "none"; }
    table(document.getElementById("breakdown-table"), cols, top, bd);
    const details = document.getElementById("breakdown-rest");
    details.style.display = rest.length ? "" : "none";
    details.open = false;
    details.querySelector("summary").textContent = "… " + rest.length + " more node(s) (lower scores)";
    table(details.querySelector("table"), cols, rest, bd);
    if (!nodes.length) { const tb = document.querySelector("#breakdown-table tbody"); const tr = N.el("tr"); tr.appendChild(N.el("td", {}, "No per-node breakdown for this call.")); tb.appendChild(tr); }
    why(d);
  }

  // "Why is this pod here": for a prioritize/bind/preempt call, the pod's filter call at or before it
  // (which nodes passed, which were rejected and why, the placement plan), shown with the decision.
  async function why(d) {
    const box = document.getElementById("breakdown-why");
    box.innerHTML = ""; box.hidden = true;
    if (d.verb === "filter" || !d.pod) return;
    const q = new URLSearchParams({ pod: d.pod, verb: "filter", limit: "1" });
    if (d.ts) q.set("until", d.ts);
    const r = await N.getJSON("/api/scheduler/decisions/?" + q.toString());
    const f = r.ok && r.body && (r.body.results || [])[0];
    box.hidden = false;
    box.appendChild(N.el("h3", {}, "Why " + (d.node ? "on " + d.node : "here")));
    if (!f) { box.appendChild(N.el("p", { class: "muted" }, "No filter call logged for this pod before this decision.")); return; }
    const full = await N.getJSON("/api/scheduler/decisions/" + f.id + "/");
    const result = (full.ok && full.body.result) || f.result || {};
    const ul = N.el("ul", { class: "sentences" });
    ul.appendChild(N.el("li", {}, "Filter call: " + summary(f)));
    const rejected = Object.entries(Object.assign({}, result.failed || {}, result.unresolvable || {}));
    if (rejected.length) {
      const li = N.el("li", {}, rejected.length + " node(s) rejected: ");
      li.appendChild(N.el("span", { id: "why-rejected" }, rejected.slice(0, 8).map(([n, reason]) => n + " (" + reason + ")").join("; ") + (rejected.length > 8 ? "; …" : "")));
      ul.appendChild(li);
    }
    if (result.plan) ul.appendChild(N.el("li", {}, "Placement plan " + result.plan.id + " (" + result.plan.method + "): zone(s) " + ((result.plan.zones || []).join(", ") || "none")
      + (result.plan.reason ? " — computed because: " + result.plan.reason : "")));
    box.appendChild(ul);
    const p = filters(); p.set("open", f.id);
    const a = N.el("a", { href: "?" + p.toString(), id: "why-filter-link" }, "Open the filter call");
    a.addEventListener("click", ev => { ev.preventDefault(); openId = f.id; saveState(); show(f.id); });
    box.appendChild(a);
  }
  if (openId && openId !== "newest") show(openId);
  else if (openId === "newest") {  // opened once the first page is there
    const wait = setInterval(() => { if (openId !== "newest") { clearInterval(wait); if (openId) { saveState(); show(openId); } } }, 100);
  }
})();

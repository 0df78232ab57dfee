// Placements map: regions > zones > nodes > pod chips (HTML), node-to-node dependency lines (SVG),
// live. No plotly: a thousand chips draw faster as plain elements.
(function () {
  const N = window.netaware;
  const palette = ["#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#dc2626", "#4d7c0f", "#9333ea", "#0f766e"];
  let data = null, selected = null;
  const groupColour = id => palette[data.groups.findIndex(g => g.id === id) % palette.length];
  function shade(hex, k) {  // lighter per workload index, so workloads of one AppGroup stay related
    const n = parseInt(hex.slice(1), 16), f = Math.min(0.6, 0.12 * k);
    const ch = s => Math.round(((n >> s) & 255) + (255 - ((n >> s) & 255)) * f);
    return "rgb(" + ch(16) + "," + ch(8) + "," + ch(0) + ")";
  }
  function workloadIndex(groupId, name) { const g = data.groups.find(x => x.id === groupId); return g ? g.workloads.findIndex(w => w.name === name) : 0; }
  function scoreClass(s) { return s === null ? "muted" : s >= 80 ? "score good" : s >= 50 ? "score mid" : "score low"; }
  function linkColour(lat) {
    const [lo, hi] = data.latencyRange;
    if (lat === null || lo === null || hi === null) return "#94a3b8";
    const t = hi > lo ? (lat - lo) / (hi - lo) : 0;
    return ["#15803d", "#65a30d", "#ca8a04", "#ea580c", "#b91c1c"][Math.min(4, Math.floor(5 * t))];
  }

  function render(body) {
    data = body;
    N.showError("placements-error", body.problem || "");
    const map = document.getElementById("map");
    map.innerHTML = "";
    const podsOn = {};
    body.pods.forEach((p, i) => (podsOn[p.node] = podsOn[p.node] || []).push(i));
    const regions = {};
    body.nodes.forEach((n, i) => { const r = regions[n.region || "(no region)"] = regions[n.region || "(no region)"] || {}; (r[n.zone || "(no zone)"] = r[n.zone || "(no zone)"] || []).push(i); });
    Object.entries(regions).forEach(([region, zones]) => {
      const rEl = N.el("div", { class: "region" }); rEl.appendChild(N.el("div", { class: "title" }, "region " + region));
      const zWrap = N.el("div", { class: "zones" });
      Object.entries(zones).forEach(([zone, nodes]) => {
        const zEl = N.el("div", { class: "zone" }); zEl.appendChild(N.el("div", { class: "title" }, "zone " + zone));
        const nWrap = N.el("div", { class: "nodes" });
        nodes.forEach(i => {
          const node = body.nodes[i];
          const nEl = N.el("div", { class: "node" + (node.ready ? "" : " notready"), id: "node-" + i, "data-node": node.name });
          nEl.appendChild(N.el("div", { class: "name" }, node.name + ((podsOn[i] || []).length ? " · " + podsOn[i].length : "")));
          (podsOn[i] || []).forEach(pi => {
            const p = body.pods[pi];
            const chip = N.el("span", { class: "chip", "data-pod": p.pod, "data-index": pi, title: p.pod + " (" + p.workload + ") score " + N.fmt(p.score, 1) },
              p.pod.split("/")[1]);
            chip.style.background = shade(groupColour(p.group), workloadIndex(p.group, p.workload));
            chip.addEventListener("click", () => select(pi));
            nEl.appendChild(chip);
          });
          nWrap.appendChild(nEl);
        });
        zEl.appendChild(nWrap); zWrap.appendChild(zEl);
      });
      rEl.appendChild(zWrap); map.appendChild(rEl);
    });
    const legend = document.getElementById("map-legend");
    legend.innerHTML = "";
    body.groups.forEach(g => { const s = N.el("span", {}, "■ " + g.name); s.style.color = groupColour(g.id); legend.appendChild(s); });
    legend.appendChild(N.el("span", { class: "muted" }, body.pods.length + " pod(s) on " + body.nodes.length + " node(s), " + body.links.length + " link(s)" + (body.hiddenLinks ? " (+" + body.hiddenLinks + " not drawn)" : "")));
    const tbody = document.querySelector("#score-table tbody");
    tbody.innerHTML = "";
    body.groups.forEach(g => {
      const tr = N.el("tr", { "data-group": g.name });
      tr.appendChild(N.el("td", {}, g.name)); tr.appendChild(N.el("td", {}, String(g.pods)));
      tr.appendChild(N.el("td", { class: scoreClass(g.score) }, N.fmt(g.score, 1))); tbody.appendChild(tr);
      g.workloads.forEach(w => {
        const wr = N.el("tr", { "data-workload": g.name + "/" + w.name });
        wr.appendChild(N.el("td", { class: "muted" }, "  " + w.name)); wr.appendChild(N.el("td", {}, String(w.pods)));
        wr.appendChild(N.el("td", { class: scoreClass(w.score) }, N.fmt(w.score, 1))); tbody.appendChild(wr);
      });
    });
    if (selected !== null) { const i = body.pods.findIndex(p => p.pod === selected); if (i >= 0) select(i, true); else selected = null; }
    lines();
  }

  function centre(el, wrap) { const r = el.getBoundingClientRect(), w = wrap.getBoundingClientRect(); return [r.left - w.left + r.width / 2, r.top - w.top + r.height / 2]; }
  function lines() {
    const wrap = document.getElementById("map-wrap"), svg = document.getElementById("map-lines");
    svg.setAttribute("width", wrap.scrollWidth); svg.setAttribute("height", wrap.scrollHeight);
    svg.innerHTML = "";
    const focus = selected !== null ? data.pods.find(p => p.pod === selected) : null;
    data.links.forEach(l => {
      if (focus && l.from !== focus.node && l.to !== focus.node) return;
      const a = document.getElementById("node-" + l.from), b = document.getElementById("node-" + l.to);
      if (!a || !b) return;
      const [x1, y1] = centre(a, wrap), [x2, y2] = centre(b, wrap);
      const line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      Object.entries({ x1, y1, x2, y2, stroke: linkColour(l.latency), "stroke-width": Math.min(6, 1 + Math.log2(1 + l.uses)), "stroke-opacity": focus ? 0.9 : 0.45 })
        .forEach(([k, v]) => line.setAttribute(k, v));
      if (l.inferred) line.setAttribute("stroke-dasharray", "5,4");
      line.dataset.link = l.from + "-" + l.to;
      svg.appendChild(line);
    });
  }

  async function select(i, quiet) {
    const p = data.pods[i];
    selected = p.pod;
    document.querySelectorAll(".chip.selected").forEach(c => c.classList.remove("selected"));
    const chip = document.querySelector('.chip[data-index="' + i + '"]'); if (chip) chip.classList.add("selected");
    lines();
    const panel = document.getElementById("pod-panel");
    const g = data.groups.find(x => x.id === p.group) || { name: "?", workloads: [] };
    const w = g.workloads.find(x => x.name === p.workload) || { dependsOn: [] };
    panel.innerHTML = "";
    panel.appendChild(N.el("h2", { style: "margin-top:0" }, p.pod));
    [["AppGroup", g.name], ["Workload", p.workload], ["Node", data.nodes[p.node].name + " (zone " + (data.nodes[p.node].zone || "–") + ")"],
      ["Network score", N.fmt(p.score, 1)], ["Depends on", w.dependsOn.join(", ") || "–"],
      ["Bound", p.boundAt ? new Date(p.boundAt * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "–"]]
      .forEach(([k, v]) => { const d = N.el("div"); d.appendChild(N.el("span", { class: "muted" }, k + ": ")); d.appendChild(N.el("span", {}, v)); panel.appendChild(d); });
    const links = N.el("p");
    const dl = N.el("a", { href: "/decisions/?pod=" + encodeURIComponent(p.pod), id: "pod-decisions" }, "all decisions");
    const dg = N.el("a", { href: "/diagnose/?pod=" + encodeURIComponent(p.pod) }, "diagnose");
    const why = N.el("a", { href: "/decisions/?pod=" + encodeURIComponent(p.pod) + "&open=newest", id: "pod-why" }, "why here");
    links.appendChild(why); links.appendChild(document.createTextNode(" · "));
    links.appendChild(dl); links.appendChild(document.createTextNode(" · ")); links.appendChild(dg); panel.appendChild(links);
    if (quiet) return;
    const box = N.el("div", { id: "pod-decision" }, "Loading its newest decision…"); panel.appendChild(box);
    const r = await N.getJSON("/api/scheduler/decisions/?limit=1&pod=" + encodeURIComponent(p.pod) + "&verb=prioritize");
    const r2 = await N.getJSON("/api/scheduler/decisions/?limit=1&pod=" + encodeURIComponent(p.pod) + "&verb=bind");
    const rows = [...((r.body && r.body.results) || []), ...((r2.body && r2.body.results) || [])];
    box.innerHTML = "";
    if (!r.ok) { box.textContent = "Decisions unavailable: HTTP " + r.status; return; }
    if (!rows.length) { box.textContent = "No decision logged for this pod (placed before the log, or by another scheduler)."; return; }
    rows.forEach(d => {
      const line = N.el("div");
      line.appendChild(N.el("a", { href: "/decisions/?pod=" + encodeURIComponent(p.pod) + "&open=" + d.id }, d.verb + " " + (d.ts || "").replace("T", " ").slice(0, 19)));
      line.appendChild(document.createTextNode(" → " + (d.node || "–") + (d.profile ? " (profile " + d.profile + ")" : "") + (d.error ? " error: " + d.error : "")));
      box.appendChild(line);
    });
  }

  N.live("/dashboard/data/placements", 20, render, { takenAt: b => (b.dataUntil ? b.dataUntil * 1000 : null), isStale: b => (b.stale ? b.staleReason : ""),
    onError: r => N.showError("placements-error", "Could not load placements: HTTP " + r.status) });
  window.addEventListener("resize", () => { if (data) lines(); });
})();

// Topology page: live heatmap (metric/quantile selectable, zone and region separators, rich hover,
// click -> link page), zone graph and table, nodes. Plotly.react with a fixed uirevision keeps the
// user's zoom across refreshes.
(function () {
  const N = window.netaware;
  const metricSelect = document.getElementById("metric");
  const zoneMetric = document.getElementById("zone-metric");
  const colours = { latency_p50: "YlOrRd", latency_p90: "YlOrRd", latency_p99: "YlOrRd", loss: "YlOrRd", bandwidth: "Viridis" };
  let lastHeat = null, lastZones = null;

  function card(label, value, cls, title) {
    const c = N.el("div", { class: "card", "data-card": label });
    c.appendChild(N.el("div", { class: "label" }, label));
    const v = N.el("div", { class: "value" + (cls ? " " + cls : "") }, value);
    c.appendChild(v);
    if (title) c.title = title;
    return c;
  }

  function order(body) {
    const idx = body.nodes.map((_, i) => i);
    const key = i => (body.regions[i] || "") + "\u0000" + (body.zones[i] || "") + "\u0000" + body.nodes[i];
    return idx.sort((a, b) => key(a).localeCompare(key(b)));
  }

  function drawHeatmap(body) {
    lastHeat = body;
    N.showError("topology-error", "");
    document.getElementById("heatmap").style.display = "";
    const n = body.nodes.length, ord = order(body), now = Date.now() / 1000;
    const labels = ord.map(i => body.nodes[i]);
    const z = [], custom = [];
    const counts = { 1: 0, 2: 0, 3: 0, 4: 0 };
    const inferredXY = [[], []], staleXY = [[], []];
    for (let r = 0; r < n; r++) {
      const zr = [], cr = [];
      for (let c = 0; c < n; c++) {
        const k = ord[r] * n + ord[c];
        const v = body.values[k], kind = body.kind[k];
        if (kind) counts[kind] += 1;
        if (kind === 2 || kind === 3) { inferredXY[0].push(labels[c]); inferredXY[1].push(labels[r]); }
        if (kind === 3 || kind === 4) { staleXY[0].push(labels[c]); staleXY[1].push(labels[r]); }
        const off = body.sampleOffset[k];
        const ts = off >= 0 && body.sampleBase !== null ? body.sampleBase + off : null;
        zr.push(v);
        cr.push([body.kinds[kind], body.samples[k],
          ts ? new Date(ts * 1000).toISOString().slice(11, 19) + " UTC (" + N.fmtAge(now - ts) + " ago)" : "none in the window"]);
      }
      z.push(zr); custom.push(cr);
    }
    const traces = [{
      type: "heatmap", z, x: labels, y: labels, customdata: custom, colorscale: colours[body.metric] || "YlOrRd",
      reversescale: body.metric !== "bandwidth", hoverongaps: false, colorbar: { title: { text: body.unit } },
      hovertemplate: "<b>%{y} → %{x}</b><br>%{z} " + body.unit + " · %{customdata[0]}<br>%{customdata[1]} sample(s) in the last "
        + N.fmtAge(body.sampleWindowSeconds) + "<br>newest: %{customdata[2]}<extra></extra>",
    }];
    if (n <= 60) {
      const size = n > 30 ? 6 : 11;
      if (inferredXY[0].length) traces.push({ type: "scatter", mode: "markers", name: "inferred", x: inferredXY[0], y: inferredXY[1], hoverinfo: "skip", marker: { symbol: "diamond-open", size, color: "#1d4ed8", line: { width: 2, color: "#1d4ed8" } } });
      if (staleXY[0].length) traces.push({ type: "scatter", mode: "markers", name: "stale", x: staleXY[0], y: staleXY[1], hoverinfo: "skip", marker: { symbol: "square-open", size: size * 1.6, color: "#b91c1c", line: { width: 2, color: "#b91c1c" } } });
    }
    // Separators between zones (thin) and regions (thick), zone names above the columns.
    const shapes = [], annotations = [];
    let start = 0;
    for (let k = 1; k <= n; k++) {
      const a = ord[k - 1], b = k < n ? ord[k] : null;
      const regionChange = b === null || body.regions[a] !== body.regions[b];
      if (b === null || regionChange || body.zones[a] !== body.zones[b]) {
        annotations.push({ x: (start + k - 1) / 2, y: 1, xref: "x", yref: "paper", yanchor: "bottom", showarrow: false,
          text: body.zones[a] || "(no zone)", font: { size: 10, color: "#334155" } });
        start = k;
        if (b !== null) {
          const line = { color: regionChange ? "#111827" : "#64748b", width: regionChange ? 3 : 1 };
          shapes.push({ type: "line", xref: "x", yref: "y", x0: k - 0.5, x1: k - 0.5, y0: -0.5, y1: n - 0.5, line });
          shapes.push({ type: "line", xref: "x", yref: "y", y0: k - 0.5, y1: k - 0.5, x0: -0.5, x1: n - 0.5, line });
        }
      }
    }
    const height = Math.max(420, Math.min(960, 200 + 30 * n));
    const el = document.getElementById("heatmap");
    el.style.height = height + "px";
    Plotly.react(el, traces, {
      height, margin: { l: 150, b: 110, t: 40, r: 10 }, uirevision: "heatmap-" + body.metric,
      xaxis: { type: "category", tickangle: -45, automargin: true }, yaxis: { type: "category", autorange: "reversed", automargin: true },
      shapes, annotations, showlegend: traces.length > 1, legend: { orientation: "h", y: -0.18 },
    }, { responsive: true, displaylogo: false });
    el.dataset.version = body.version;
    if (!el.dataset.clicks) {
      el.dataset.clicks = "1";
      el.on("plotly_click", ev => {
        const p = ev.points && ev.points[0];
        if (p && p.data.type === "heatmap" && p.x !== p.y) location.href = "/links/" + encodeURIComponent(p.y) + "/" + encodeURIComponent(p.x) + "/";
      });
    }
    document.getElementById("heatmap-source").textContent = body.label + " (" + body.unit + "): " + body.source;
    const cards = document.getElementById("topology-cards");
    cards.innerHTML = "";
    cards.appendChild(card("Nodes", n));
    cards.appendChild(card("Snapshot", "v" + body.version + " · " + body.snapshotSource));
    cards.appendChild(card("State", body.stale ? "STALE" : "fresh", body.stale ? "bad" : "ok", body.staleReason));
    cards.appendChild(card("Pairs measured / inferred / stale", counts[1] + " / " + (counts[2] + counts[3]) + " / " + (counts[3] + counts[4]), counts[3] + counts[4] ? "warn" : ""));
    cards.appendChild(card(body.label + " min / max (" + body.unit + ")", N.fmt(body.min) + " / " + N.fmt(body.max)));
    cards.appendChild(card("Newest data", body.dataUntil ? N.fmtAge(Date.now() / 1000 - body.dataUntil) + " ago" : "–", body.stale ? "bad" : ""));
    const banner = document.getElementById("topology-banner");
    banner.innerHTML = "";
    if (body.stale) banner.appendChild(N.el("div", { class: "banner bad" }, "STALE TOPOLOGY (v" + body.version + "): " + body.staleReason + ". The scheduler is scoring with old network data."));
    if (counts[3] + counts[4]) banner.appendChild(N.el("div", { class: "banner warn" }, (counts[3] + counts[4]) + " node pair(s) have stale measurements (dropped and inferred from aggregates)."));
  }

  function missing(body) {
    document.getElementById("heatmap").style.display = "none";
    N.showError("topology-error", (body && body.detail) || "No NetworkTopology yet.");
  }

  const heat = N.live(() => "/dashboard/data/heatmap?metric=" + encodeURIComponent(metricSelect.value), 15, drawHeatmap, {
    early: window.netawareEarly && window.netawareEarly.metric === metricSelect.value ? window.netawareEarly.heatmap : null,
    takenAt: b => (b.dataUntil || b.createdAt) * 1000, isStale: b => (b.stale ? b.staleReason : ""), onMissing: missing,
    onError: r => N.showError("topology-error", "Could not load the heatmap: HTTP " + r.status + " " + ((r.body && (r.body.detail || JSON.stringify(r.body))) || "")),
  });
  metricSelect.addEventListener("change", () => heat.refresh());
  // Ages in the hover text move on even when the data does not.
  setInterval(() => { if (lastHeat && !document.hidden) drawHeatmap(lastHeat); }, 60000);

  // --- zones ----------------------------------------------------------------------------------
  function drawZones(body) {
    lastZones = body;
    const zones = body.zones, count = zones.length;
    const pos = {};
    zones.forEach((z, i) => { const a = 2 * Math.PI * i / Math.max(count, 1); pos[z.name] = [Math.cos(a), Math.sin(a)]; });
    const pairs = {};
    body.pairs.forEach(p => {
      if (p.from === p.to) return;
      const key = [p.from, p.to].sort().join("\u0000");
      const e = pairs[key] || (pairs[key] = { a: [p.from, p.to].sort()[0], b: [p.from, p.to].sort()[1], lat: [], loss: [], bw: [], cost: [] });
      if (p.latency !== null) e.lat.push(p.latency);
      if (p.loss !== null) e.loss.push(p.loss);
      if (p.bandwidth !== null) e.bw.push(p.bandwidth);
      if (p.cost !== null && p.cost !== undefined) e.cost.push(p.cost);
    });
    const mean = xs => xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : null;
    const edges = Object.values(pairs).map(e => ({ a: e.a, b: e.b, latency: mean(e.lat), loss: mean(e.loss), bandwidth: e.bw.length ? Math.min(...e.bw) : null, cost: mean(e.cost) }));
    const m = zoneMetric.value;
    const vals = edges.map(e => e[m]).filter(v => v !== null);
    const lo = Math.min(...vals), hi = Math.max(...vals);
    const bws = edges.map(e => e.bandwidth).filter(v => v !== null);
    const bwMax = bws.length ? Math.max(...bws) : 1;
    const palette = ["#15803d", "#65a30d", "#ca8a04", "#ea580c", "#b91c1c"];
    const groups = {};
    edges.forEach(e => {
      const v = e[m];
      const ci = v === null ? -1 : (hi > lo ? Math.min(4, Math.floor(5 * (v - lo) / (hi - lo))) : 0);
      const wi = e.bandwidth === null ? 0 : Math.round(4 * e.bandwidth / bwMax);
      const key = ci + ":" + wi;
      const g = groups[key] || (groups[key] = { ci, wi, x: [], y: [] });
      g.x.push(pos[e.a][0], pos[e.b][0], null); g.y.push(pos[e.a][1], pos[e.b][1], null);
    });
    const traces = Object.values(groups).map(g => ({ type: "scatter", mode: "lines", hoverinfo: "skip", showlegend: false,
      x: g.x, y: g.y, line: { color: g.ci < 0 ? "#cbd5e1" : palette[g.ci], width: 1 + 2 * g.wi, dash: g.ci < 0 ? "dot" : "solid" } }));
    traces.push({ type: "scatter", mode: "markers", name: "links", showlegend: false, x: edges.map(e => (pos[e.a][0] + pos[e.b][0]) / 2),
      y: edges.map(e => (pos[e.a][1] + pos[e.b][1]) / 2), marker: { size: 7, color: "rgba(100,116,139,0.35)" },
      text: edges.map(e => e.a + " ↔ " + e.b + "<br>latency " + N.fmt(e.latency) + " ms · loss " + N.fmt(e.loss) + " % · bandwidth " + N.fmt(e.bandwidth, 0) + " Mbps · cost " + N.fmt(e.cost, 1)),
      hovertemplate: "%{text}<extra></extra>" });
    const regions = [...new Set(zones.map(z => z.region))];
    traces.push({ type: "scatter", mode: "markers+text", name: "zones", showlegend: false, x: zones.map(z => pos[z.name][0]), y: zones.map(z => pos[z.name][1]),
      text: zones.map(z => z.name), textposition: "top center", customdata: zones.map(z => [z.region || "–", z.nodes.length]),
      hovertemplate: "<b>%{text}</b><br>region %{customdata[0]}<br>%{customdata[1]} node(s)<extra></extra>",
      marker: { size: zones.map(z => 14 + 4 * Math.sqrt(z.nodes.length)), color: zones.map(z => regions.indexOf(z.region)), colorscale: "Portland", line: { width: 1, color: "#1e293b" } } });
    const el = document.getElementById("zone-graph");
    Plotly.react(el, traces, { margin: { l: 10, r: 10, t: 30, b: 10 }, uirevision: "zones", hovermode: "closest",
      xaxis: { visible: false, range: [-1.4, 1.4] }, yaxis: { visible: false, range: [-1.3, 1.3], scaleanchor: "x" },
      annotations: [{ xref: "paper", yref: "paper", x: 0, y: 1.06, showarrow: false, align: "left", font: { size: 11, color: "#475569" },
        text: m + ": green " + N.fmt(lo) + " … red " + N.fmt(hi) + (m === "loss" ? " %" : " ms") }] },
      { responsive: true, displaylogo: false });
    el.dataset.edges = edges.length;
    const tbody = document.querySelector("#zone-table tbody");
    tbody.innerHTML = "";
    body.pairs.forEach(p => {
      const tr = document.createElement("tr");
      [[p.from], [p.to], [p.pairs], [N.fmt(p.latency)], [N.fmt(p.bandwidth, 0)], [N.fmt(p.loss)],
        [p.inferred, p.inferred ? "warn" : ""], [p.stale, p.stale ? "bad" : ""], [p.cost === null || p.cost === undefined ? "no path" : N.fmt(p.cost, 1)]]
        .forEach(([t, cls]) => tr.appendChild(N.el("td", cls ? { class: cls } : {}, String(t))));
      tbody.appendChild(tr);
    });
  }
  N.live("/dashboard/data/zones", 30, drawZones, { onMissing: () => {}, quiet: true });
  zoneMetric.addEventListener("change", () => { if (lastZones) drawZones(lastZones); });

  // --- nodes ----------------------------------------------------------------------------------
  N.live("/api/nodes/", 30, list => {
    const rows = Array.isArray(list) ? list : (list.results || []);
    const tbody = document.querySelector("#node-table tbody");
    tbody.innerHTML = "";
    rows.forEach(n => {
      const tr = document.createElement("tr");
      [[n.name], [n.zone || "–"], [n.region || "–"], [n.address || ""], n.ready ? ["yes", "ok"] : ["NOT READY", "bad"],
        [n.allocatable_cpu_millicores ?? ""], [n.allocatable_memory_bytes ? (n.allocatable_memory_bytes / 2 ** 30).toFixed(1) + " GiB" : ""], [n.source || ""]]
        .forEach(([t, cls]) => tr.appendChild(N.el("td", cls ? { class: cls } : {}, String(t))));
      tbody.appendChild(tr);
    });
    if (!rows.length) { const tr = document.createElement("tr"); tr.appendChild(N.el("td", { colspan: 8 }, "No nodes known yet.")); tbody.appendChild(tr); }
  }, { quiet: true });
})();

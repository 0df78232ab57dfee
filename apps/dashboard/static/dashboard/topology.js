// Topology page: live heatmap (metric/quantile selectable, zone and region separators, rich hover,
// click -> link page, drag-to-zoom kept across refreshes), zone graph and table, nodes. The heatmap
// is drawn by hand on a <canvas> (one pixel per cell, scaled up) so that the page's first view does
// not wait for plotly; plotly is loaded after it, for the zone graph below the fold only.
(function () {
  const N = window.netaware;
  const metricSelect = document.getElementById("metric");
  const zoneMetric = document.getElementById("zone-metric");
  const heatEl = document.getElementById("heatmap");
  // Plotly's YlOrRd (reversed: low latency/loss is pale) and Viridis, as low -> high stops.
  const SCALES = {
    YlOrRd: ["#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"],
    Viridis: ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"],
  };
  const WIDE = { l: 150, t: 40, r: 96, b: 110 }, NARROW = { l: 84, t: 36, r: 84, b: 72 };
  let MARGIN = WIDE;
  let lastHeat = null, lastZones = null;
  // The view is kept across refreshes (and metric changes): inclusive row/column index ranges.
  // `cursor` is the keyboard's cell (display order).
  let view = null, grid = null, drag = null, cursor = null;
  // The page's state in its address: metric, zoom (node names), worst-pairs sort/order/limit.
  const params = new URLSearchParams(location.search);
  let pendingZoom = params.get("zoom");
  function saveState() {
    const q = new URLSearchParams(location.search);
    q.set("metric", metricSelect.value);
    const zoomed = grid && view && !(view.c0 === 0 && view.r0 === 0 && view.c1 === grid.n - 1 && view.r1 === grid.n - 1);
    if (zoomed) q.set("zoom", [grid.labels[view.r0], grid.labels[view.r1], grid.labels[view.c0], grid.labels[view.c1]].join(","));
    else if (grid) q.delete("zoom");
    q.set("sort", worst.sort); q.set("order", worst.order); q.set("top", worst.limit);
    history.replaceState(null, "", location.pathname + "?" + q.toString());
  }

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

  function rgb(hex) { return [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16)); }
  const STOPS = Object.fromEntries(Object.entries(SCALES).map(([k, v]) => [k, v.map(rgb)]));
  function colourAt(stops, t) {
    const x = Math.max(0, Math.min(1, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    return stops[i].map((c, j) => Math.round(c + (stops[i + 1][j] - c) * f));
  }

  // The grid in display order, one RGBA pixel per cell, and the zone runs for separators and labels.
  function buildGrid(body) {
    const n = body.nodes.length, ord = order(body);
    const stops = STOPS[body.metric === "bandwidth" ? "Viridis" : "YlOrRd"];
    let lo = body.min, hi = body.max;
    if (lo === null || lo === undefined || hi === null || hi === undefined) {
      lo = Infinity; hi = -Infinity;
      body.values.forEach(v => { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    }
    // Colour by rank (the empirical CDF, ties at their middle rank): a handful of far links take
    // the dark end of the scale instead of squeezing every other value into its pale end.
    const sorted = body.values.filter(v => v !== null && v !== undefined).sort((a, b) => a - b);
    const last = sorted.length - 1;
    const rank = v => {
      if (last < 1) return 0.5;
      let a = 0, b = sorted.length;
      while (a < b) { const m = (a + b) >> 1; if (sorted[m] < v) a = m + 1; else b = m; }
      const first = a; b = sorted.length;
      while (a < b) { const m = (a + b) >> 1; if (sorted[m] <= v) a = m + 1; else b = m; }
      return (first + a - 1) / 2 / last;
    };
    const ticks = last < 0 ? [] : [[0, "min"], [0.25, "p25"], [0.5, "p50"], [0.75, "p75"], [0.9, "p90"], [0.99, "p99"], [1, "max"]]
      .map(([q, name]) => { const v = sorted[Math.round(q * last)]; return { q, name, value: v, t: rank(v) }; });
    const lut = Array.from({ length: 256 }, (_, i) => colourAt(stops, i / 255));  // no per-cell interpolation
    const image = new ImageData(Math.max(n, 1), Math.max(n, 1));
    const counts = { 1: 0, 2: 0, 3: 0, 4: 0 };
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) {
        const k = ord[r] * n + ord[c], v = body.values[k], kind = body.kind[k], p = 4 * (r * n + c);
        if (kind) counts[kind] += 1;
        if (v === null || v === undefined) { image.data.set([241, 245, 249, 255], p); continue; }
        const col = lut[Math.max(0, Math.min(255, Math.round(255 * rank(v))))];
        image.data[p] = col[0]; image.data[p + 1] = col[1]; image.data[p + 2] = col[2]; image.data[p + 3] = 255;
      }
    }
    const runs = [];
    let start = 0;
    for (let k = 1; k <= n; k++) {
      const a = ord[k - 1], b = k < n ? ord[k] : null;
      const regionEnd = b === null || body.regions[a] !== body.regions[b];
      if (regionEnd || body.zones[a] !== body.zones[b]) { runs.push({ from: start, to: k - 1, zone: body.zones[a] || "(no zone)", regionEnd }); start = k; }
    }
    const pixels = document.createElement("canvas");
    pixels.width = image.width; pixels.height = image.height;
    pixels.getContext("2d").putImageData(image, 0, 0);
    return { body, n, ord, labels: ord.map(i => body.nodes[i]), lo, hi, stops, pixels, runs, counts, ticks, rank, lut };
  }

  function geometry() {
    MARGIN = heatEl.clientWidth < 700 ? NARROW : WIDE;
    const w = heatEl.clientWidth, h = heatEl.clientHeight;
    const pw = Math.max(50, w - MARGIN.l - MARGIN.r), ph = Math.max(50, h - MARGIN.t - MARGIN.b);
    const cols = view.c1 - view.c0 + 1, rows = view.r1 - view.r0 + 1;
    return { w, h, pw, ph, cw: pw / cols, ch: ph / rows };
  }

  function paint() {
    if (!grid) return;
    const canvas = heatEl.querySelector("canvas.heat"), dpr = window.devicePixelRatio || 1;
    const g = geometry();
    if (canvas.width !== Math.round(g.w * dpr) || canvas.height !== Math.round(g.h * dpr)) {
      canvas.width = Math.round(g.w * dpr); canvas.height = Math.round(g.h * dpr);
      canvas.style.width = g.w + "px"; canvas.style.height = g.h + "px";
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, g.w, g.h);
    ctx.imageSmoothingEnabled = false;
    const cols = view.c1 - view.c0 + 1, rows = view.r1 - view.r0 + 1;
    ctx.drawImage(grid.pixels, view.c0, view.r0, cols, rows, MARGIN.l, MARGIN.t, g.pw, g.ph);
    const X = c => MARGIN.l + (c - view.c0) * g.cw, Y = r => MARGIN.t + (r - view.r0) * g.ch;
    // Inferred (blue diamond) and stale (red square) marks once cells are big enough to carry them.
    if (Math.min(g.cw, g.ch) >= 8) {
      const body = grid.body, n = grid.n;
      ctx.lineWidth = 2;
      for (let r = view.r0; r <= view.r1; r++) for (let c = view.c0; c <= view.c1; c++) {
        const kind = body.kind[grid.ord[r] * n + grid.ord[c]];
        if (!kind || kind === 1) continue;
        const cx = X(c + 0.5), cy = Y(r + 0.5), s = Math.min(8, Math.min(g.cw, g.ch) * 0.3);
        if (kind === 2 || kind === 3) {
          ctx.strokeStyle = "#1d4ed8"; ctx.beginPath();
          ctx.moveTo(cx, cy - s); ctx.lineTo(cx + s, cy); ctx.lineTo(cx, cy + s); ctx.lineTo(cx - s, cy); ctx.closePath(); ctx.stroke();
        }
        if (kind === 3 || kind === 4) { ctx.strokeStyle = "#b91c1c"; ctx.strokeRect(cx - 1.5 * s, cy - 1.5 * s, 3 * s, 3 * s); }
      }
    }
    // Zone separators (thin) and region separators (thick), zone names above the columns.
    ctx.save();
    ctx.beginPath(); ctx.rect(MARGIN.l, 0, g.pw, g.h); ctx.clip();
    ctx.font = "10px sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "bottom"; ctx.fillStyle = "#334155";
    grid.runs.forEach(run => {
      const a = Math.max(run.from, view.c0), b = Math.min(run.to, view.c1);
      if (a <= b) ctx.fillText(run.zone, (X(a) + X(b + 1)) / 2, MARGIN.t - 4);
    });
    ctx.restore();
    grid.runs.slice(0, -1).forEach(run => {
      const k = run.to + 1;
      ctx.strokeStyle = run.regionEnd ? "#111827" : "#64748b"; ctx.lineWidth = run.regionEnd ? 3 : 1;
      ctx.beginPath();
      if (k > view.c0 && k <= view.c1) { ctx.moveTo(X(k), MARGIN.t); ctx.lineTo(X(k), MARGIN.t + g.ph); }
      if (k > view.r0 && k <= view.r1) { ctx.moveTo(MARGIN.l, Y(k)); ctx.lineTo(MARGIN.l + g.pw, Y(k)); }
      ctx.stroke();
    });
    // Node names: every one that fits (rows at the left, columns slanted below).
    ctx.fillStyle = "#1e293b"; ctx.font = (MARGIN === NARROW ? "9px" : "11px") + " sans-serif";
    const rowStep = Math.max(1, Math.ceil(12 / g.ch)), colStep = Math.max(1, Math.ceil(12 / g.cw));
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (let r = view.r0; r <= view.r1; r += rowStep) ctx.fillText(grid.labels[r], MARGIN.l - 4, Y(r + 0.5), MARGIN.l - 8);
    for (let c = view.c0; c <= view.c1; c += colStep) {
      ctx.save(); ctx.translate(X(c + 0.5), MARGIN.t + g.ph + 4); ctx.rotate(-Math.PI / 4);
      ctx.fillText(grid.labels[c], 0, 0, MARGIN.b * 1.3); ctx.restore();
    }
    // Colour bar.
    const bx = MARGIN.l + g.pw + 14, bh = Math.min(g.ph, 300);
    for (let i = 0; i < bh; i++) { const col = colourAt(grid.stops, 1 - i / bh); ctx.fillStyle = "rgb(" + col.join(",") + ")"; ctx.fillRect(bx, MARGIN.t + i, 14, 1); }
    ctx.fillStyle = "#1e293b"; ctx.textAlign = "left"; ctx.font = "10px sans-serif"; ctx.textBaseline = "middle";
    ctx.fillText(grid.body.unit + " (by rank)", bx - 4, MARGIN.t - 12);
    let lastY = Infinity;
    grid.ticks.slice().reverse().forEach(tick => {  // top (max) down; a tick that would overlap the one above is left out
      const y = MARGIN.t + (1 - tick.t) * bh;
      if (tick.name !== "min" && tick.name !== "max" && (Math.abs(y - lastY) < 11 || Math.abs(y - (MARGIN.t + bh)) < 11)) return;
      ctx.fillRect(bx + 14, y - 0.5, 4, 1);
      ctx.fillText(tick.name + " " + N.fmt(tick.value, tick.value >= 100 ? 0 : 1), bx + 20, Math.max(MARGIN.t, Math.min(MARGIN.t + bh, y)));
      lastY = y;
    });
    if (cursor && document.activeElement === canvas) {
      ctx.strokeStyle = "#111827"; ctx.lineWidth = 2;
      ctx.strokeRect(X(cursor.c) + 1, Y(cursor.r) + 1, Math.max(2, g.cw - 2), Math.max(2, g.ch - 2));
    }
    if (drag && drag.moved) {
      ctx.fillStyle = "rgba(29,78,216,0.12)"; ctx.strokeStyle = "#1d4ed8"; ctx.lineWidth = 1;
      const x = Math.min(drag.x0, drag.x1), y = Math.min(drag.y0, drag.y1), w = Math.abs(drag.x1 - drag.x0), h = Math.abs(drag.y1 - drag.y0);
      ctx.fillRect(x, y, w, h); ctx.strokeRect(x, y, w, h);
    }
    heatEl.querySelector(".heat-reset").hidden = view.c0 === 0 && view.r0 === 0 && view.c1 === grid.n - 1 && view.r1 === grid.n - 1;
  }

  // Pixel (relative to the canvas) -> {r, c} in display order, or null outside the cells.
  function cellAt(x, y) {
    const g = geometry();
    if (x < MARGIN.l || y < MARGIN.t || x >= MARGIN.l + g.pw || y >= MARGIN.t + g.ph) return null;
    return { c: Math.min(view.c1, view.c0 + Math.floor((x - MARGIN.l) / g.cw)), r: Math.min(view.r1, view.r0 + Math.floor((y - MARGIN.t) / g.ch)) };
  }

  function hover(ev) {
    const tip = heatEl.querySelector(".heat-tip"), rect = ev.currentTarget.getBoundingClientRect();
    const cell = grid && !drag ? cellAt(ev.clientX - rect.left, ev.clientY - rect.top) : null;
    const body = grid && grid.body, k = cell ? grid.ord[cell.r] * grid.n + grid.ord[cell.c] : -1;
    if (!cell || body.values[k] === null || body.values[k] === undefined) { tip.hidden = true; heatEl.style.cursor = cell ? "crosshair" : ""; return; }
    showTip(cell, ev.clientX - rect.left + 14, ev.clientY - rect.top + 14);
    heatEl.style.cursor = cell.r !== cell.c ? "pointer" : "crosshair";
  }

  // The lines of a cell's tooltip (and of what a screen reader hears for the keyboard's cell).
  function describe(cell) {
    const body = grid.body, k = grid.ord[cell.r] * grid.n + grid.ord[cell.c];
    const pair = grid.labels[cell.r] + " → " + grid.labels[cell.c];
    if (cell.r === cell.c) return [pair, "the node itself"];
    if (body.values[k] === null || body.values[k] === undefined) return [pair, "no " + body.label + " value (" + body.kinds[body.kind[k]] + ")"];
    const off = body.sampleOffset[k], ts = off >= 0 && body.sampleBase !== null ? body.sampleBase + off : null;
    return [pair, N.fmt(body.values[k], 3) + " " + body.unit + " · " + body.label + " " + body.kinds[body.kind[k]],
      body.samples[k] + " " + body.label + " sample(s) in the last " + N.fmtAge(body.sampleWindowSeconds),
      "newest: " + (ts ? new Date(ts * 1000).toISOString().slice(11, 19) + " UTC (" + N.fmtAge(Date.now() / 1000 - ts) + " ago)" : "none in the window")];
  }

  function showTip(cell, x, y) {
    const tip = heatEl.querySelector(".heat-tip"), rect = heatEl.getBoundingClientRect();
    const [head, ...lines] = describe(cell);
    tip.innerHTML = "";
    tip.appendChild(N.el("b", {}, head));
    lines.forEach(line => tip.appendChild(N.el("div", {}, line)));
    tip.hidden = false;
    tip.style.left = Math.max(0, Math.min(x, rect.width - tip.offsetWidth - 4)) + "px"; tip.style.top = Math.max(0, Math.min(y, rect.height - tip.offsetHeight - 4)) + "px";
  }

  function openLink(r, c) {
    location.href = "/links/" + encodeURIComponent(grid.labels[r]) + "/" + encodeURIComponent(grid.labels[c]) + "/";
  }

  // Keyboard: the map is one tab stop; arrows move a cell cursor (PageUp/PageDown, Home/End jump),
  // Enter opens the link, Escape hides the tooltip. The cell is announced through a live region.
  function onKey(ev) {
    if (!grid) return;
    const keys = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1], PageUp: [-10, 0], PageDown: [10, 0] };
    if (!cursor) cursor = { r: view.r0, c: Math.min(view.c1, view.c0 + 1) };
    if (keys[ev.key]) {
      const [dr, dc] = keys[ev.key];
      cursor = { r: Math.max(view.r0, Math.min(view.r1, cursor.r + dr)), c: Math.max(view.c0, Math.min(view.c1, cursor.c + dc)) };
    } else if (ev.key === "Home") cursor = { r: cursor.r, c: view.c0 };
    else if (ev.key === "End") cursor = { r: cursor.r, c: view.c1 };
    else if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); if (cursor.r !== cursor.c) openLink(cursor.r, cursor.c); return; }
    else if (ev.key === "Escape") { heatEl.querySelector(".heat-tip").hidden = true; return; }
    else return;
    ev.preventDefault();
    paint();
    const g = geometry();
    showTip(cursor, MARGIN.l + (cursor.c - view.c0 + 1) * g.cw + 6, MARGIN.t + (cursor.r - view.r0 + 1) * g.ch + 6);
    document.getElementById("heatmap-live").textContent = describe(cursor).join(", ");
  }

  function setupCanvas() {
    heatEl.innerHTML = "";
    const canvas = N.el("canvas", { class: "heat", role: "application", tabindex: "0", "aria-roledescription": "heatmap",
      "aria-label": "Heatmap of node pairs: arrow keys choose a cell, Enter opens the link's history" });
    const reset = N.el("button", { type: "button", class: "heat-reset", title: "Show every node again" }, "Reset zoom");
    canvas.addEventListener("keydown", onKey);
    canvas.addEventListener("focus", () => paint());
    canvas.addEventListener("blur", () => { heatEl.querySelector(".heat-tip").hidden = true; paint(); });
    heatEl.append(canvas, reset, N.el("div", { class: "heat-tip", hidden: "" }));
    const pos = ev => { const rect = canvas.getBoundingClientRect(); return [ev.clientX - rect.left, ev.clientY - rect.top]; };
    canvas.addEventListener("mousedown", ev => { const [x, y] = pos(ev); if (cellAt(x, y)) drag = { x0: x, y0: y, x1: x, y1: y, moved: false }; });
    canvas.addEventListener("mousemove", ev => {
      if (drag) { [drag.x1, drag.y1] = pos(ev); drag.moved = drag.moved || Math.abs(drag.x1 - drag.x0) + Math.abs(drag.y1 - drag.y0) > 4; if (drag.moved) paint(); }
      hover(ev);
    });
    canvas.addEventListener("mouseleave", () => { heatEl.querySelector(".heat-tip").hidden = true; });
    window.addEventListener("mouseup", ev => {
      if (!drag) return;
      const d = drag; drag = null;
      const [x, y] = pos(ev), g = geometry();
      const a = cellAt(d.x0, d.y0), b = cellAt(Math.max(MARGIN.l, Math.min(x, MARGIN.l + g.pw - 1)), Math.max(MARGIN.t, Math.min(y, MARGIN.t + g.ph - 1)));
      if (d.moved && a && b) {
        view = { c0: Math.min(a.c, b.c), c1: Math.max(a.c, b.c), r0: Math.min(a.r, b.r), r1: Math.max(a.r, b.r) };
        cursor = null;
        paint(); saveState();
      } else if (!d.moved && a && a.r !== a.c) {
        openLink(a.r, a.c);
      } else paint();
    });
    const full = () => { view = { c0: 0, c1: grid.n - 1, r0: 0, r1: grid.n - 1 }; cursor = null; paint(); saveState(); };
    reset.addEventListener("click", full);
    window.addEventListener("resize", paint);
    // What the browser test reads: the values in display order, the labels and the visible range.
    heatEl.netawareHeat = () => ({
      z: grid.labels.map((_, r) => grid.labels.map((_, c) => grid.body.values[grid.ord[r] * grid.n + grid.ord[c]])),
      x: grid.labels, metric: grid.body.metric, range: [view.c0 - 0.5, view.c1 + 0.5], yrange: [view.r0 - 0.5, view.r1 + 0.5],
      plot: { left: MARGIN.l, top: MARGIN.t, ...geometry() }, ticks: grid.ticks, cursor,
      // Position on the colour scale (0..1) of every cell, in display order (null: no value).
      t: grid.labels.map((_, r) => grid.labels.map((_, c) => { const v = grid.body.values[grid.ord[r] * grid.n + grid.ord[c]]; return v === null ? null : grid.rank(v); })),
    });
  }

  function drawHeatmap(body) {
    lastHeat = body;
    N.showError("topology-error", "");
    heatEl.style.display = "";
    if (!heatEl.querySelector("canvas.heat")) setupCanvas();
    grid = buildGrid(body);
    const n = grid.n, counts = grid.counts;
    if (!view || view.c1 >= n || view.r1 >= n) view = { c0: 0, c1: n - 1, r0: 0, r1: n - 1 };
    if (pendingZoom) {  // the zoom from the page address, by node names
      const [r0, r1, c0, c1] = pendingZoom.split(",").map(name => grid.labels.indexOf(name));
      if (Math.min(r0, r1, c0, c1) >= 0) view = { r0: Math.min(r0, r1), r1: Math.max(r0, r1), c0: Math.min(c0, c1), c1: Math.max(c0, c1) };
      pendingZoom = null;
    }
    heatEl.style.height = Math.max(420, Math.min(960, 200 + 30 * n)) + "px";
    paint();
    heatEl.dataset.version = body.version;
    heatEl.dataset.metric = body.metric;
    document.getElementById("heatmap-source").textContent = body.label + " (" + body.unit + "): " + body.source;
    const cards = document.getElementById("topology-cards");
    cards.innerHTML = "";
    cards.appendChild(card("Nodes", n));
    cards.appendChild(card("Snapshot", "v" + body.version + " · " + body.snapshotSource));
    cards.appendChild(card("State", body.stale ? "STALE" : "fresh", body.stale ? "bad" : "ok", body.staleReason));
    cards.appendChild(card(body.label + " pairs measured / inferred / stale", counts[1] + " / " + (counts[2] + counts[3]) + " / " + (counts[3] + counts[4]), counts[3] + counts[4] ? "warn" : ""));
    cards.appendChild(card(body.label + " min / max (" + body.unit + ")", N.fmt(body.min) + " / " + N.fmt(body.max)));
    cards.appendChild(card("Newest data", body.dataUntil ? N.fmtAge(Date.now() / 1000 - body.dataUntil) + " ago" : "–", body.stale ? "bad" : ""));
    const banner = document.getElementById("topology-banner");
    banner.innerHTML = "";
    if (body.stale) banner.appendChild(N.el("div", { class: "banner bad" }, "STALE TOPOLOGY (v" + body.version + "): " + body.staleReason + ". The scheduler is scoring with old network data."));
    if (counts[3] + counts[4]) banner.appendChild(N.el("div", { class: "banner warn" }, (counts[3] + counts[4]) + " node pair(s) have stale measurements (dropped and inferred from aggregates)."));
    loadPlotly(); startWorst();
  }

  function missing(body) {
    heatEl.style.display = "none";
    N.showError("topology-error", (body && body.detail) || "No NetworkTopology yet.");
    loadPlotly(); startWorst();
  }

  // Plotly (for the zone graph) is fetched only once the heatmap is on screen (or has said why not).
  let startPlotly;
  const plotlyReady = new Promise(resolve => { startPlotly = resolve; }).then(() => N.plotly());
  function loadPlotly() { startPlotly(); }

  const heat = N.live(() => "/dashboard/data/heatmap?metric=" + encodeURIComponent(metricSelect.value), 15, drawHeatmap, {
    early: window.netawareEarly && window.netawareEarly.metric === metricSelect.value ? window.netawareEarly.heatmap : null,
    takenAt: b => (b.dataUntil || b.createdAt) * 1000, isStale: b => (b.stale ? b.staleReason : ""), onMissing: missing,
    onError: r => { loadPlotly(); startWorst(); N.showError("topology-error", "Could not load the heatmap: HTTP " + r.status + " " + ((r.body && (r.body.detail || JSON.stringify(r.body))) || "")); },
  });
  metricSelect.addEventListener("change", () => { heat.refresh(); saveState(); });
  // The ages on the cards move on even when the data does not (the hover computes its own).
  setInterval(() => { if (lastHeat && !document.hidden) drawHeatmap(lastHeat); }, 60000);

  // --- worst pairs --------------------------------------------------------------------------
  const worstTable = document.getElementById("worst-table"), worstLimit = document.getElementById("worst-limit"),
    worstOrder = document.getElementById("worst-order");
  const worst = { sort: params.get("sort") || metricSelect.value, order: params.get("order") === "best" ? "best" : "worst",
    limit: params.get("top") || worstLimit.value };
  if (![...worstLimit.options].some(o => o.value === worst.limit)) worstLimit.appendChild(N.el("option", { value: worst.limit }, worst.limit));
  worstLimit.value = worst.limit; worstOrder.value = worst.order;
  function drawWorst(body) {
    const tbody = worstTable.querySelector("tbody");
    tbody.innerHTML = "";
    const metric = body.metrics.find(m => m.key === body.sort);
    worstTable.querySelectorAll("th[data-sort]").forEach(th => {
      const m = body.metrics.find(x => x.key === th.dataset.sort);
      const descending = m.higherIsWorse === body.worstFirst;
      if (th.dataset.sort === body.sort) th.setAttribute("aria-sort", descending ? "descending" : "ascending"); else th.removeAttribute("aria-sort");
    });
    document.getElementById("worst-note").textContent = body.rows.length + " of " + body.ranked + " pairs with a " + metric.label +
      " value, " + (body.worstFirst ? "worst" : "best") + " first (snapshot v" + body.version + ")";
    body.rows.forEach(row => {
      const tr = N.el("tr", { "data-pair": row.source + "/" + row.target });
      const td = N.el("td");
      td.appendChild(N.el("a", { href: "/links/" + encodeURIComponent(row.source) + "/" + encodeURIComponent(row.target) + "/" }, row.source + " → " + row.target));
      tr.appendChild(td);
      tr.appendChild(N.el("td", {}, (row.sourceZone || "–") + " → " + (row.targetZone || "–")));
      body.metrics.forEach(m => {
        const kind = row.kinds[m.key], cell = N.el("td", { "data-metric": m.key, "data-kind": kind, title: m.label + ": " + kind }, N.fmt(row.values[m.key], m.key === "bandwidth" ? 0 : 2));
        if (kind !== "measured" && row.values[m.key] !== null) {
          cell.appendChild(N.el("span", { class: "legend-mark inferred", "aria-hidden": "true" }, " ◆"));
          cell.appendChild(N.el("span", { class: "visually-hidden" }, " (" + kind + ")"));
        }
        if (m.key === body.sort) cell.classList.add("sorted");
        tr.appendChild(cell);
      });
      tbody.appendChild(tr);
    });
    if (!body.rows.length) { const tr = N.el("tr"); tr.appendChild(N.el("td", { colspan: 2 + body.metrics.length }, "No pair has a value for this metric yet.")); tbody.appendChild(tr); }
  }
  // Started once the heatmap is drawn (or has said why not): ranking needs every metric's map, which
  // must not compete with the first view's data for the server's CPU.
  let worstLive = null;
  const worstRefresh = () => { if (worstLive) worstLive.refresh(); else startWorst(); };
  function startWorst() {
    if (worstLive) return;
    worstLive = N.live(() => "/dashboard/data/pairs?sort=" + encodeURIComponent(worst.sort) + "&order=" + worst.order + "&limit=" + encodeURIComponent(worst.limit),
      30, drawWorst, { quiet: true, onMissing: () => {} });
  }
  worstTable.querySelectorAll("button.sort").forEach(btn => btn.addEventListener("click", () => {
    if (worst.sort === btn.dataset.sort) worst.order = worst.order === "worst" ? "best" : "worst"; else { worst.sort = btn.dataset.sort; worst.order = "worst"; }
    worstOrder.value = worst.order; saveState(); worstRefresh();
  }));
  worstLimit.addEventListener("change", () => { worst.limit = worstLimit.value; saveState(); worstRefresh(); });
  worstOrder.addEventListener("change", () => { worst.order = worstOrder.value; saveState(); worstRefresh(); });

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
    plotlyReady.then(() => Plotly.react(el, traces, { margin: { l: 10, r: 10, t: 30, b: 10 }, uirevision: "zones", hovermode: "closest",
      xaxis: { visible: false, range: [-1.4, 1.4] }, yaxis: { visible: false, range: [-1.3, 1.3], scaleanchor: "x" },
      annotations: [{ xref: "paper", yref: "paper", x: 0, y: 1.06, showarrow: false, align: "left", font: { size: 11, color: "#475569" },
        text: m + ": green " + N.fmt(lo) + " … red " + N.fmt(hi) + (m === "loss" ? " %" : " ms") }] },
      { responsive: true, displaylogo: false })).then(() => { el.dataset.edges = edges.length; }, e => console.error(e));
    const tbody = document.querySelector("#zone-table tbody");
    tbody.innerHTML = "";
    body.pairs.forEach(p => {
      const tr = document.createElement("tr");
      [p.from, p.to].forEach(z => { const td = N.el("td"); td.appendChild(N.el("a", { href: "/zones/" + encodeURIComponent(z) + "/" }, z)); tr.appendChild(td); });
      [[p.pairs], [N.fmt(p.latency)], [N.fmt(p.bandwidth, 0)], [N.fmt(p.loss)],
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
      const name = N.el("td"), zone = N.el("td");
      name.appendChild(N.el("a", { href: "/nodes/" + encodeURIComponent(n.name) + "/" }, n.name));
      if (n.zone) zone.appendChild(N.el("a", { href: "/zones/" + encodeURIComponent(n.zone) + "/" }, n.zone)); else zone.textContent = "–";
      tr.append(name, zone);
      [[n.region || "–"], [n.address || ""], n.ready ? ["yes", "ok"] : ["NOT READY", "bad"],
        [n.allocatable_cpu_millicores ?? ""], [n.allocatable_memory_bytes ? (n.allocatable_memory_bytes / 2 ** 30).toFixed(1) + " GiB" : ""], [n.source || ""]]
        .forEach(([t, cls]) => tr.appendChild(N.el("td", cls ? { class: cls } : {}, String(t))));
      tbody.appendChild(tr);
    });
    if (!rows.length) { const tr = document.createElement("tr"); tr.appendChild(N.el("td", { colspan: 8 }, "No nodes known yet.")); tbody.appendChild(tr); }
  }, { quiet: true });
})();

// One link's history: p50/p90/p99 RTT, loss and bandwidth over a chosen range, live.
(function () {
  const N = window.netaware;
  const source = JSON.parse(document.getElementById("link-source").textContent);
  const target = JSON.parse(document.getElementById("link-target").textContent);
  const range = document.getElementById("range"), from = document.getElementById("range-from"), to = document.getElementById("range-to");
  // A preset ends now; a custom range is from/to (UTC, the inputs' local-time fields read as UTC).
  const custom = () => range.value === "custom" && from.value;
  const query = () => custom() ? "from=" + encodeURIComponent(from.value + "Z") + (to.value ? "&to=" + encodeURIComponent(to.value + "Z") : "")
    : "range=" + range.value;
  const url = () => "/dashboard/data/links/" + encodeURIComponent(source) + "/" + encodeURIComponent(target) + "?" + query();
  const times = ts => ts.map(t => new Date(t * 1000));
  const COLOURS = { bind: "#2563eb", stale: "#b91c1c" };
  function chart(id, body, names, unit, title) {
    const traces = [];
    names.forEach(([series, label, colour]) => {
      const raw = body.series[series], hourly = body.hourly[series];
      if (raw.t.length) traces.push({ type: "scatter", mode: raw.t.length > 200 ? "lines" : "lines+markers", name: label, x: times(raw.t), y: raw.v, line: { color: colour } });
      if (hourly.t.length) traces.push({ type: "scatter", mode: "lines", name: label + " (hourly mean)", x: times(hourly.t), y: hourly.v, line: { color: colour, dash: "dot" } });
    });
    const events = body.events || [];
    const shapes = events.map(e => ({ type: "line", xref: "x", yref: "paper", x0: new Date(e.t * 1000), x1: new Date(e.t * 1000), y0: 0, y1: 1,
      line: { color: COLOURS[e.kind] || "#64748b", width: 1, dash: "dot" } }));
    const annotations = events.map(e => ({ xref: "x", yref: "paper", x: new Date(e.t * 1000), y: 1, yanchor: "bottom", showarrow: false,
      text: e.kind === "bind" ? "▼" : "!", font: { size: 10, color: COLOURS[e.kind] || "#64748b" }, hovertext: e.text }));
    if (!traces.length) annotations.push({ xref: "paper", yref: "paper", x: 0.5, y: 0.5, showarrow: false, font: { size: 14, color: "#5b6577" },
      text: "No stored " + title.toLowerCase() + " sample in this range" });
    const el = document.getElementById(id);
    el.dataset.points = traces.reduce((s, t) => s + t.x.length, 0);
    el.dataset.events = events.length;
    el.dataset.empty = traces.length ? "false" : "true";
    N.plotly().then(() => Plotly.react(el, traces, { title: { text: title + " (" + unit + ")", font: { size: 14 }, x: 0, xanchor: "left" },
      margin: { t: 50, l: 60, r: 10, b: 40 }, uirevision: id + query(), yaxis: { title: { text: unit }, rangemode: "tozero" },
      xaxis: { type: "date", range: [new Date(body.since * 1000), new Date(body.until * 1000)] }, legend: { orientation: "h", y: 1.12, x: 1, xanchor: "right" },
      shapes, annotations }, { responsive: true, displaylogo: false }));
  }
  function draw(body) {
    document.getElementById("link-points").textContent = body.points + " point(s)";
    N.showError("link-error", body.points ? "" : "No stored sample for this pair in this range.");
    chart("link-latency", body, [["rtt_p50", "RTT p50", "#16a34a"], ["rtt_p90", "RTT p90", "#ca8a04"], ["rtt_p99", "RTT p99", "#b91c1c"]], "ms", "Round-trip time");
    chart("link-loss", body, [["loss_ratio", "loss", "#7c3aed"]], "%", "Loss");
    chart("link-bandwidth", body, [["bandwidth_bps", "bandwidth", "#2563eb"]], "Mbps", "Bandwidth");
  }
  const live = N.live(url, 30, draw, { takenAt: b => b.until * 1000,
    onError: r => N.showError("link-error", "Could not load the link: HTTP " + r.status + " " + JSON.stringify(r.body)) });
  // The range is in the page address, so a reload or a shared link shows the same range.
  function apply() {
    const q = new URLSearchParams(location.search);
    ["range", "from", "to"].forEach(k => q.delete(k));
    new URLSearchParams(query()).forEach((v, k) => q.set(k, v));
    history.replaceState(null, "", location.pathname + "?" + q.toString());
    N.showError("link-error", "");
    live.refresh();
  }
  range.addEventListener("change", () => { if (range.value !== "custom") apply(); else from.focus(); });
  document.getElementById("range-form").addEventListener("submit", ev => { ev.preventDefault(); if (from.value && range.value !== "custom") range.value = "custom"; apply(); });
})();

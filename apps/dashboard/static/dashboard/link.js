// One link's history: p50/p90/p99 RTT, loss and bandwidth over a chosen range, live.
(function () {
  const N = window.netaware;
  const source = JSON.parse(document.getElementById("link-source").textContent);
  const target = JSON.parse(document.getElementById("link-target").textContent);
  const range = document.getElementById("range");
  const url = () => "/dashboard/data/links/" + encodeURIComponent(source) + "/" + encodeURIComponent(target) + "?range=" + range.value;
  const times = ts => ts.map(t => new Date(t * 1000));
  function chart(id, body, names, unit) {
    const traces = [];
    names.forEach(([series, label, colour]) => {
      const raw = body.series[series], hourly = body.hourly[series];
      if (raw.t.length) traces.push({ type: "scatter", mode: raw.t.length > 200 ? "lines" : "lines+markers", name: label, x: times(raw.t), y: raw.v, line: { color: colour } });
      if (hourly.t.length) traces.push({ type: "scatter", mode: "lines", name: label + " (hourly mean)", x: times(hourly.t), y: hourly.v, line: { color: colour, dash: "dot" } });
    });
    const el = document.getElementById(id);
    N.plotly().then(() => Plotly.react(el, traces, { margin: { t: 20, l: 60, r: 10, b: 40 }, uirevision: id + range.value, yaxis: { title: { text: unit }, rangemode: "tozero" },
      xaxis: { type: "date", range: [new Date(body.since * 1000), new Date(body.until * 1000)] }, legend: { orientation: "h", y: 1.15 } },
      { responsive: true, displaylogo: false }));
    el.dataset.points = traces.reduce((s, t) => s + t.x.length, 0);
  }
  function draw(body) {
    document.getElementById("link-points").textContent = body.points + " point(s)";
    N.showError("link-error", body.points ? "" : "No stored sample for this pair in this range.");
    chart("link-latency", body, [["rtt_p50", "RTT p50", "#16a34a"], ["rtt_p90", "RTT p90", "#ca8a04"], ["rtt_p99", "RTT p99", "#b91c1c"]], "ms");
    chart("link-loss", body, [["loss_ratio", "loss", "#7c3aed"]], "%");
    chart("link-bandwidth", body, [["bandwidth_bps", "bandwidth", "#2563eb"]], "Mbps");
  }
  const live = N.live(url, 30, draw, { takenAt: b => b.until * 1000,
    onError: r => N.showError("link-error", "Could not load the link: HTTP " + r.status + " " + JSON.stringify(r.body)) });
  // The range is in the page address, so a reload or a shared link shows the same range.
  range.addEventListener("change", () => {
    const q = new URLSearchParams(location.search); q.set("range", range.value);
    history.replaceState(null, "", location.pathname + "?" + q.toString());
    live.refresh();
  });
})();

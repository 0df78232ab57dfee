// Helpers shared by the dashboard pages: JSON fetches that say plainly what went wrong, CSRF for
// POSTs, and a poller that keeps a view live (If-None-Match, paused while the tab is hidden) and
// shows when its data was taken, turning red when it is stale or the server stops answering.
window.netaware = (function () {
  function cookie(name) {
    const m = document.cookie.match("(^|;)\\s*" + name + "=([^;]*)");
    return m ? decodeURIComponent(m[2]) : "";
  }
  async function request(url, options, pending) {
    let response;
    try {
      response = await (pending || fetch(url, Object.assign({ headers: { Accept: "application/json" }, credentials: "same-origin" }, options || {})));
    } catch (e) {
      return { ok: false, status: 0, body: { detail: "server unreachable: " + e.message } };
    }
    if (response.status === 304) return { ok: true, status: 304, body: null, etag: response.headers.get("ETag") };
    const text = await response.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = { detail: text.slice(0, 200) }; }
    if (response.status === 401) loggedOut();
    return { ok: response.ok, status: response.status, body, etag: response.headers.get("ETag") };
  }
  function loggedOut() {
    const el = document.getElementById("live-status");
    if (!el) return;
    el.hidden = false; el.className = "live-status bad";
    el.innerHTML = 'Your session ended. <a href="/login/?next=' + encodeURIComponent(location.pathname + location.search) + '">Log in again</a> to keep this page live.';
  }
  function fmtAge(seconds) {
    if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "–";
    seconds = Math.max(0, Math.round(seconds));
    if (seconds < 90) return seconds + " s";
    if (seconds < 5400) return Math.round(seconds / 60) + " min";
    if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
    return (seconds / 86400).toFixed(1) + " d";
  }
  let plotlyLoading = null;
  const api = {
    // Plotly (~0.5 MB) is fetched only when a page first draws a chart, from the URL its template
    // put in <body data-plotly>; pages without charts never name it.
    plotly() {
      if (window.Plotly) return Promise.resolve(window.Plotly);
      if (!plotlyLoading) {
        plotlyLoading = new Promise((resolve, reject) => {
          const s = document.createElement("script");
          s.src = document.body.dataset.plotly;
          s.onload = () => resolve(window.Plotly);
          s.onerror = () => { plotlyLoading = null; reject(new Error("could not load " + s.src)); };
          document.head.appendChild(s);
        });
      }
      return plotlyLoading;
    },
    getJSON(url) { return request(url); },
    postJSON(url, data) {
      return request(url, { method: "POST", body: JSON.stringify(data),
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": cookie("csrftoken") } });
    },
    showError(elementId, message) {
      const el = document.getElementById(elementId);
      if (!el) return;
      el.innerHTML = "";
      if (!message) return;
      const d = document.createElement("div"); d.className = "errors"; d.textContent = message; el.appendChild(d);
    },
    fmt(v, digits) { return (v === null || v === undefined || Number.isNaN(v)) ? "–" : Number(v).toFixed(digits ?? 2); },
    fmtAge,
    el(tag, attrs, text) {
      const e = document.createElement(tag);
      Object.entries(attrs || {}).forEach(([k, v]) => { if (v !== undefined && v !== null) e.setAttribute(k, v); });
      if (text !== undefined && text !== null) e.textContent = text;
      return e;
    },
    // Poll `url` every `seconds`; `onData(body)` runs only when the data changed (ETag). `takenAt(body)`
    // returns the data's timestamp (epoch ms) and `isStale(body)` a reason string when the server says stale.
    live(url, seconds, onData, opts) {
      opts = opts || {};
      const status = document.getElementById("live-status");
      let etag = null, last = null, lastOk = 0, failing = "", timer = null, body = null;
      function paint() {
        if (opts.quiet) return;  // secondary views of a page leave the status line to the main one
        if (!status || status.classList.contains("bad") && status.textContent.startsWith("Your session ended")) return;
        status.hidden = false;
        const taken = body && opts.takenAt ? opts.takenAt(body) : null;
        const staleReason = body && opts.isStale ? opts.isStale(body) : "";
        const sinceOk = lastOk ? (Date.now() - lastOk) / 1000 : null;
        const late = sinceOk !== null && sinceOk > 3 * seconds;
        let text = "Live: refreshes every " + seconds + " s";
        if (taken) text += " · data taken " + new Date(taken).toISOString().replace("T", " ").slice(0, 19) + " UTC (" + fmtAge((Date.now() - taken) / 1000) + " ago)";
        if (lastOk) text += " · checked " + fmtAge(sinceOk) + " ago";
        let cls = "ok";
        if (staleReason) { text = "STALE: " + staleReason + " · " + text; cls = "bad"; }
        if (failing) { text = "NOT UPDATING (" + failing + ") · " + text; cls = "bad"; }
        else if (late) { text = "NOT UPDATING for " + fmtAge(sinceOk) + " · " + text; cls = "bad"; }
        status.className = "live-status " + cls; status.dataset.state = cls; status.textContent = text;
      }
      async function tick() {
        if (document.hidden && last !== null) { timer = setTimeout(tick, seconds * 1000); return; }
        const headers = { Accept: "application/json" };
        if (etag) headers["If-None-Match"] = etag;
        // The first answer may already be on its way (fetched by the page's head, in parallel with plotly).
        const early = opts.early; opts.early = null;
        const r = await request(typeof url === "function" ? url() : url, { headers }, early);
        if (r.ok) {
          failing = ""; lastOk = Date.now();
          if (r.status !== 304) { etag = r.etag; body = r.body; last = Date.now(); try { onData(r.body); } catch (e) { console.error(e); } }
        } else if (r.status === 404 && opts.onMissing) {
          failing = ""; lastOk = Date.now(); opts.onMissing(r.body);
        } else {
          failing = r.status ? "HTTP " + r.status : (r.body && r.body.detail) || "unreachable";
          if (opts.onError) opts.onError(r);
        }
        paint();
        timer = setTimeout(tick, seconds * 1000);
      }
      setInterval(paint, 5000);
      tick();
      return { refresh() { clearTimeout(timer); etag = null; tick(); } };
    },
  };
  return api;
})();

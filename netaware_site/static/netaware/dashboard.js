// Small helpers shared by the dashboard pages: fetch JSON from our API and render errors plainly.
window.netaware = {
  async getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" } });
    const text = await response.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = { detail: text }; }
    return { ok: response.ok, status: response.status, body };
  },
  showError(elementId, message) {
    const el = document.getElementById(elementId);
    if (el) { el.innerHTML = ""; const d = document.createElement("div"); d.className = "errors"; d.textContent = message; el.appendChild(d); }
  },
  fmt(v, digits) { return (v === null || v === undefined || Number.isNaN(v)) ? "–" : Number(v).toFixed(digits ?? 2); },
};

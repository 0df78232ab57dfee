// A queued or running evaluation: poll its state every second, show the stage (profile, "order 17 of 50"),
// the orders done on the progress bar and the time taken,
// and reload the page (which then shows the result or the error) once the worker is done.
(function () {
  const N = window.netaware;
  const box = document.getElementById("run-status");
  if (!box) return;
  const stage = document.getElementById("run-stage"), state = document.getElementById("run-state");
  const bar = document.getElementById("run-progress");
  async function tick() {
    const r = await N.getJSON(box.dataset.url);
    if (r.ok && r.body) {
      const b = r.body, since = b.startedAt || b.createdAt;
      box.dataset.status = b.status; state.textContent = b.status;
      stage.textContent = b.stage + " · " + N.fmtAge(Date.now() / 1000 - since) + (b.startedAt ? " running" : " waiting");
      if (bar && b.total > 0) { bar.max = b.total; bar.value = b.done; bar.setAttribute("aria-valuetext", b.done + " of " + b.total + " orders"); }
      if (b.status === "done" || b.status === "failed") { location.reload(); return; }
    }
    setTimeout(tick, 1000);
  }
  tick();
})();

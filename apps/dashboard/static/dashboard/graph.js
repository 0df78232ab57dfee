// A server-drawn graph (apps/dashboard/graph_svg.py): the edge under the pointer or the keyboard focus
// is highlighted and its figures are written into the caption below the graph (#graph-info), so the
// rates are readable without a mouse (a link's native tooltip shows only on hover).
(function () {
  document.querySelectorAll("svg.graph").forEach(function (svg) {
    const info = document.getElementById(svg.dataset.info || "graph-info");
    const initial = info ? info.textContent : "";
    function show(event) {
      const edge = event.target.closest("a, g[aria-label]");
      if (!edge || !svg.contains(edge)) return;
      svg.querySelectorAll(".edge.current").forEach(function (e) { e.classList.remove("current"); });
      const g = edge.querySelector(".edge");
      if (g) g.classList.add("current");
      if (info) info.textContent = edge.getAttribute("aria-label");
    }
    function clear() {
      svg.querySelectorAll(".edge.current").forEach(function (e) { e.classList.remove("current"); });
      if (info) info.textContent = initial;
    }
    svg.addEventListener("mouseover", show);
    svg.addEventListener("focusin", show);
    svg.addEventListener("mouseleave", clear);
    svg.addEventListener("focusout", clear);
  });
})();

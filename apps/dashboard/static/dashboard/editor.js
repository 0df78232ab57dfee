// Structured AppGroup editor: workloads, selectors (with the pods they match now), weights,
// dependencies with sensitivities, maxNetworkCost, minBandwidth and an optional edge weight. Every change is checked by the
// server's own validation (a dry run of the save) and the errors are placed next to their fields.
(function () {
  const N = window.netaware;
  const doc = JSON.parse(document.getElementById("editor-document").textContent);
  const validateUrl = JSON.parse(document.getElementById("validate-url").textContent);
  const saveUrl = JSON.parse(document.getElementById("save-url").textContent);
  const previewUrl = JSON.parse(document.getElementById("preview-url").textContent);
  const form = document.getElementById("editor");
  const DESCRIPTION = "netaware.io/description";
  const OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"];

  // The editable model; keys the editor does not show (controller, resources...) are kept as they were.
  const meta = doc.metadata || {};
  const model = {
    namespace: meta.namespace || "default", name: meta.name || "",
    description: ((meta.annotations || {})[DESCRIPTION]) || "",
    algorithm: (doc.spec || {}).topologySortingAlgorithm || "KahnSort",
    mode: (doc.spec || {}).topologyMode || "soft",
    minZones: (doc.spec || {}).minZones ?? "",
    rebalance: (doc.spec || {}).rebalanceMode || "off",  // no field on this page: kept as it was
    workloads: ((doc.spec || {}).workloads || []).map(w => ({
      extra: Object.fromEntries(Object.entries(w).filter(([k]) => !["name", "selector", "weight", "dependencies", "replicas"].includes(k))),
      name: w.name || "", weight: w.weight ?? 1, replicas: w.replicas ?? "",
      labels: Object.entries(((w.selector || {}).matchLabels) || {}),
      exprs: (((w.selector || {}).matchExpressions) || []).map(e => ({ key: e.key, operator: e.operator, values: (e.values || []).join(",") })),
      deps: (w.dependencies || []).map(d => ({ target: d.name, latency: (d.metrics || {}).latency ?? "", bandwidth: (d.metrics || {}).bandwidth ?? "",
        lossrate: (d.metrics || {}).lossrate ?? "", maxNetworkCost: d.maxNetworkCost ?? "", minBandwidth: d.minBandwidth ?? "", weight: d.weight ?? "" })),
    })),
  };

  const num = v => (v === "" || v === null || v === undefined) ? undefined : (typeof v === "number" ? v : (/^-?\d+(\.\d+)?(e-?\d+)?$/i.test(String(v).trim()) ? Number(v) : v));
  function selectorOf(w) {
    const s = {};
    if (w.labels.length) s.matchLabels = Object.fromEntries(w.labels);
    if (w.exprs.length) s.matchExpressions = w.exprs.map(e => {
      const x = { key: e.key, operator: e.operator };
      if (e.operator === "In" || e.operator === "NotIn") x.values = e.values.split(",").map(v => v.trim()).filter(Boolean);
      return x;
    });
    return s;
  }
  function toDocument() {
    const metadata = { namespace: model.namespace, name: model.name };
    if (model.description) metadata.annotations = { [DESCRIPTION]: model.description };
    const spec = { topologySortingAlgorithm: model.algorithm, topologyMode: model.mode };
    if (num(model.minZones) !== undefined) spec.minZones = num(model.minZones);
    if (model.rebalance && model.rebalance !== "off") spec.rebalanceMode = model.rebalance;
    return {
      apiVersion: doc.apiVersion || "netaware.io/v1alpha1", kind: doc.kind || "AppGroup", metadata,
      spec: { ...spec, workloads: model.workloads.map(w => {
        const out = Object.assign({}, w.extra, { name: w.name, selector: selectorOf(w) });
        if (num(w.weight) !== undefined) out.weight = num(w.weight);
        if (num(w.replicas) !== undefined) out.replicas = num(w.replicas);
        if (w.deps.length) out.dependencies = w.deps.map(d => {
          const dep = { name: d.target, metrics: {} };
          ["latency", "bandwidth", "lossrate"].forEach(k => { if (num(d[k]) !== undefined) dep.metrics[k] = num(d[k]); });
          if (num(d.maxNetworkCost) !== undefined) dep.maxNetworkCost = num(d.maxNetworkCost);
          if (d.minBandwidth !== "" && d.minBandwidth !== undefined) dep.minBandwidth = d.minBandwidth;
          if (num(d.weight) !== undefined) dep.weight = num(d.weight);
          return dep;
        });
        return out;
      }) },
    };
  }

  // --- rendering ------------------------------------------------------------------------------
  function input(value, path, onInput, attrs) {
    const el = N.el("input", Object.assign({ "data-path": path }, attrs || {}));
    el.value = value ?? "";
    el.addEventListener("input", () => { onInput(el.value); changed(); });
    return el;
  }
  function labelled(text, control) {
    const l = N.el("label", {}, text); l.appendChild(control); l.appendChild(N.el("span", { class: "field-error" })); return l;
  }
  // A button that changes the model and redraws the form. Redrawing would drop the keyboard focus
  // to the page: `focusAfter` names (by a selector) what gets the focus next, e.g. the new field.
  function button(text, onClick, cls, focusAfter, label) {
    const b = N.el("button", { type: "button", class: cls || "secondary", "aria-label": label || null }, text);
    b.addEventListener("click", () => {
      onClick(); render(); changed();
      const target = focusAfter && form.querySelector(typeof focusAfter === "function" ? focusAfter() : focusAfter);
      if (target) target.focus();
    });
    return b;
  }
  // Dependency drop-downs list the workloads' current names: refreshed in place while a name is
  // typed (a redraw would take the focus away from the name field).
  function refreshTargets() {
    model.workloads.forEach((w, i) => w.deps.forEach((d, j) => {
      const select = form.querySelector('select[name="w' + i + '-dep' + j + '-target"]');
      if (!select) return;
      const names = model.workloads.map(o => o.name).filter(n => n && n !== w.name);
      if (d.target && !names.includes(d.target)) names.push(d.target);
      select.innerHTML = "";
      names.forEach(n => { const o = N.el("option", {}, n); if (n === d.target) o.selected = true; select.appendChild(o); });
    }));
  }
  function render() {
    const box = document.getElementById("workloads");
    box.innerHTML = "";
    model.workloads.forEach((w, i) => {
      const base = "spec.workloads[" + i + "]";
      const card = N.el("div", { class: "editor-workload", "data-path": base, "data-workload": i });
      const head = N.el("div", { class: "editor-row" });
      head.appendChild(labelled("Workload name", input(w.name, base + ".name", v => {
        const old = w.name;
        w.name = v;
        if (old) model.workloads.forEach(o => o.deps.forEach(d => { if (d.target === old) d.target = v; }));  // follow the rename
        refreshTargets();
      }, { name: "w" + i + "-name" })));
      head.appendChild(labelled("Weight", input(w.weight, base + ".weight", v => { w.weight = v; }, { name: "w" + i + "-weight", class: "narrow" })));
      head.appendChild(labelled("Replicas", input(w.replicas, base + ".replicas", v => { w.replicas = v; }, { name: "w" + i + "-replicas", class: "narrow", placeholder: "1" })));
      head.appendChild(button("Remove workload", () => {
        model.workloads.splice(i, 1);
        model.workloads.forEach(o => { o.deps = o.deps.filter(d => d.target !== w.name); });
      }, "secondary", "#add-workload", "Remove workload " + (w.name || i + 1)));
      card.appendChild(head);
      // selector
      const sel = N.el("div", { "data-path": base + ".selector", class: "selector" });
      sel.appendChild(N.el("div", { class: "muted" }, "Selector (all must match)"));
      w.labels.forEach((pair, k) => {
        const row = N.el("div", { class: "editor-row" });
        row.appendChild(labelled("label key", input(pair[0], base + ".selector.matchLabels", v => { pair[0] = v; }, { name: "w" + i + "-label" + k + "-key" })));
        row.appendChild(labelled("= value", input(pair[1], base + ".selector.matchLabels." + pair[0], v => { pair[1] = v; }, { name: "w" + i + "-label" + k + "-value" })));
        row.appendChild(button("×", () => w.labels.splice(k, 1), "secondary", '[data-focus="w' + i + '-add-label"]', "Remove label " + (pair[0] || k + 1) + " of workload " + (w.name || i + 1)));
        sel.appendChild(row);
      });
      w.exprs.forEach((e, k) => {
        const row = N.el("div", { class: "editor-row" });
        row.appendChild(labelled("key", input(e.key, base + ".selector.matchExpressions[" + k + "].key", v => { e.key = v; }, { name: "w" + i + "-expr" + k + "-key" })));
        const op = N.el("select", { "data-path": base + ".selector.matchExpressions[" + k + "].operator", name: "w" + i + "-expr" + k + "-op" });
        OPERATORS.forEach(o => { const opt = N.el("option", {}, o); if (o === e.operator) opt.selected = true; op.appendChild(opt); });
        op.addEventListener("change", () => { e.operator = op.value; render(); changed(); });
        row.appendChild(labelled("operator", op));
        if (e.operator === "In" || e.operator === "NotIn")
          row.appendChild(labelled("values (comma-separated)", input(e.values, base + ".selector.matchExpressions[" + k + "].values", v => { e.values = v; }, { name: "w" + i + "-expr" + k + "-values" })));
        row.appendChild(button("×", () => w.exprs.splice(k, 1), "secondary", '[data-focus="w' + i + '-add-expr"]', "Remove expression " + (e.key || k + 1) + " of workload " + (w.name || i + 1)));
        sel.appendChild(row);
      });
      const selActions = N.el("div", { class: "actions" });
      const addLabel = button("+ label", () => w.labels.push(["", ""]), "secondary", () => '[name="w' + i + '-label' + (w.labels.length - 1) + '-key"]', "Add a label to workload " + (w.name || i + 1));
      addLabel.dataset.focus = "w" + i + "-add-label";
      const addExpr = button("+ expression", () => w.exprs.push({ key: "", operator: "In", values: "" }), "secondary", () => '[name="w' + i + '-expr' + (w.exprs.length - 1) + '-key"]', "Add an expression to workload " + (w.name || i + 1));
      addExpr.dataset.focus = "w" + i + "-add-expr";
      selActions.appendChild(addLabel);
      selActions.appendChild(addExpr);
      selActions.appendChild(N.el("span", { class: "match-preview", id: "matches-" + i }));
      sel.appendChild(selActions);
      sel.appendChild(N.el("span", { class: "field-error" }));
      card.appendChild(sel);
      // dependencies
      const deps = N.el("div", { "data-path": base + ".dependencies" });
      deps.appendChild(N.el("div", { class: "muted" }, "Depends on"));
      w.deps.forEach((d, j) => {
        const dbase = base + ".dependencies[" + j + "]";
        const row = N.el("div", { class: "editor-row", "data-path": dbase });
        const target = N.el("select", { "data-path": dbase + ".name", name: "w" + i + "-dep" + j + "-target" });
        const names = model.workloads.map(o => o.name).filter(n => n && n !== w.name);
        if (d.target && !names.includes(d.target)) names.push(d.target);
        names.forEach(n => { const o = N.el("option", {}, n); if (n === d.target) o.selected = true; target.appendChild(o); });
        if (!d.target && names.length) d.target = names[0];
        target.addEventListener("change", () => { d.target = target.value; changed(); });
        row.appendChild(labelled("workload", target));
        row.appendChild(labelled("latency", input(d.latency, dbase + ".metrics.latency", v => { d.latency = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-latency" })));
        row.appendChild(labelled("bandwidth", input(d.bandwidth, dbase + ".metrics.bandwidth", v => { d.bandwidth = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-bandwidth" })));
        row.appendChild(labelled("loss", input(d.lossrate, dbase + ".metrics.lossrate", v => { d.lossrate = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-lossrate" })));
        row.appendChild(labelled("maxNetworkCost", input(d.maxNetworkCost, dbase + ".maxNetworkCost", v => { d.maxNetworkCost = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-maxcost", placeholder: "none" })));
        row.appendChild(labelled("minBandwidth", input(d.minBandwidth, dbase + ".minBandwidth", v => { d.minBandwidth = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-minbw", placeholder: "e.g. 100M" })));
        row.appendChild(labelled("edge weight", input(d.weight, dbase + ".weight", v => { d.weight = v; }, { class: "narrow", name: "w" + i + "-dep" + j + "-weight", placeholder: "1" })));
        row.appendChild(button("×", () => w.deps.splice(j, 1), "secondary", '[data-focus="w' + i + '-add-dep"]', "Remove the dependency of " + (w.name || "workload " + (i + 1)) + " on " + (d.target || j + 1)));
        const err = N.el("span", { class: "field-error" }); row.appendChild(err);
        deps.appendChild(row);
      });
      const depActions = N.el("div", { class: "actions" });
      const addDep = button("+ dependency", () => w.deps.push({ target: "", latency: 1, bandwidth: 1, lossrate: 1, maxNetworkCost: "", minBandwidth: "", weight: "" }),
        "secondary", () => '[name="w' + i + '-dep' + (w.deps.length - 1) + '-target"]', "Add a dependency to workload " + (w.name || i + 1));
      addDep.dataset.focus = "w" + i + "-add-dep";
      depActions.appendChild(addDep);
      deps.appendChild(depActions);
      deps.appendChild(N.el("span", { class: "field-error" }));
      card.appendChild(deps);
      box.appendChild(card);
    });
  }

  // --- validation as you type -------------------------------------------------------------------
  let timer = null, seq = 0, lastValid = false, dirty = false;
  // Leaving with unsaved edits asks first (the browser's own dialog).
  window.addEventListener("beforeunload", ev => { if (dirty) { ev.preventDefault(); ev.returnValue = ""; } });
  function changed() { dirty = true; clearTimeout(timer); document.getElementById("validity").textContent = "checking…"; timer = setTimeout(validate, 300); }
  function find(path) {
    let p = path;
    while (p) {
      const el = form.querySelector('[data-path="' + CSS.escape(p) + '"]');
      if (el) return el;
      const cut = Math.max(p.lastIndexOf("."), p.lastIndexOf("["));
      p = cut > 0 ? p.slice(0, cut) : "";
    }
    return null;
  }
  function showErrors(errors) {
    form.querySelectorAll(".invalid").forEach(e => e.classList.remove("invalid"));
    form.querySelectorAll(".field-error").forEach(e => { e.textContent = ""; });
    const general = [];
    Object.entries(errors || {}).forEach(([path, messages]) => {
      const el = find(path);
      const text = messages.join(" ");
      if (!el || el === form) { general.push(path + ": " + text); return; }
      el.classList.add("invalid");
      let slot = null;
      if (el.tagName === "INPUT" || el.tagName === "SELECT") slot = el.parentElement.querySelector(".field-error");
      else slot = [...el.children].reverse().find(c => c.classList && c.classList.contains("field-error"));
      if (slot) slot.textContent = (slot.textContent ? slot.textContent + " " : "") + (el.dataset.path === path ? "" : path.slice(el.dataset.path.length).replace(/^\./, "") + ": ") + text;
      else general.push(path + ": " + text);
    });
    N.showError("editor-errors", general.join(" · "));
    // Every problem at once in the sticky bar beside Save, each a button to its field.
    const summary = document.getElementById("error-summary");
    summary.innerHTML = "";
    Object.entries(errors || {}).forEach(([path, messages]) => {
      const li = N.el("li"), el = find(path);
      const go = N.el("button", { type: "button", class: "link-like", "data-error-path": path }, path + ": " + messages.join(" "));
      go.addEventListener("click", () => { if (el && el.focus) { el.scrollIntoView({ block: "center" }); (el.matches("input,select,textarea") ? el : el.querySelector("input,select,button") || el).focus(); } });
      li.appendChild(go); summary.appendChild(li);
    });
  }
  function preview(p) {
    const el = document.getElementById("graph-preview");
    if (!p) return;
    N.plotly().then(() => Plotly.react(el, p.figure.data, Object.assign({}, p.figure.layout, { height: 380, uirevision: "graph" }), { responsive: true, displaylogo: false }));
    const ol = document.getElementById("order-preview"); ol.innerHTML = "";
    p.order.forEach(n => ol.appendChild(N.el("li", {}, n)));
    document.getElementById("cycle-preview").innerHTML = "";
    if (p.cyclic) document.getElementById("cycle-preview").appendChild(N.el("div", { class: "banner warn" }, "Cycle through " + p.cycle.join(", ") + ": the fallback order is used."));
  }
  async function validate() {
    const mine = ++seq;
    const r = await N.postJSON(validateUrl, { document: toDocument() });
    if (mine !== seq) return;  // a newer edit is being checked
    const v = document.getElementById("validity");
    if (!r.ok) { v.textContent = ""; N.showError("editor-errors", "Could not check: HTTP " + r.status + " " + JSON.stringify(r.body)); lastValid = false; return; }
    lastValid = r.body.valid;
    v.textContent = r.body.valid ? "✓ valid" : Object.keys(r.body.errors).length + " problem(s)";
    v.className = r.body.valid ? "ok" : "bad";
    form.dataset.valid = r.body.valid ? "true" : "false";
    showErrors(r.body.errors);
    preview(r.body.preview);
    matches();
  }
  // Pods each selector matches now (cluster watcher's cache).
  async function matches() {
    await Promise.all(model.workloads.map(async (w, i) => {
      const el = document.getElementById("matches-" + i);
      if (!el) return;
      const r = await N.postJSON(previewUrl, { namespace: model.namespace, selector: selectorOf(w) });
      if (!r.ok) { el.textContent = ""; return; }
      const b = r.body;
      el.textContent = b.known ? "matches " + b.count + " pod(s) now" + (b.count ? ": " + b.pods.map(p => p.name).join(", ") + (b.count > b.pods.length ? ", …" : "") : "")
        : "no pods known in namespace " + b.namespace + " (the cluster watcher has not seen any)";
    }));
  }

  // --- wiring ---------------------------------------------------------------------------------
  [["namespace", v => { model.namespace = v; }], ["name", v => { model.name = v; }], ["description", v => { model.description = v; }],
   ["minZones", v => { model.minZones = v; }]].forEach(([name, set]) => {
    const el = form.elements[name]; el.value = model[name]; el.addEventListener("input", () => { set(el.value); changed(); });
  });
  form.elements.algorithm.value = model.algorithm;
  form.elements.algorithm.addEventListener("change", () => { model.algorithm = form.elements.algorithm.value; changed(); });
  form.elements.mode.value = model.mode;
  form.elements.mode.addEventListener("change", () => { model.mode = form.elements.mode.value; changed(); });
  document.getElementById("add-workload").addEventListener("click", () => {
    const n = model.workloads.length + 1;
    model.workloads.push({ extra: {}, name: "", weight: 1, replicas: "", labels: [["app", ""]], exprs: [], deps: [] });
    render(); changed();
    const first = form.querySelector('[name="w' + (n - 1) + '-name"]'); if (first) first.focus();
  });
  document.getElementById("save").addEventListener("click", async () => {
    clearTimeout(timer);
    const r = await N.postJSON(saveUrl, { document: toDocument() });
    if (r.ok && r.body.url) { dirty = false; location.href = r.body.url; return; }
    if (r.status === 403) { N.showError("editor-errors", (r.body && r.body.detail) || "Not allowed."); return; }
    showErrors((r.body && r.body.errors) || { "": [JSON.stringify(r.body)] });
    document.getElementById("validity").textContent = "not saved"; document.getElementById("validity").className = "bad";
  });
  render();
  if (model.workloads.length) validate();
})();

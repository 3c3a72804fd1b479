// nbcallback training dashboard: the anywidget front end (issue #22).
//
// The kernel syncs plain data (traits `spec` and `view`, see notes/widget-contract.md); this module draws
// it: progress bars, the status line, Stop / learning-rate controls, SVG panels and the metrics table.
// One plain ES module: no build step, no imports. The logic lives in small pure named exports (unit-tested
// with `node --test tests/js/`); `initialize` keeps one store per model, `render` draws from it.

const SVG_NS = "http://www.w3.org/2000/svg";
const PANEL_H = 220; // px, the height of one panel (1 SVG unit = 1 CSS pixel)
const CHAR_W = 6.6; // px, a generous width of one 11 px character, for layout only
const HELLO_EVERY_MS = 1000; // a gap asks the kernel for the full view at most once a second
const PARTS = ["progress", "table", "plot", "controls"];
const DEFAULT_COLOR = ["--jp-brand-color1", "#1976d2"];

// ---------------------------------------------------------------- numbers and validation

/** A number for people: 4 significant digits, `1.2e-4` style below 1e-3 or from 1e5; "–" if missing. */
export function formatValue(v) {
  if (typeof v !== "number" || !Number.isFinite(v)) return "–";
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e5) {
    const [m, e] = v.toExponential(3).split("e");
    return `${m.replace(/\.?0+$/, "")}e${Number(e)}`;
  }
  return String(Number(v.toPrecision(4)));
}

/** The learning rate typed by the user as a positive finite number, or null when it is not one. */
export function validLr(text) {
  const s = String(text ?? "").trim();
  if (!/^\+?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) return null;
  const v = Number(s);
  return Number.isFinite(v) && v > 0 ? v : null;
}

// ---------------------------------------------------------------- series store and merge rule

const asArray = (v) => (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]);
const isNum = (v) => typeof v === "number" && Number.isFinite(v);

function fitTo(values, n) {
  const out = asArray(values).slice(0, n);
  while (out.length < n) out.push(null);
  return out;
}

function normTail(tail) {
  if (!tail || typeof tail !== "object") return null;
  const x = asArray(tail.x);
  if (!x.length) return null;
  return { x, y: fitTo(tail.y, x.length), lo: fitTo(tail.lo, x.length), hi: fitTo(tail.hi, x.length) };
}

/**
 * Merge one series delta into the record kept for its key (`{gen, x, y, lo, hi, tail}`, mutated in place;
 * `{}` when nothing is stored yet). Returns "replaced" (new generation from start 0), "ok" (truncated to
 * `start` and appended) or "gap" (delta ignored: the caller asks the kernel for the full view).
 */
export function mergeDelta(store, delta) {
  if (!delta || typeof delta !== "object") return "ok"; // nothing to merge
  const d = delta;
  const start = Number.isInteger(d.start) ? d.start : 0;
  const x = asArray(d.x);
  let result = "ok";
  if (!("gen" in store) || store.gen !== d.gen) {
    if (start !== 0) return "gap";
    Object.assign(store, { gen: d.gen, x: [], y: [], lo: [], hi: [] });
    result = "replaced";
  } else if (start > store.x.length) {
    return "gap";
  } else {
    for (const k of ["x", "y", "lo", "hi"]) store[k].length = start;
  }
  store.x.push(...x);
  store.y.push(...fitTo(d.y, x.length));
  store.lo.push(...fitTo(d.lo, x.length));
  store.hi.push(...fitTo(d.hi, x.length));
  store.tail = normTail(d.tail); // replaced by every delta; null (or absent) removes it
  return result;
}

/** A fresh model-level store: the latest view (without series), merged series, redraw listeners. */
export function createStore() {
  return { view: {}, series: {}, lastHello: -Infinity, listeners: new Set() };
}

/**
 * Apply one `view` (trait value or `msg:custom` payload) to the store. Every key but `series` replaces the
 * previous view's (a key left out is no longer shown); each series delta is merged. Returns true when a
 * gap was found and a hello may be sent now (at most once per second).
 */
export function applyView(store, view, now = Date.now()) {
  if (!view || typeof view !== "object") return false;
  const { series, ...rest } = view;
  store.view = rest;
  let gap = false;
  for (const [key, delta] of Object.entries(series && typeof series === "object" ? series : {})) {
    const rec = store.series[key] ?? {};
    if (mergeDelta(rec, delta) === "gap") gap = true;
    else store.series[key] = rec;
  }
  if (!gap || now - store.lastHello < HELLO_EVERY_MS) return false;
  store.lastHello = now;
  return true;
}

/** The drawable points of a series record: its arrays followed by the provisional tail. */
export function seriesPoints(rec) {
  const pick = (k) => asArray(rec?.[k]).concat(rec?.tail ? rec.tail[k] : []);
  return { x: pick("x"), y: pick("y"), lo: pick("lo"), hi: pick("hi") };
}

// ---------------------------------------------------------------- scales and ticks

function niceStep(span, n) {
  const raw = span / Math.max(1, n);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

const roundTo = (v, step) => {
  const decimals = Math.max(0, 1 - Math.floor(Math.log10(step)));
  return decimals <= 20 ? Number(v.toFixed(decimals)) : Number(v.toPrecision(12));
};

/** About `n` round ticks (1, 2 or 5 times a power of ten apart) inside [lo, hi]. */
export function niceTicks(lo, hi, n = 5) {
  if (!isNum(lo) || !isNum(hi)) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  if (lo === hi) return [lo];
  const step = niceStep(hi - lo, n);
  const out = [];
  for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9 && out.length < 1000; i++) {
    out.push(roundTo(i * step, step));
  }
  return out;
}

/** Log-axis ticks inside [lo, hi]: decades, plus 2 and 5 when the range spans at most two decades. */
export function logTicks(lo, hi) {
  if (!isNum(lo) || !isNum(hi) || lo <= 0 || hi <= 0) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  const d0 = Math.floor(Math.log10(lo));
  const d1 = Math.ceil(Math.log10(hi));
  const mults = Math.log10(hi / lo) <= 2 ? [1, 2, 5] : [1];
  const every = Math.max(1, Math.ceil((d1 - d0) / 6)); // at most ~6 labelled decades
  const out = [];
  for (let d = d0; d <= d1; d++) {
    if ((((d - d0) % every) + every) % every !== 0) continue;
    for (const m of mults) {
      const v = Number((m * 10 ** d).toPrecision(12));
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
    }
  }
  return out.length >= 2 ? out : niceTicks(lo, hi, 3).filter((v) => v > 0);
}

/**
 * A function mapping data to pixels ("linear" or "log"); NaN for a missing value (and for v <= 0 on a log
 * scale), the middle of the range when the domain is one point. `invert` maps pixels back (linear: data).
 */
export function makeScale(domain, range, kind = "linear") {
  const log = kind === "log";
  const t = (v) => (typeof v !== "number" ? NaN : log ? (v > 0 ? Math.log10(v) : NaN) : v);
  const [d0, d1] = [t(domain[0]), t(domain[1])];
  const [r0, r1] = range;
  const flat = !(isNum(d0) && isNum(d1)) || d0 === d1;
  const scale = (v) => {
    const tv = t(v);
    if (!isNum(tv)) return NaN;
    return flat ? (r0 + r1) / 2 : r0 + ((tv - d0) / (d1 - d0)) * (r1 - r0);
  };
  scale.invert = (px) => {
    const tv = flat ? d0 : d0 + ((px - r0) / (r1 - r0)) * (d1 - d0);
    return log ? 10 ** tv : tv;
  };
  return scale;
}

/** The x domain: the planned `x_range`, grown to the data; never a single point. */
export function xDomain(xRange, xs) {
  const vals = asArray(xRange).concat(xs).filter(isNum);
  if (!vals.length) return [0, 1];
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  return hi > lo ? [lo, hi] : [lo, lo + 1];
}

/** The y domain of the values, padded a little (log: only positive values count). */
export function yDomain(values, kind = "linear", tops = []) {
  const log = kind === "log";
  const ok = (v) => isNum(v) && (!log || v > 0);
  let vals = values.filter(ok);
  const high = tops.filter(ok);
  if (!vals.length) vals = high;
  if (!vals.length) return log ? [0.1, 1] : [0, 1];
  // The bottom follows the lines, the top everything: a band's per-step minima (an easy batch's
  // loss of 1e-5) would stretch a log axis far below the curve; a spike still shows at the top.
  let lo = Math.min(...vals);
  let hi = Math.max(...vals, ...high);
  if (log) {
    if (lo === hi) return [lo / 2, hi * 2];
    const f = (hi / lo) ** 0.05;
    return [lo / f, hi * f];
  }
  if (lo === hi) return lo === 0 ? [-1, 1] : [lo - Math.abs(lo) * 0.1, hi + Math.abs(hi) * 0.1];
  const pad = (hi - lo) * 0.05;
  return [lo - pad, hi + pad];
}

// ---------------------------------------------------------------- SVG paths

const r1 = (v) => Math.round(v * 10) / 10;

/** Index ranges [start, end) of consecutive i where ok(i). */
function runs(n, ok) {
  const out = [];
  let start = -1;
  for (let i = 0; i <= n; i++) {
    if (i < n && ok(i)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      out.push([start, i]);
      start = -1;
    }
  }
  return out;
}

function project(xs, ys, sx, sy) {
  const n = Math.min(xs.length, ys.length);
  const px = [];
  const py = [];
  for (let i = 0; i < n; i++) {
    px.push(sx(xs[i]));
    py.push(sy(ys[i]));
  }
  return { n, px, py, ok: (i) => isNum(px[i]) && isNum(py[i]) };
}

/** A polyline through the points; a null (or unscalable) value breaks it; a lone point is a dot ("h0"). */
export function linePath(xs, ys, sx, sy) {
  const { n, px, py, ok } = project(xs, ys, sx, sy);
  return runs(n, ok)
    .map(([a, b]) => {
      const pts = [];
      for (let i = a; i < b; i++) pts.push(`${r1(px[i])},${r1(py[i])}`);
      return `M${pts.join("L")}${b - a === 1 ? "h0" : ""}`;
    })
    .join("");
}

/** Whether a band holds raw values (one step per bucket: lo === hi everywhere); it is then drawn
 * as a faint line and its values count for the y range. */
export function isRawBand(lo, hi) {
  return lo.length > 0 && lo.every((v, i) => v === hi[i]);
}

/** Closed areas between `lo` and `hi`, one per run of two or more points where both are present. */
export function bandPath(xs, lo, hi, sx, sy) {
  const top = project(xs, hi, sx, sy);
  const bottom = project(xs, lo, sx, sy);
  const n = Math.min(top.n, bottom.n);
  return runs(n, (i) => top.ok(i) && bottom.ok(i))
    .filter(([a, b]) => b - a > 1) // a lone point has no area (its line draws a dot)
    .map(([a, b]) => {
      const pts = [];
      for (let i = a; i < b; i++) pts.push(`${r1(top.px[i])},${r1(top.py[i])}`);
      for (let i = b - 1; i >= a; i--) pts.push(`${r1(bottom.px[i])},${r1(bottom.py[i])}`);
      return `M${pts.join("L")}Z`;
    })
    .join("");
}

/** A step function: each value holds until the next x (horizontal, then vertical); null breaks it. */
export function stepPath(xs, ys, sx, sy) {
  const { n, px, py, ok } = project(xs, ys, sx, sy);
  return runs(n, ok)
    .map(([a, b]) => {
      let d = `M${r1(px[a])},${r1(py[a])}`;
      for (let i = a + 1; i < b; i++) d += `H${r1(px[i])}V${r1(py[i])}`;
      return b - a === 1 ? `${d}h0` : d;
    })
    .join("");
}

/** Indices where a step series changes value (markers for the learning-rate panel). */
export function stepChanges(ys) {
  const out = [];
  for (let i = 1; i < ys.length; i++) if (isNum(ys[i]) && isNum(ys[i - 1]) && ys[i] !== ys[i - 1]) out.push(i);
  return out;
}

/** Index of the x (sorted ascending) nearest to `x`; -1 when there is none. */
export function nearestIndex(xs, x) {
  if (!xs?.length || !isNum(x)) return -1;
  let lo = 0;
  let hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid;
    else hi = mid;
  }
  return Math.abs(xs[hi] - x) < Math.abs(xs[lo] - x) ? hi : lo;
}

/** The value a line shows at step `x`: a step line's last value at or before x, else its nearest point. */
export function valueAt(points, style, x) {
  const xs = points.x;
  if (style === "step") {
    let i = nearestIndex(xs, x);
    if (i >= 0 && xs[i] > x) i -= 1;
    return i >= 0 ? { i, x: xs[i], y: points.y[i] } : null;
  }
  const i = nearestIndex(xs, x);
  return i >= 0 ? { i, x: xs[i], y: points.y[i] } : null;
}

/** The tooltip text: "step 512 · train 0.2345 · eval loss 0.21". */
export function tooltipText(stepWord, x, entries) {
  return [`${stepWord} ${Math.round(x)}`, ...entries.map(([label, v]) => `${label} ${formatValue(v)}`)].join(" · ");
}

/** A CSS colour for a line: `var(--name, #fallback)` from spec.colors, or the value itself. */
export function cssColor(colors, name) {
  const c = colors?.[name];
  if (Array.isArray(c) && c.length >= 2) return `var(${c[0]}, ${c[1]})`;
  if (typeof c === "string") return c;
  if (typeof name === "string" && /^(#|rgb|hsl|var\()/.test(name)) return name;
  return `var(${DEFAULT_COLOR[0]}, ${DEFAULT_COLOR[1]})`;
}

/** A table cell that reads as a number or a time (right-aligned). */
export const isNumericCell = (s) => /^[-+]?[\d.,:]+(e[-+]?\d+)?%?$/i.test(String(s ?? "").trim());

// ---------------------------------------------------------------- model wiring (no DOM)

const stores = new WeakMap();

/** The store of a model; the first call registers the model listeners (done by `initialize`). */
export function connect(model) {
  let entry = stores.get(model);
  if (entry) return entry.store;
  const store = createStore();
  const emit = () => store.listeners.forEach((fn) => fn());
  const take = (view) => {
    if (applyView(store, view)) model.send({ type: "hello" });
    emit();
  };
  const onView = () => take(model.get("view"));
  const onMsg = (msg) => msg?.type === "view" && take(msg.view);
  model.on("change:view", onView);
  model.on("msg:custom", onMsg);
  model.on("change:spec", emit);
  entry = { store, off: () => [["change:view", onView], ["msg:custom", onMsg], ["change:spec", emit]].forEach(([e, f]) => model.off(e, f)) };
  stores.set(model, entry);
  const initial = model.get("view");
  if (initial && typeof initial === "object" && Object.keys(initial).length) take(initial);
  return store;
}

/** The store kept for a model (undefined before `initialize`). */
export const getStore = (model) => stores.get(model)?.store;

function initialize({ model }) {
  connect(model);
  return () => {
    stores.get(model)?.off();
    stores.delete(model);
  };
}

// ---------------------------------------------------------------- DOM helpers

function h(tag, attrs = {}, children = [], ns = null) {
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v);
  for (const c of asArray(children)) el.append(c);
  return el;
}
const s = (tag, attrs, children) => h(tag, attrs, children, SVG_NS);

// ---------------------------------------------------------------- blocks

function drawBars(box, bars) {
  box.replaceChildren(
    ...asArray(bars).map((b) => {
      const pct = isNum(b?.value) && isNum(b?.max) && b.max > 0 ? Math.min(100, Math.max(0, (100 * b.value) / b.max)) : 0;
      const fill = h("div", { class: "nbc-bar-fill" });
      fill.style.width = `${pct.toFixed(1)}%`;
      return h("div", { class: "nbc-bar", "data-kind": b?.kind ?? "" }, [
        h("span", { class: "nbc-bar-label" }, b?.label ?? ""),
        h("div", { class: "nbc-bar-track" }, fill),
        h("span", { class: "nbc-bar-text" }, b?.text ?? ""),
      ]);
    }),
  );
}

function drawStatus(box, status, hint) {
  const parts = [];
  delete box.dataset.state;
  if (status && typeof status === "object") {
    box.dataset.state = status.state ?? "";
    parts.push(h("span", { class: "nbc-status-text" }, status.text ?? status.state ?? ""));
    if (status.note) parts.push(h("span", { class: "nbc-note" }, status.note));
  }
  if (hint) parts.push(h("span", { class: "nbc-hint" }, hint));
  box.hidden = !parts.length;
  box.replaceChildren(...parts);
}

function drawTable(box, table) {
  const header = asArray(table?.header);
  const rows = asArray(table?.rows).filter(Array.isArray);
  if (!header.length && !rows.length) return box.replaceChildren();
  const numeric = header.map((_, j) => rows.length > 0 && rows.every((r) => r[j] === "" || r[j] == null || isNumericCell(r[j])));
  const cell = (tag, text, j) => h(tag, numeric[j] ? { class: "nbc-num" } : {}, String(text ?? ""));
  box.replaceChildren(
    h("table", { class: "nbc-table" }, [
      ...(table.caption ? [h("caption", {}, table.caption)] : []),
      h("thead", {}, h("tr", {}, header.map((t, j) => cell("th", t, j)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((t, j) => cell("td", t, j))))),
    ]),
  );
}

function buildControls(box, model, labels) {
  const stop = h("button", { class: "nbc-stop", type: "button" }, labels.stop ?? "Stop");
  const input = h("input", { class: "nbc-lr", type: "text", inputmode: "decimal", size: 8, "aria-label": labels.lr ?? "lr" });
  const apply = h("button", { class: "nbc-lr-apply", type: "button" }, labels.apply ?? "set");
  const note = h("span", { class: "nbc-controls-note" });
  const ctl = { stop, input, apply, note, stopping: false };
  stop.addEventListener("click", () => {
    model.send({ type: "stop" });
    ctl.stopping = true;
    stop.disabled = true;
    stop.textContent = labels.stopping ?? "stopping…";
  });
  const applyLr = () => {
    const value = validLr(input.value);
    input.classList.toggle("nbc-invalid", value === null);
    input.setAttribute("aria-invalid", String(value === null));
    if (value !== null) model.send({ type: "lr", value });
  };
  apply.addEventListener("click", applyLr);
  input.addEventListener("keydown", (e) => e.key === "Enter" && applyLr());
  input.addEventListener("input", () => input.classList.remove("nbc-invalid"));
  box.replaceChildren(stop, h("label", { class: "nbc-lr-label" }, [labels.lr ?? "lr", " ", input]), apply, note);
  return ctl;
}

function updateControls(ctl, controls, state) {
  const live = Boolean(controls?.enabled) && !["finished", "stopped", "error", "interrupted"].includes(state);
  ctl.stop.disabled = ctl.stopping || !live;
  ctl.input.disabled = ctl.apply.disabled = !live;
  ctl.input.placeholder = isNum(controls?.lr) ? formatValue(controls.lr) : "";
  ctl.note.textContent = controls?.note ?? "";
}

// ---------------------------------------------------------------- panels

const MARGIN = { right: 18, bottom: 24 };

/** Where title, legend and plot area go in a panel `width` px wide (legend never over the data). */
/** Rough text width in px: `per` per Latin character, about twice that per CJK character. */
export function textWidth(text, per) {
  let width = 0;
  for (const ch of String(text ?? "")) width += ch.codePointAt(0) >= 0x2e80 ? per * 1.9 : per;
  return width;
}

function panelLayout(width, title, legendLabels, yLabels) {
  const titleW = textWidth(title, 7.8) + 16;
  const items = legendLabels.map((l) => 26 + textWidth(l, CHAR_W));
  const legendW = items.reduce((a, b) => a + b, 0);
  const oneRow = titleW + legendW <= width - MARGIN.right;
  const top = oneRow || !items.length ? 30 : 48;
  const left = Math.max(38, 12 + Math.max(0, ...yLabels.map((t) => t.length)) * CHAR_W);
  const legend = []; // x of each legend item, right-aligned
  let x = Math.max(oneRow ? titleW : left, width - MARGIN.right - legendW);
  for (const w of items) {
    legend.push(x);
    x += w;
  }
  return { left, top, right: width - MARGIN.right, bottom: PANEL_H - MARGIN.bottom, legendY: oneRow ? 16 : 36, legend };
}

function legendSwatch(style, color, x, y) {
  const line = s("line", { x1: x, x2: x + 18, y1: y, y2: y, stroke: color, "stroke-width": style === "band" ? 2.5 : 1.5 });
  if (style === "band") return [s("rect", { x, y: y - 5, width: 18, height: 10, fill: color, class: "nbc-band" }), line];
  if (style === "points" || style === "step") return [line, s("circle", { cx: x + 9, cy: y, r: 3, fill: color })];
  return [line];
}

/** Circles at the given indices of a series (skipping points that cannot be drawn). */
function markers(indices, pts, sx, sy, r, fill) {
  return indices
    .map((i) => [sx(pts.x[i]), sy(pts.y[i])])
    .filter(([cx, cy]) => isNum(cx) && isNum(cy))
    .map(([cx, cy]) => s("circle", { cx: r1(cx), cy: r1(cy), r, fill }));
}

/** Draw one panel's SVG from the spec and the store; returns what hovering needs. */
function drawPanel(panel, spec, store, width, clipId) {
  const kind = panel.scale === "log" ? "log" : "linear";
  const lines = asArray(panel.lines)
    .map((line) => ({ line, pts: seriesPoints(store.series[line?.key]), color: cssColor(spec.colors, line?.color) }))
    .filter(({ line, pts }) => line && pts.x.length > 0);
  const ys = lines.flatMap(({ line, pts }) => (line.style === "band" && isRawBand(pts.lo, pts.hi) ? [...pts.y, ...pts.lo] : pts.y));
  const tops = lines.flatMap(({ line, pts }) => (line.style === "band" ? pts.hi : []));
  const xd = xDomain(spec.x_range, lines.flatMap(({ pts }) => pts.x));
  const yd = yDomain(ys, kind, tops);
  const yTicks = kind === "log" ? logTicks(...yd) : niceTicks(yd[0], yd[1], 5);
  const L = panelLayout(width, panel.title ?? "", lines.map(({ line }) => line.label ?? line.key), yTicks.map(formatValue));
  const sx = makeScale(xd, [L.left, L.right]);
  const sy = makeScale(yd, [L.bottom, L.top], kind);
  const xTicks = niceTicks(xd[0], xd[1], Math.max(2, Math.floor((L.right - L.left) / 80))).filter(Number.isInteger); // steps
  const inX = (x) => x >= xd[0] && x <= xd[1];

  const grid = yTicks.map((t) => s("line", { class: "nbc-grid", x1: L.left, x2: L.right, y1: r1(sy(t)), y2: r1(sy(t)) }));
  const marks = asArray(spec.epoch_marks).filter(isNum).filter(inX)
    .map((x) => s("line", { class: "nbc-epoch", x1: r1(sx(x)), x2: r1(sx(x)), y1: L.top, y2: L.bottom }));
  const yLabels = yTicks.map((t) => s("text", { class: "nbc-tick", x: L.left - 6, y: r1(sy(t)), dy: "0.32em", "text-anchor": "end" }, formatValue(t)));
  const xLabels = xTicks.map((t) => s("text", { class: "nbc-tick", x: r1(sx(t)), y: L.bottom + 16, "text-anchor": "middle" }, formatValue(t)));
  const data = lines.flatMap(({ line, pts, color }) => {
    const out = [];
    if (line.style === "band") {
      out.push(s("path", { class: "nbc-band", d: bandPath(pts.x, pts.lo, pts.hi, sx, sy), fill: color, stroke: isRawBand(pts.lo, pts.hi) ? color : "none" }));
      out.push(s("path", { class: "nbc-line nbc-bold", d: linePath(pts.x, pts.y, sx, sy), stroke: color }));
    } else if (line.style === "step") {
      out.push(s("path", { class: "nbc-line", d: stepPath(pts.x, pts.y, sx, sy), stroke: color }));
      out.push(...markers(stepChanges(pts.y), pts, sx, sy, 3, color));
    } else {
      out.push(s("path", { class: line.style === "points" ? "nbc-line nbc-thin" : "nbc-line", d: linePath(pts.x, pts.y, sx, sy), stroke: color }));
      if (line.style === "points") {
        out.push(...markers(pts.x.map((_, i) => i), pts, sx, sy, 3.5, color));
      }
    }
    return out;
  });
  const legend = lines.flatMap(({ line, color }, k) => [
    ...legendSwatch(line.style, color, L.legend[k], L.legendY),
    s("text", { class: "nbc-legend", x: L.legend[k] + 22, y: L.legendY, dy: "0.32em" }, line.label ?? line.key),
  ]);
  const guide = s("line", { class: "nbc-guide", y1: L.top, y2: L.bottom, visibility: "hidden" });
  const dots = s("g", { class: "nbc-dots" });
  const svg = s("svg", { viewBox: `0 0 ${width} ${PANEL_H}`, width: "100%", height: PANEL_H, role: "img", "aria-label": panel.title ?? "" }, [
    s("defs", {}, s("clipPath", { id: clipId }, s("rect", { x: L.left - 4, y: L.top - 4, width: L.right - L.left + 8, height: L.bottom - L.top + 8 }))),
    s("text", { class: "nbc-title", x: 4, y: 16, dy: "0.32em" }, panel.title ?? ""),
    ...grid,
    ...marks,
    s("path", { class: "nbc-axis", d: `M${L.left},${L.top}V${L.bottom}H${L.right}` }),
    ...yLabels,
    ...xLabels,
    s("text", { class: "nbc-tick nbc-xname", x: 4, y: L.bottom + 16 }, spec.labels?.step ?? "step"),
    s("g", { "clip-path": `url(#${clipId})` }, data),
    ...legend,
    guide,
    dots,
  ]);
  return { svg, guide, dots, lines, sx, sy, L, xd };
}

/** Show the guide line, dots and tooltip for the mouse at SVG x `mx`, or hide them (mx null). */
function hover(p, mx, stepWord) {
  const d = p.drawn;
  if (!d || mx === null || mx < d.L.left - 8 || mx > d.L.right + 8 || !d.lines.length) {
    p.tip.hidden = true;
    d?.guide.setAttribute("visibility", "hidden");
    d?.dots.replaceChildren();
    return;
  }
  const want = d.sx.invert(mx);
  const xs = [...new Set(d.lines.flatMap(({ pts }) => pts.x.filter(isNum)))].sort((a, b) => a - b);
  const x = xs[nearestIndex(xs, want)];
  if (!isNum(x)) return hover(p, null, stepWord);
  const entries = [];
  const dots = [];
  for (const { line, pts, color } of d.lines) {
    const at = valueAt(pts, line.style, x);
    const near = at && (line.style === "step" || Math.abs(d.sx(at.x) - d.sx(x)) <= 12);
    if (!near || !isNum(at.y)) continue;
    entries.push([line.label ?? line.key, at.y]);
    const cy = d.sy(at.y);
    if (isNum(cy)) dots.push(s("circle", { class: "nbc-dot", cx: r1(d.sx(x)), cy: r1(cy), r: 4, stroke: color }));
  }
  const px = r1(d.sx(x));
  d.guide.setAttribute("x1", px);
  d.guide.setAttribute("x2", px);
  d.guide.setAttribute("visibility", "visible");
  d.dots.replaceChildren(...dots);
  p.tip.textContent = tooltipText(stepWord, x, entries);
  p.tip.hidden = false;
  const width = p.box.clientWidth || d.L.right;
  const left = px + 12 + p.tip.offsetWidth > width ? Math.max(0, px - 12 - p.tip.offsetWidth) : px + 12;
  p.tip.style.left = `${left}px`;
  p.tip.style.top = `${d.L.top}px`;
}

let clipCounter = 0;

function makePanelBox(title) {
  const box = h("div", { class: "nbc-panel", "data-title": title });
  const tip = h("div", { class: "nbc-tip", role: "tooltip" });
  tip.hidden = true;
  const p = { box, tip, drawn: null, mx: null, clipId: `nbc-clip-${++clipCounter}-${Math.random().toString(36).slice(2, 8)}` };
  const toSvgX = (e) => {
    const svg = box.querySelector("svg");
    const rect = svg.getBoundingClientRect();
    return ((e.clientX - rect.left) * svg.viewBox.baseVal.width) / (rect.width || 1);
  };
  box.addEventListener("mousemove", (e) => {
    p.mx = toSvgX(e);
    hover(p, p.mx, p.stepWord);
  });
  box.addEventListener("mouseleave", () => {
    p.mx = null;
    hover(p, null, p.stepWord);
  });
  return p;
}

function drawPanels(box, panels, spec, store, cache) {
  const list = asArray(spec.panels).filter((x) => x && typeof x === "object");
  const titles = list.map((x) => String(x.title ?? ""));
  if (titles.join("\n") !== cache.titles) {
    cache.titles = titles.join("\n");
    cache.items = titles.map(makePanelBox);
    box.replaceChildren(...cache.items.map((p) => p.box));
  }
  let unsized = false;
  list.forEach((panel, k) => {
    const p = cache.items[k];
    if (!p.box.clientWidth && p.drawn) {
      unsized = true; // laid out at width 0 for a moment (a theme switch hides the output): keep the old picture
      return;
    }
    const width = Math.max(200, Math.round(p.box.clientWidth || 480));
    p.stepWord = spec.labels?.step ?? "step";
    p.drawn = drawPanel(panel, spec, store, width, p.clipId);
    p.box.replaceChildren(p.drawn.svg, p.tip);
    hover(p, p.mx, p.stepWord);
  });
  return unsized;
}

// ---------------------------------------------------------------- render

const raf = (fn) => (typeof requestAnimationFrame === "function" ? requestAnimationFrame(fn) : setTimeout(fn, 16));
const cancelRaf = (id) => (typeof cancelAnimationFrame === "function" ? cancelAnimationFrame(id) : clearTimeout(id));

function render({ model, el }) {
  const store = connect(model);
  const sec = (cls) => h("div", { class: cls });
  const ui = { bars: sec("nbc-bars"), status: sec("nbc-status"), controls: sec("nbc-controls"), panels: sec("nbc-panels"), table: sec("nbc-table-box") };
  const root = h("div", { class: "nbc-dash" }, Object.values(ui));
  el.append(root);
  let ctl = null;
  const cache = { titles: null, items: [] };

  const draw = () => {
    const spec = model.get("spec") ?? {};
    const view = store.view;
    const parts = Array.isArray(spec.parts) ? spec.parts : PARTS;
    const show = (part, box) => ((box.hidden = !parts.includes(part)), !box.hidden);
    if (show("progress", ui.bars)) drawBars(ui.bars, view.bars);
    drawStatus(ui.status, view.status, view.hint);
    if (show("controls", ui.controls) && view.controls) {
      ctl ??= buildControls(ui.controls, model, spec.labels ?? {});
      updateControls(ctl, view.controls, view.status?.state);
    } else ui.controls.hidden = true;
    // A panel without a width yet is drawn again on a later frame, at its real width (else its
    // viewBox would be scaled and the 11 px text shrink).
    if (show("plot", ui.panels) && drawPanels(ui.panels, spec.panels, spec, store, cache)) later();
    if (show("table", ui.table)) drawTable(ui.table, view.table);
  };
  let retry = null;
  const later = () => {
    retry ??= setTimeout(() => ((retry = null), schedule()), 100);
  };

  let frame = null;
  const schedule = () => {
    if (frame === null) frame = raf(() => ((frame = null), draw()));
  };
  store.listeners.add(schedule);
  let width = 0;
  const ro = typeof ResizeObserver === "function"
    ? new ResizeObserver(() => root.clientWidth !== width && ((width = root.clientWidth), schedule()))
    : null;
  ro?.observe(root);
  // No hello here: the model-level store already holds every update since the widget was created.
  // A reloaded page gets only the last update, finds a gap and asks then (applyView). A message from
  // the page during a run makes JupyterLab show the kernel idle (it takes the subshell's status).
  draw();
  return () => {
    store.listeners.delete(schedule);
    if (frame !== null) cancelRaf(frame);
    if (retry !== null) clearTimeout(retry);
    ro?.disconnect();
    root.remove();
  };
}

export default { initialize, render };

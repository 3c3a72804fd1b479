// nbcallback training dashboard, the anywidget front end (issue #22): the `spec` and `view` traits and the
// `{type: "view"}` messages of the kernel (DashboardWidget in render_widget.py; a message's curve columns come as
// float32 binary buffers, put back by putBuffers; the trait's as JSON numbers). The bars, the status line and the
// metrics table come as HTML built by the kernel (render_html.py, the same as the final snapshot) and are inserted
// as they are, and so is the "where the time goes" bar (render_html.time_html, when a CallbackProfiler times the run);
// this module draws only the plot panels (their y ranges come from the kernel too: panels.y_range,
// the final PNG's rule) and the controls. A Dashboard(compare=...) also sets the `compare` trait once, a moment after
// the run's start (when they have been read): earlier runs' lines (overlay.py; their x and y as float32 binary
// buffers, decoded once by decodeCompare), drawn faint under the live ones, named in the legend and the tooltip; their
// table comes as HTML like the metrics table. No build step; the pure exports are tested with `node --test tests/js/`.

const PANEL_H = 220; // px, one panel's height (1 SVG unit = 1 CSS pixel)
const CHAR_W = 6.6; // px, a generous width of one 11 px character, for layout only
const KEYS = ["x", "y", "lo", "hi"];
const asArray = (v) => (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]);
const isNum = (v) => typeof v === "number" && Number.isFinite(v);
const r1 = (v) => Math.round(v * 10) / 10;
const sum = (values) => values.reduce((a, b) => a + b, 0);

/** A number for people: 4 significant digits, `1.2e-4` style below 1e-3 or from 1e5; "–" if missing. */
export function formatValue(v) {
  if (!isNum(v)) return "–";
  if (v === 0 || (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e5)) return String(Number(v.toPrecision(4)));
  const [m, e] = v.toExponential(3).split("e");
  return `${m.replace(/\.?0+$/, "")}e${Number(e)}`;
}

/** The learning rate typed by the user as a positive finite number, or null when it is not one. */
export function validLr(text) {
  const s = String(text ?? "").trim();
  const v = /^\+?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s) ? Number(s) : NaN;
  return isNum(v) && v > 0 ? v : null;
}

/** The tooltip text: "step 512 · train 0.2345 · eval loss 0.21". */
export const tooltipText = (stepWord, x, entries) =>
  [`${stepWord} ${Math.round(x)}`, ...entries.map(([label, v]) => `${label} ${formatValue(v)}`)].join(" · ");

/** A line's CSS colour: `var(--name, #fallback)` from spec.colors, a CSS colour as is, else the brand's. */
export function cssColor(colors, name) {
  const c = colors?.[name] ?? (/^(#|rgb|hsl|var\()/.test(name) ? name : ["--jp-brand-color1", "#1976d2"]);
  return Array.isArray(c) ? `var(${c[0]}, ${c[1]})` : c;
}

/** Rough text width in px: `per` per Latin character, about twice that per CJK character. */
export const textWidth = (text, per) =>
  sum([...String(text ?? "")].map((c) => (c.codePointAt(0) >= 0x2e80 ? 1.9 : 1) * per));

/** A delta's (or tail's) x, with its y, lo and hi cut or padded with null to x's length. A column is an array (the
 * `view` trait), float32 bytes (a `view` message's, put back by putBuffers) or, in a tail, one number. */
function columns(d) {
  const cols = Object.fromEntries(KEYS.map((k) => [k, typeof d?.[k] === "number" ? [d[k]] : float32Column(d?.[k])]));
  return Object.fromEntries(KEYS.map((k) => [k, k === "x" ? cols.x : cols.x.map((_, i) => cols[k][i] ?? null)]));
}

/** A `view` message's view with its columns put back (putBuffers). A widget manager that dropped the message's
 * buffers gets the view without its series, and the kernel is asked for everything again, with JSON columns from
 * then on (`hello` with `binary: false`; at most once per store). */
function viewOf(msg, buffers, model) {
  const paths = asArray(msg.buffer_paths);
  if (paths.length <= asArray(buffers).length) return putBuffers(msg.view, paths, buffers);
  const store = stores.get(model);
  if (store && !store.askedJson) {
    store.askedJson = true;
    model.send({ type: "hello", binary: false });
  }
  const { series, ...rest } = msg.view ?? {};
  return rest;
}

/** A `view` message's columns put back where the kernel took them out (its `buffer_paths`, the message's buffers:
 * render_widget.wire_series), as ipywidgets does for a trait's buffers; a path that leads nowhere is skipped. */
export function putBuffers(view, paths, buffers) {
  asArray(paths).forEach((path, i) => {
    const keys = asArray(path);
    const parent = keys.slice(0, -1).reduce((o, k) => (o && typeof o === "object" ? o[k] : undefined), view);
    const buffer = buffers?.[i];
    if (parent && typeof parent === "object" && keys.length && buffer !== undefined) parent[keys.at(-1)] = buffer;
  });
  return view;
}

/** Merge one series delta into its record (`{gen, x, y, lo, hi, tail}`, in place; `{}` at first): "replaced" (a new
 * generation from start 0), "ok" (cut to `start`, appended) or "gap" (ignored: the caller asks for the full view). */
export function mergeDelta(rec, delta) {
  if (!delta || typeof delta !== "object") return "ok";
  const start = Number.isInteger(delta.start) ? delta.start : 0;
  const fresh = !("gen" in rec) || rec.gen !== delta.gen;
  if (fresh ? start !== 0 : start > rec.x.length) return "gap";
  if (fresh) Object.assign(rec, { gen: delta.gen, x: [], y: [], lo: [], hi: [] });
  const cols = columns(delta);
  for (const k of KEYS) rec[k].splice(start, Infinity, ...cols[k]);
  const tail = columns(delta.tail); // replaced by every delta; null (or absent) removes it
  rec.tail = tail.x.length ? tail : null;
  return fresh ? "replaced" : "ok";
}

/** A column of a curve as numbers: float32 bytes (a DataView, an ArrayBuffer or a typed array: how the
 * widget manager hands over a binary buffer) become an array with null for NaN (a value the run did not have); an
 * array is kept as it is; anything else is empty. */
export function float32Column(v) {
  if (Array.isArray(v)) return v;
  const view = v instanceof ArrayBuffer ? new DataView(v) : ArrayBuffer.isView(v) ? v : null;
  if (!view) return [];
  const n = Math.floor(view.byteLength / 4);
  const bytes = new Uint8Array(view.buffer, view.byteOffset, n * 4).slice(); // (a copy: 4-byte aligned)
  return Array.from(new Float32Array(bytes.buffer), (x) => (Number.isNaN(x) ? null : x));
}

/** The `compare` trait (Overlay.to_widget in the kernel) with its lines' binary columns decoded, once per change:
 * `{runs: [{label, name, hover, color, status, series: {key: {x, y}}}]}`; a malformed one gives no runs. */
export function decodeCompare(trait) {
  const runs = asArray(trait?.runs).filter((run) => run && typeof run === "object");
  return {
    runs: runs.map((run) => {
      const series = run.series && typeof run.series === "object" ? run.series : {};
      const lines = Object.entries(series).map(([key, c]) => [key, { x: float32Column(c?.x), y: float32Column(c?.y) }]);
      return { ...run, series: Object.fromEntries(lines) };
    }),
  };
}

/** The earlier runs drawn in a panel (the `compare` trait as decodeCompare gives it): for each run with data for
 * one of the panel's lines, `{run, line, pts}` (pts: its x and y), in the panel's line order, runs newest first. */
export function overlayLines(compare, panel) {
  const out = [];
  for (const run of asArray(compare?.runs)) {
    if (!run || typeof run !== "object") continue;
    for (const line of asArray(panel?.lines)) {
      const cols = run.series?.[line?.key];
      const x = asArray(cols?.x);
      if (x.length) out.push({ run, line, pts: { x, y: x.map((_, i) => asArray(cols.y)[i] ?? null) } });
    }
  }
  return out;
}

/** Legend items laid out in rows of at most `room` px (each row right-aligned at `right`): `[{x, row}]`. */
export function legendRows(widths, room, right) {
  const rows = [[]];
  let used = 0;
  widths.forEach((w, i) => {
    if (used + w > room && rows.at(-1).length) {
      rows.push([]);
      used = 0;
    }
    rows.at(-1).push(i);
    used += w;
  });
  const out = [];
  rows.forEach((items, row) => {
    let x = right - sum(items.map((i) => widths[i]));
    for (const i of items) {
      out[i] = { x: Math.max(0, x), row };
      x += widths[i];
    }
  });
  return out;
}

/** A model's store: the latest view (without series), the merged series, the earlier runs (decodeCompare), when it
 * last said hello, whether it asked for JSON columns (viewOf), the redraw listeners. */
export const createStore = () =>
  ({ view: {}, series: {}, compare: { runs: [] }, lastHello: -Infinity, askedJson: false, listeners: new Set() });

/** Apply one `view` (trait or `msg:custom`): its keys but `series` replace the last view's, series deltas merge.
 * True when a gap was found and a hello may be sent (at most once a second). */
export function applyView(store, view, now = Date.now()) {
  if (!view || typeof view !== "object") return false;
  const { series, ...rest } = view;
  store.view = rest;
  let gap = false;
  for (const [key, delta] of Object.entries(series ?? {})) {
    const rec = store.series[key] ?? {};
    if (mergeDelta(rec, delta) === "gap") gap = true;
    else store.series[key] = rec;
  }
  if (!gap || now - store.lastHello < 1000) return false;
  store.lastHello = now;
  return true;
}

/** The drawable points of a series record: its arrays followed by the provisional tail. */
export const seriesPoints = (rec) =>
  Object.fromEntries(KEYS.map((k) => [k, asArray(rec?.[k]).concat(rec?.tail ? rec.tail[k] : [])]));

/** About `n` round ticks (1, 2 or 5 times a power of ten apart) inside [lo, hi]. */
export function niceTicks(lo, hi, n = 5) {
  if (!isNum(lo) || !isNum(hi)) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  if (lo === hi) return [lo];
  const raw = (hi - lo) / Math.max(1, n);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3 ? 2 : raw / mag < 7 ? 5 : 10);
  const first = Math.ceil(lo / step - 1e-9);
  const count = Math.floor(hi / step + 1e-9) - first + 1;
  return Array.from({ length: count }, (_, i) => Number(((first + i) * step).toPrecision(12)));
}

/** Log-axis ticks inside [lo, hi]: decades (at most ~6), with 2 and 5 when the range spans two decades at most. */
export function logTicks(lo, hi) {
  if (!isNum(lo) || !isNum(hi) || lo <= 0 || hi <= 0) return [];
  if (lo > hi) [lo, hi] = [hi, lo];
  const [d0, d1] = [Math.floor(Math.log10(lo)), Math.ceil(Math.log10(hi))];
  const out = [];
  for (let d = d0; d <= d1; d += Math.max(1, Math.ceil((d1 - d0) / 6))) {
    for (const m of Math.log10(hi / lo) <= 2 ? [1, 2, 5] : [1]) out.push(Number((m * 10 ** d).toPrecision(12)));
  }
  const inside = out.filter((v) => v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9));
  return inside.length >= 2 ? inside : niceTicks(lo, hi, 3).filter((v) => v > 0);
}

/** Data to pixels, linear or log (NaN if missing, or v <= 0 on a log scale); `invert` maps pixels back. */
export function makeScale(domain, [r0, r1], kind = "linear") {
  const log = kind === "log";
  const t = (v) => (typeof v !== "number" ? NaN : log ? (v > 0 ? Math.log10(v) : NaN) : v);
  const [d0, d1] = domain.map(t);
  const flat = !(isNum(d0) && isNum(d1)) || d0 === d1; // a one-point domain maps to the middle
  const scale = (v) => (!isNum(t(v)) ? NaN : flat ? (r0 + r1) / 2 : r0 + ((t(v) - d0) / (d1 - d0)) * (r1 - r0));
  const back = (tv) => (log ? 10 ** tv : tv);
  scale.invert = (px) => back(flat ? d0 : d0 + ((px - r0) / (r1 - r0)) * (d1 - d0));
  return scale;
}

/** The planned `x_range`, grown to the data; never a single point. */
export function xDomain(xRange, xs) {
  const vals = asArray(xRange).concat(xs).filter(isNum);
  const [lo, hi] = vals.length ? [Math.min(...vals), Math.max(...vals)] : [0, 1];
  return hi > lo ? [lo, hi] : [lo, lo + 1];
}

/** A panel's y range as the kernel computed it (panels.y_range in Python, the final PNG's rule); a default one
 * while the panel has no data. */
export function panelRange(range, kind = "linear") {
  const ok = Array.isArray(range) && range.length === 2 && range.every(isNum) && range[0] < range[1];
  return ok && (kind !== "log" || range[0] > 0) ? range : kind === "log" ? [0.1, 1] : [0, 1];
}

/** Runs of consecutive points where x and every column scale to a number; a point [x, y] prints as "x,y". */
function segments(xs, cols, sx, sy) {
  const out = [];
  let run = null;
  xs.forEach((x, i) => {
    const p = [sx(x), ...cols.map((c) => sy(c[i]))].map(r1);
    if (!p.every(isNum)) run = null;
    else if (run) run.push(p);
    else out.push((run = [p]));
  });
  return out;
}

// SVG path data: a polyline, a step line (each value holds until the next x) and a band's closed areas (runs of
// two or more points). A null or unscalable value breaks them; "h0" draws a lone point as a dot.
const paths = (runs, draw) => runs.map((run) => draw(run) + (run.length === 1 ? "h0" : "")).join("");
export const linePath = (xs, ys, sx, sy) => paths(segments(xs, [ys], sx, sy), (run) => `M${run.join("L")}`);
const steps = ([first, ...rest]) => `M${first}${rest.map(([x, y]) => `H${x}V${y}`).join("")}`;
export const stepPath = (xs, ys, sx, sy) => paths(segments(xs, [ys], sx, sy), steps);
function area(run) {  // along the top (hi) from left to right, back along the bottom (lo)
  const top = run.map(([x, hi]) => [x, hi]);
  const bottom = run.map(([x, , lo]) => [x, lo]).reverse();
  return `M${[...top, ...bottom].join("L")}Z`;
}
export const bandPath = (xs, lo, hi, sx, sy) =>
  segments(xs, [hi, lo], sx, sy).filter((run) => run.length > 1).map(area).join("");

/** Whether a band holds raw values (one step per bucket: lo === hi): a faint line, its values in the y range. */
export const isRawBand = (lo, hi) => lo.length > 0 && lo.every((v, i) => v === hi[i]);
/** Indices where a step series changes value (markers for the learning-rate panel). */
export const stepChanges = (ys) => ys.flatMap((y, i) => (isNum(y) && isNum(ys[i - 1]) && y !== ys[i - 1] ? i : []));
/** Index of the x nearest to `x` (the first of two as near); -1 when there is none. */
export const nearestIndex = (xs, x) =>
  !xs?.length || !isNum(x) ? -1 : xs.reduce((best, v, i) => (Math.abs(v - x) < Math.abs(xs[best] - x) ? i : best), 0);

/** The value a line shows at step `x`: a step line's last value at or before x, else its nearest point. */
export function valueAt(points, style, x) {
  const near = nearestIndex(points.x, x);
  const i = style === "step" && points.x[near] > x ? near - 1 : near;
  return i >= 0 ? { i, x: points.x[i], y: points.y[i] } : null;
}

const stores = new WeakMap();
export const getStore = (model) => stores.get(model); // undefined before `initialize`

/** The store of a model, made on the first call and fed by view changes and `msg:custom`. anywidget hands
 * `initialize` and each view a model of their own: each gets its store. */
function connect(model) {
  if (stores.has(model)) return stores.get(model);
  const store = createStore();
  const redraw = () => store.listeners.forEach((listener) => listener());
  const take = (view) => {
    if (applyView(store, view)) model.send({ type: "hello" });
    redraw();
  };
  const handlers = Object.entries({
    "change:view": () => take(model.get("view")),
    "msg:custom": (msg, buffers) => msg?.type === "view" && take(viewOf(msg, buffers, model)),
    "change:spec": redraw,
    "change:compare": () => {
      store.compare = decodeCompare(model.get("compare"));
      redraw();
    },
  });
  handlers.forEach(([event, fn]) => model.on(event, fn));
  store.off = () => handlers.forEach(([event, fn]) => model.off(event, fn));
  stores.set(model, store);
  store.compare = decodeCompare(model.get("compare"));
  if (Object.keys(model.get("view") ?? {}).length) take(model.get("view"));
  return store;
}

function initialize({ model }) {
  const store = connect(model);
  return () => {
    store.off();
    stores.delete(model);
  };
}

/** An element with attributes and children (null, undefined and false ones left out); `svg:` tags are SVG. */
function h(tag, attrs = {}, children = []) {
  const svg = tag.startsWith("svg:") && "http://www.w3.org/2000/svg";
  const el = svg ? document.createElementNS(svg, tag.slice(4)) : document.createElement(tag);
  const given = (v) => v !== null && v !== undefined && v !== false;
  for (const [k, v] of Object.entries(attrs)) if (given(v)) el.setAttribute(k, v);
  el.append(...asArray(children).filter(given));
  return el;
}

/** Which boxes of the dashboard show, from the spec's parts and the latest view: the controls (when the kernel sent
 * their state), the plot panels, the metrics table, the compared runs' table (a Dashboard(compare=...)) and the time
 * bar (when the view has its HTML: a CallbackProfiler times the run). */
export function shownBoxes(parts, view) {
  const has = (part) => asArray(parts).includes(part);
  return {
    controls: has("controls") && Boolean(view?.controls),
    panels: has("plot"),
    metrics: has("table"),
    compare: typeof view?.html?.compare === "string" && view.html.compare.length > 0,
    time: typeof view?.time === "string" && view.time.length > 0,
  };
}

/** Which controls can act: Stop while the run is live and not already stopping; the lr box while live with a
 * learning rate to change (none in a stand-alone evaluation). */
export function controlsState(ctl, state, stopping = false) {
  const live = Boolean(ctl?.enabled) && !["finished", "stopped", "error", "interrupted"].includes(state);
  return { stop: live && !stopping, lr: live && isNum(ctl?.lr) };
}

/** Stop and the learning-rate box, put in `box`; returns `update(controls, state)`, enabling them while live. */
function controls(box, model, labels) {
  const stop = h("button", { class: "nbc-stop", type: "button" }, labels.stop ?? "Stop");
  const input = h("input", { class: "nbc-lr", type: "text", inputmode: "decimal", size: 8, "aria-label": labels.lr });
  const apply = h("button", { class: "nbc-lr-apply", type: "button" }, labels.apply ?? "set");
  const applyLr = () => {
    const value = validLr(input.value);
    input.classList.toggle("nbc-invalid", value === null);
    input.setAttribute("aria-invalid", String(value === null));
    if (value !== null) model.send({ type: "lr", value });
  };
  let stopping = false;
  stop.addEventListener("click", () => {
    model.send({ type: "stop" });
    stop.textContent = labels.stopping ?? "stopping…";
    stop.disabled = stopping = true;
  });
  apply.addEventListener("click", applyLr);
  input.addEventListener("keydown", (e) => e.key === "Enter" && applyLr());
  input.addEventListener("input", () => input.classList.remove("nbc-invalid"));
  box.replaceChildren(stop, h("label", { class: "nbc-lr-label" }, [labels.lr ?? "lr", " ", input]), apply);
  return (ctl, state) => {
    const can = controlsState(ctl, state, stopping);
    stop.disabled = !can.stop;
    input.disabled = apply.disabled = !can.lr;
    input.placeholder = isNum(ctl?.lr) ? formatValue(ctl.lr) : "";
  };
}

/** One line's SVG and legend swatch, by style: band (area, bold line), step (change marks), points or line. */
function drawLine({ line: { style }, label, pts, color }, sx, sy, x, y) {
  const path = (cls, d, more) => h("svg:path", { class: cls, d, stroke: color, ...more });
  const d = style === "step" ? stepPath(pts.x, pts.y, sx, sy) : linePath(pts.x, pts.y, sx, sy);
  const stroke = isRawBand(pts.lo, pts.hi) ? color : "none"; // raw values: a faint line
  const marked = style === "step" ? stepChanges(pts.y) : style === "points" ? pts.x.map((_, i) => i) : [];
  const marks = marked.map((i) => [r1(sx(pts.x[i])), r1(sy(pts.y[i]))]).filter((c) => c.every(isNum));
  const data = [
    style === "band" && path("nbc-band", bandPath(pts.x, pts.lo, pts.hi, sx, sy), { fill: color, stroke }),
    path({ band: "nbc-line nbc-bold", points: "nbc-line nbc-thin" }[style] ?? "nbc-line", d),
    ...marks.map(([cx, cy]) => h("svg:circle", { cx, cy, r: style === "step" ? 3 : 3.5, fill: color })),
  ];
  const legend = [
    style === "band" && h("svg:rect", { x, y: y - 5, width: 18, height: 10, fill: color, class: "nbc-band" }),
    h("svg:line", { x1: x, x2: x + 18, y1: y, y2: y, stroke: color, "stroke-width": style === "band" ? 2.5 : 1.5 }),
    ["points", "step"].includes(style) && h("svg:circle", { cx: x + 9, cy: y, r: 3, fill: color }),
    h("svg:text", { class: "nbc-legend", x: x + 22, y, dy: "0.32em" }, label),
  ];
  return { data, legend };
}

/** An earlier run's faint line in a panel (under the live lines), its `<title>` naming the run, and its legend. */
function drawOverlay({ run, line: { style }, pts }, sx, sy) {
  const d = style === "step" ? stepPath(pts.x, pts.y, sx, sy) : linePath(pts.x, pts.y, sx, sy);
  const attrs = { class: `nbc-overlay${style === "points" ? " nbc-overlay-points" : ""}`, d, stroke: run.color };
  const marks = style === "points"
    ? pts.x.map((x, i) => [r1(sx(x)), r1(sy(pts.y[i]))]).filter((c) => c.every(isNum)) : [];
  return h("svg:g", { class: "nbc-run", "data-run": run.label }, [
    h("svg:title", {}, String(run.hover ?? run.label ?? "")),
    h("svg:path", attrs),
    ...marks.map(([cx, cy]) => h("svg:circle", { class: "nbc-overlay-mark", cx, cy, r: 2.2, fill: run.color })),
  ]);
}

/** Draw panel `p` (its box, tooltip and last mouse x) from the spec and the store; `p.hover(clientX)` follows the
 * mouse with a guide line, dots and the tooltip (none for null or off the plot). */
function drawPanel(panel, spec, store, p, compare) {
  const width = Math.max(200, Math.round(p.box.clientWidth || 480));
  const kind = panel.scale === "log" ? "log" : "linear";
  const title = panel.title ?? "";
  const clipId = `nbc-clip-${Math.random().toString(36).slice(2)}`;
  const lines = asArray(panel.lines)
    .map((line) => ({ line, label: line?.label ?? line?.key, color: cssColor(spec.colors, line?.color) }))
    .map((l) => ({ ...l, pts: seriesPoints(store.series[l.line?.key]) }))
    .filter(({ line, pts }) => line && pts.x.length > 0);
  const earlier = overlayLines(compare, panel);
  const runs = [...new Map(earlier.map((o) => [o.run.label, o.run])).values()]; // one legend item per run
  const xd = xDomain(spec.x_range, lines.flatMap(({ pts }) => pts.x).concat(earlier.flatMap(({ pts }) => pts.x)));
  const yd = panelRange(panel.y_range, kind);
  const yTicks = kind === "log" ? logTicks(...yd) : niceTicks(...yd, 5);
  // The title and the right-aligned legend share the top row when they fit; else the legend goes below.
  const legendW = lines.map(({ label }) => 26 + textWidth(label, CHAR_W));
  const [titleW, right, bottom] = [textWidth(title, 7.8) + 16, width - 18, PANEL_H - 24];
  const oneRow = titleW + sum(legendW) <= right;
  const left = Math.max(38, 12 + Math.max(0, ...yTicks.map((t) => formatValue(t).length)) * CHAR_W);
  // The earlier runs' names: rows of their own under the live lines' legend, wrapped to the panel's width.
  const runW = runs.map((run) => 26 + textWidth(run.label, CHAR_W));
  const runAt = legendRows(runW, right - left, right);
  const runRows = runs.length ? Math.max(...runAt.map(({ row }) => row)) + 1 : 0;
  const liveRows = oneRow || !lines.length ? 0 : 1;
  const top = 30 + 18 * (liveRows + runRows);
  const legendX = Math.max(oneRow ? titleW : left, right - sum(legendW));
  const [sx, sy] = [makeScale(xd, [left, right]), makeScale(yd, [bottom, top], kind)];
  const drawn = lines.map((l, k) => drawLine(l, sx, sy, legendX + sum(legendW.slice(0, k)), oneRow ? 16 : 36));
  const runY = (row) => 16 + 18 * (1 + liveRows + row); // under the title row and the live lines' legend row
  const runLegend = runs.flatMap((run, k) => {
    const [x, y] = [runAt[k].x, runY(runAt[k].row)];
    return [
      h("svg:line", { class: "nbc-overlay", x1: x, x2: x + 18, y1: y, y2: y, stroke: run.color }),
      h("svg:text", { class: "nbc-legend nbc-run-label", x: x + 22, y, dy: "0.32em" }, [
        h("svg:title", {}, String(run.hover ?? run.label)), run.label]),
    ];
  });
  const xTicks = niceTicks(...xd, Math.max(2, Math.floor((right - left) / 80))).filter(Number.isInteger);
  const marks = asArray(spec.epoch_marks).filter((x) => isNum(x) && x >= xd[0] && x <= xd[1]);
  const tick = (attrs, t) => h("svg:text", { class: "nbc-tick", ...attrs }, formatValue(t));
  const stepWord = spec.labels?.step ?? "step";
  const overlay = h("svg:g");
  const clip = h("svg:rect", { x: left - 4, y: top - 4, width: right - left + 8, height: bottom - top + 8 });
  const attrs = { viewBox: `0 0 ${width} ${PANEL_H}`, height: PANEL_H, role: "img", "aria-label": title };
  p.box.replaceChildren(h("svg:svg", attrs, [
    h("svg:defs", {}, h("svg:clipPath", { id: clipId }, clip)),
    h("svg:text", { class: "nbc-title", x: 4, y: 16, dy: "0.32em" }, title),
    ...yTicks.map((t) => h("svg:line", { class: "nbc-grid", x1: left, x2: right, y1: r1(sy(t)), y2: r1(sy(t)) })),
    ...marks.map((x) => h("svg:line", { class: "nbc-epoch", x1: r1(sx(x)), x2: r1(sx(x)), y1: top, y2: bottom })),
    h("svg:path", { class: "nbc-axis", d: `M${left},${top}V${bottom}H${right}` }),
    ...yTicks.map((t) => tick({ x: left - 6, y: r1(sy(t)), dy: "0.32em", "text-anchor": "end" }, t)),
    ...xTicks.map((t) => tick({ x: r1(sx(t)), y: bottom + 16, "text-anchor": "middle" }, t)),
    h("svg:text", { class: "nbc-tick", x: 4, y: bottom + 16 }, stepWord),
    h("svg:g", { "clip-path": `url(#${clipId})` }, [
      ...earlier.map((o) => drawOverlay(o, sx, sy)),
      ...drawn.flatMap((l) => l.data),
    ]),
    ...drawn.flatMap((l) => l.legend),
    ...runLegend,
    overlay,
  ]), p.tip);

  const xs = [...new Set(lines.concat(earlier).flatMap(({ pts }) => pts.x.filter(isNum)))].sort((a, b) => a - b);
  p.hover = (clientX) => {
    const rect = p.box.getBoundingClientRect();
    const mx = clientX === null ? NaN : ((clientX - rect.left) * width) / (rect.width || 1);
    const x = mx >= left - 8 && mx <= right + 8 ? xs[nearestIndex(xs, sx.invert(mx))] : NaN;
    p.tip.hidden = !isNum(x);
    if (!isNum(x)) return overlay.replaceChildren();
    const px = r1(sx(x));
    const shown = lines
      .map((l) => ({ ...l, at: valueAt(l.pts, l.line.style, x) }))
      .filter(({ line, at }) => isNum(at?.y) && (line.style === "step" || Math.abs(sx(at.x) - sx(x)) <= 12));
    const before = earlier
      .map((o) => ({ label: o.run.label, color: o.run.color, at: valueAt(o.pts, o.line.style, x), style: o.line.style }))
      .filter(({ style, at }) => isNum(at?.y) && (style === "step" || Math.abs(sx(at.x) - sx(x)) <= 12));
    const dot = ({ at, color }) => h("svg:circle", { class: "nbc-dot", cx: px, cy: r1(sy(at.y)), r: 4, stroke: color });
    const guide = h("svg:line", { class: "nbc-guide", x1: px, x2: px, y1: top, y2: bottom });
    overlay.replaceChildren(guide, ...shown.concat(before).filter(({ at }) => isNum(sy(at.y))).map(dot));
    p.tip.textContent = tooltipText(stepWord, x, shown.concat(before).map(({ label, at }) => [label, at.y]));
    const room = p.box.clientWidth || right;
    const tipLeft = px + 12 + p.tip.offsetWidth > room ? Math.max(0, px - 12 - p.tip.offsetWidth) : px + 12;
    Object.assign(p.tip.style, { left: `${tipLeft}px`, top: `${top}px` });
  };
  p.hover(p.mouse);
}

function panelBox(title) {
  const p = { box: h("div", { class: "nbc-panel", "data-title": title }), mouse: null };
  p.tip = h("div", { class: "nbc-tip", role: "tooltip" });
  p.tip.hidden = true;
  const track = (x) => {  // remembered, so a redraw keeps the hover where the mouse is
    p.mouse = x;
    p.hover?.(x);
  };
  p.box.addEventListener("mousemove", (e) => track(e.clientX));
  p.box.addEventListener("mouseleave", () => track(null));
  return p;
}

function render({ model, el }) {
  const store = connect(model);
  const ui = {};
  for (const k of ["head", "controls", "panels", "metrics", "compare"]) ui[k] = h("div", { class: `nbc-${k}` });
  ui.time = h("div", { class: "nbc-timebox" }); // the kernel's HTML inside is the .nbc-time panel
  const root = h("div", { class: "nbc-dash" }, Object.values(ui));
  el.append(root);
  let update = null; // the controls, made when first shown
  let panels = [];
  let frame = null;
  let width = 0;
  const schedule = () => (frame ??= requestAnimationFrame(draw));
  const html = (box, text) => box.dataset.html !== text && ((box.dataset.html = text), (box.innerHTML = text));

  const drawPanels = (spec, ranges) => {
    const list = asArray(spec.panels).filter((x) => x && typeof x === "object");
    const titles = list.map((x) => String(x.title ?? ""));
    if (titles.join("\n") !== panels.map((p) => p.box.dataset.title).join("\n")) {
      panels = titles.map(panelBox);
      ui.panels.replaceChildren(...panels.map((p) => p.box));
    }
    // A panel at width 0 for a moment (a theme switch hides the output) keeps its picture; the resize observer has
    // it drawn again at its real width (drawn now, its viewBox would be scaled and its 11 px text shrink).
    list.forEach((panel, k) => {
      const drawn = { ...panel, y_range: asArray(ranges)[k] };
      if (panels[k].box.clientWidth || !panels[k].hover) drawPanel(drawn, spec, store, panels[k], store.compare);
    });
  };

  function draw() {
    frame = null;
    const spec = model.get("spec") ?? {};
    const view = store.view;
    const parts = Array.isArray(spec.parts) ? spec.parts : ["progress", "table", "plot", "controls"];
    for (const [k, shown] of Object.entries(shownBoxes(parts, view))) ui[k].hidden = !shown;
    html(ui.head, String(view.html?.head ?? ""));
    html(ui.metrics, String(view.html?.table ?? ""));
    html(ui.compare, String(view.html?.compare ?? ""));
    html(ui.time, ui.time.hidden ? "" : view.time);
    if (!ui.controls.hidden) {
      update ??= controls(ui.controls, model, spec.labels ?? {});
      update(view.controls, view.state);
    }
    if (!ui.panels.hidden) drawPanels(spec, view.y_ranges);
  }

  store.listeners.add(schedule);
  const ro = new ResizeObserver(() => root.clientWidth !== width && ((width = root.clientWidth), schedule()));
  ro.observe(root);
  // No hello here: a store that missed updates (a reloaded page) finds a gap and asks then (a message from the page
  // during a run makes JupyterLab show the kernel idle, as its subshell).
  draw();
  return () => {
    store.listeners.delete(schedule);
    cancelAnimationFrame(frame);
    ro.disconnect();
    root.remove();
  };
}

export default { initialize, render };

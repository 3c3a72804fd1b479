// Unit tests of the dashboard front end's pure functions (node's built-in runner: `node --test tests/js/`).
import test from "node:test";
import assert from "node:assert/strict";

import dashboard, {
  textWidth,
  applyView,
  controlsState,
  bandPath,
  isRawBand,
  createStore,
  cssColor,
  formatValue,
  getStore,
  linePath,
  logTicks,
  makeScale,
  mergeDelta,
  nearestIndex,
  niceTicks,
  panelRange,
  putBuffers,
  seriesPoints,
  stepChanges,
  stepPath,
  tooltipText,
  validLr,
  valueAt,
  xDomain,
} from "../../nbcallback/widgets/static/dashboard.js";

// identity-like scales: x * 10 px, y flipped on a 100 px tall area
const sx = makeScale([0, 10], [0, 100]);
const sy = makeScale([0, 1], [100, 0]);

test("formatValue: 4 significant digits, exponent style for tiny and huge, dash for missing", () => {
  assert.equal(formatValue(0.23454), "0.2345");
  assert.equal(formatValue(2.3), "2.3");
  assert.equal(formatValue(512), "512");
  assert.equal(formatValue(1234.56), "1235");
  assert.equal(formatValue(0), "0");
  assert.equal(formatValue(-0.5), "-0.5");
  assert.equal(formatValue(0.00012), "1.2e-4");
  assert.equal(formatValue(1e-4), "1e-4");
  assert.equal(formatValue(123456), "1.235e5");
  assert.equal(formatValue(0.001), "0.001");
  for (const bad of [null, undefined, NaN, Infinity, "0.5"]) assert.equal(formatValue(bad), "–");
});

test("validLr accepts positive finite numbers only", () => {
  assert.equal(validLr("0.01"), 0.01);
  assert.equal(validLr(" 1e-3 "), 0.001);
  assert.equal(validLr(".5"), 0.5);
  assert.equal(validLr("2"), 2);
  for (const bad of ["", "  ", "abc", "0", "0.0", "-0.1", "1e400", "Infinity", "NaN", "0x10", "0.01abc", null, undefined]) {
    assert.equal(validLr(bad), null, `rejects ${JSON.stringify(bad)}`);
  }
});

test("mergeDelta: first delta from start 0 replaces, a later generation replaces everything", () => {
  const rec = {};
  assert.equal(mergeDelta(rec, { gen: 1, start: 0, x: [1, 2], y: [0.9, 0.8], tail: null }), "replaced");
  assert.deepEqual([rec.gen, rec.x, rec.y, rec.lo, rec.hi, rec.tail], [1, [1, 2], [0.9, 0.8], [null, null], [null, null], null]);
  assert.equal(mergeDelta(rec, { gen: 2, start: 0, x: [5], y: [0.1], lo: [0.05], hi: [0.2] }), "replaced");
  assert.deepEqual([rec.gen, rec.x, rec.y, rec.lo, rec.hi], [2, [5], [0.1], [0.05], [0.2]]);
});

test("mergeDelta: same generation appends at the end, truncates and appends on overlap", () => {
  const rec = {};
  mergeDelta(rec, { gen: 0, start: 0, x: [1, 2, 3], y: [3, 2, 1], lo: [2, 1, 0], hi: [4, 3, 2] });
  assert.equal(mergeDelta(rec, { gen: 0, start: 3, x: [4], y: [0.5], lo: [0.4], hi: [0.6] }), "ok");
  assert.deepEqual(rec.x, [1, 2, 3, 4]);
  assert.deepEqual(rec.hi, [4, 3, 2, 0.6]);
  // the kernel re-sends its last bucket (re-decimated): overlap from index 2
  assert.equal(mergeDelta(rec, { gen: 0, start: 2, x: [3.5, 5], y: [0.7, 0.4], lo: [0.6, 0.3], hi: [0.8, 0.5] }), "ok");
  assert.deepEqual(rec.x, [1, 2, 3.5, 5]);
  assert.deepEqual(rec.y, [3, 2, 0.7, 0.4]);
  assert.deepEqual(rec.lo, [2, 1, 0.6, 0.3]);
});

test("mergeDelta: a gap or a new generation not from 0 is ignored and reported", () => {
  const rec = {};
  assert.equal(mergeDelta(rec, { gen: 0, start: 4, x: [9], y: [1] }), "gap");
  assert.deepEqual(rec, {}, "nothing stored from a delta that does not start at 0");
  mergeDelta(rec, { gen: 0, start: 0, x: [1, 2], y: [1, 2] });
  assert.equal(mergeDelta(rec, { gen: 0, start: 3, x: [4], y: [4] }), "gap");
  assert.equal(mergeDelta(rec, { gen: 1, start: 2, x: [3], y: [3] }), "gap");
  assert.deepEqual([rec.gen, rec.x, rec.y], [0, [1, 2], [1, 2]], "unchanged after the gaps");
});

test("mergeDelta: tail is replaced by each delta and cleared by null; arrays never get misaligned", () => {
  const rec = {};
  mergeDelta(rec, { gen: 0, start: 0, x: [1], y: [1], tail: { x: 7, y: 0.5, lo: 0.4, hi: 0.6 } });
  assert.deepEqual(rec.tail, { x: [7], y: [0.5], lo: [0.4], hi: [0.6] });
  mergeDelta(rec, { gen: 0, start: 1, x: [], y: [], tail: { x: [8], y: [0.45] } });
  assert.deepEqual(rec.tail, { x: [8], y: [0.45], lo: [null], hi: [null] });
  assert.deepEqual(seriesPoints(rec), { x: [1, 8], y: [1, 0.45], lo: [null, null], hi: [null, null] });
  mergeDelta(rec, { gen: 0, start: 1, x: [2], y: [0.9], tail: null });
  assert.equal(rec.tail, null);
  // y shorter than x is padded with null (a gap), longer is cut
  mergeDelta(rec, { gen: 0, start: 2, x: [3, 4], y: [0.8] });
  assert.deepEqual(rec.y, [1, 0.9, 0.8, null]);
  assert.equal(mergeDelta(rec, null), "ok", "a missing delta changes nothing");
  assert.deepEqual(rec.x, [1, 2, 3, 4]);
});

/** float32 bytes of `values` as a widget manager hands over a message's buffer (NaN for a missing value). */
const f32 = (values) => new DataView(new Float32Array(values.map((v) => v ?? NaN)).buffer);

test("a view message's binary columns are put back where the kernel took them out, then merged like arrays", () => {
  const msg = {
    type: "view",
    view: { html: { head: "<b>1</b>" }, series: { loss: { gen: 0, start: 0, x: null, y: null, lo: null, hi: null,
      tail: { x: 4, lo: 0.25, hi: 0.75, y: 0.5 } }, "eval:accuracy": { gen: 0, start: 0, x: null, y: null, tail: null } } },
    buffer_paths: [["series", "loss", "x"], ["series", "loss", "y"], ["series", "loss", "lo"], ["series", "loss", "hi"],
      ["series", "eval:accuracy", "x"], ["series", "eval:accuracy", "y"], ["series", "nowhere", "x"], []],
  };
  const buffers = [f32([1, 2, 3]), f32([0.5, null, 0.25]), f32([0.5, null, 0.125]), f32([0.5, null, 0.375]),
    f32([3]), f32([0.75]), f32([9]), f32([9])];
  const view = putBuffers(msg.view, msg.buffer_paths, buffers); // the last two paths lead nowhere: skipped
  const store = createStore();
  applyView(store, view, 0);
  assert.deepEqual(seriesPoints(store.series.loss),
    { x: [1, 2, 3, 4], y: [0.5, null, 0.25, 0.5], lo: [0.5, null, 0.125, 0.25], hi: [0.5, null, 0.375, 0.75] });
  assert.deepEqual(store.series["eval:accuracy"].y, [0.75]);
  assert.deepEqual(store.view.html, { head: "<b>1</b>" });
  assert.equal(putBuffers(null, [["a"]], [f32([1])]), null); // nothing to put them in
  assert.deepEqual(putBuffers({ a: 1 }, undefined, undefined), { a: 1 }); // a message without buffers
});

test("seriesPoints: arrays then tail; nothing for a missing record", () => {
  assert.deepEqual(seriesPoints(undefined), { x: [], y: [], lo: [], hi: [] });
  assert.deepEqual(seriesPoints({ x: [1], y: [2], lo: [null], hi: [null], tail: null }), { x: [1], y: [2], lo: [null], hi: [null] });
});

test("applyView: every key but series replaces the old view; series merge; gaps ask for hello once a second", () => {
  const store = createStore();
  const ask = applyView(store, { status: { state: "running", text: "running" }, series: { loss: { gen: 0, start: 0, x: [1], y: [2] } } }, 1000);
  assert.equal(ask, false);
  assert.deepEqual(store.view, { status: { state: "running", text: "running" } });
  assert.deepEqual(store.series.loss.x, [1]);
  assert.equal(applyView(store, { bars: [], series: { loss: { gen: 0, start: 5, x: [9], y: [1] } } }, 2000), true);
  assert.deepEqual(store.view, { bars: [] }, "status left out: no longer shown");
  assert.equal(applyView(store, { series: { "eval:acc": { gen: 0, start: 3, x: [9], y: [1] } } }, 2500), false, "throttled");
  assert.equal("eval:acc" in store.series, false, "a gap stores no empty record");
  assert.equal(applyView(store, { series: { loss: { gen: 0, start: 5, x: [9], y: [1] } } }, 3100), true);
  assert.equal(applyView(store, null), false);
});

test("niceTicks: 1-2-5 steps inside the range, rounded, degenerate ranges", () => {
  assert.deepEqual(niceTicks(0, 2814, 5), [0, 500, 1000, 1500, 2000, 2500]);
  assert.deepEqual(niceTicks(0.9, 0.98, 4), [0.9, 0.92, 0.94, 0.96, 0.98]);
  assert.deepEqual(niceTicks(-1, 1, 4), [-1, -0.5, 0, 0.5, 1]);
  assert.deepEqual(niceTicks(0.1, 0.3, 2), [0.1, 0.2, 0.3]);
  assert.deepEqual(niceTicks(1, 0, 2), [0, 0.5, 1], "reversed bounds");
  assert.deepEqual(niceTicks(3, 3), [3]);
  assert.deepEqual(niceTicks(NaN, 1), []);
  for (const [lo, hi, n] of [[0, 1e-9, 5], [1e6, 1e6 + 3, 5], [-7.3, 1234.5, 6]]) {
    const t = niceTicks(lo, hi, n);
    assert.ok(t.length >= 2 && t.length <= 2 * n + 1, `count for ${lo}..${hi}: ${t}`);
    assert.ok(t.every((v) => v >= lo - 1e-12 && v <= hi + 1e-12), `inside ${lo}..${hi}`);
  }
});

test("logTicks: decades, with 2 and 5 when the range is small; bad ranges", () => {
  assert.deepEqual(logTicks(0.05, 2.5), [0.05, 0.1, 0.2, 0.5, 1, 2]);
  assert.deepEqual(logTicks(1e-4, 10), [1e-4, 1e-3, 0.01, 0.1, 1, 10]);
  assert.deepEqual(logTicks(1e-12, 1), [1e-12, 1e-10, 1e-8, 1e-6, 1e-4, 0.01, 1], "every other decade when many");
  assert.deepEqual(logTicks(0.12, 0.18), [0.12, 0.14, 0.16, 0.18], "within one decade: plain ticks");
  assert.deepEqual(logTicks(0, 1), []);
  assert.deepEqual(logTicks(-1, 1), []);
});

test("makeScale: linear and log, missing values, one-point domain, invert", () => {
  const lin = makeScale([0, 10], [50, 150]);
  assert.equal(lin(5), 100);
  assert.equal(lin.invert(100), 5);
  assert.ok(Number.isNaN(lin(null)) && Number.isNaN(lin(undefined)));
  const log = makeScale([0.01, 1], [200, 0], "log");
  assert.equal(log(0.1), 100);
  assert.ok(Math.abs(log.invert(100) - 0.1) < 1e-12);
  assert.ok(Number.isNaN(log(0)) && Number.isNaN(log(-2)), "non-positive values are not drawn on a log axis");
  const flat = makeScale([3, 3], [0, 100]);
  assert.equal(flat(3), 50);
});

test("xDomain: planned range grows to the data; safe on empty and one point", () => {
  assert.deepEqual(xDomain([0, 2814], [1, 100]), [0, 2814]);
  assert.deepEqual(xDomain([0, 100], [50, 130]), [0, 130]);
  assert.deepEqual(xDomain([5, 5], []), [5, 6]);
  assert.deepEqual(xDomain(undefined, []), [0, 1]);
});

test("panelRange: the kernel's y range as given (panels.y_range); a default while a panel has none", () => {
  assert.deepEqual(panelRange([0.05, 2.6], "log"), [0.05, 2.6]);
  assert.deepEqual(panelRange([-1.5, 3], "linear"), [-1.5, 3]);
  assert.deepEqual(panelRange(null, "log"), [0.1, 1]);
  assert.deepEqual(panelRange(undefined, "linear"), [0, 1]);
  assert.deepEqual(panelRange([-1, 2], "log"), [0.1, 1]); // not drawable on a log axis
  assert.deepEqual(panelRange([2, 2], "linear"), [0, 1]);
});

test("linePath breaks at null, draws a lone point as a dot, skips unscalable values", () => {
  assert.equal(linePath([0, 1, 2, 3, 4], [0, 0.5, null, 1, 1], sx, sy), "M0,100L10,50M30,0L40,0");
  assert.equal(linePath([0, 1, 2], [null, 0.5, null], sx, sy), "M10,50h0");
  assert.equal(linePath([], [], sx, sy), "");
  assert.equal(linePath([0, 1], [null, null], sx, sy), "");
  const logY = makeScale([0.1, 1], [100, 0], "log");
  assert.equal(linePath([0, 1, 2], [1, 0, 0.1], sx, logY), "M0,0h0M20,100h0");
});

test("bandPath closes one area per run where lo and hi both exist", () => {
  assert.equal(bandPath([0, 1, 2], [0, 0, 0], [1, 1, 1], sx, sy), "M0,0L10,0L20,0L20,100L10,100L0,100Z");
  assert.equal(
    bandPath([0, 1, 2, 3, 4], [0, 0, 0, null, 0], [1, 1, null, 1, 1], sx, sy),
    "M0,0L10,0L10,100L0,100Z",
    "index 2 (no hi) and 3 (no lo) break it; the lone index 4 has no area",
  );
});

test("isRawBand: one step per bucket (lo === hi everywhere) is drawn as raw values", () => {
  assert.equal(isRawBand([0.5, 0.4, null], [0.5, 0.4, null]), true);
  assert.equal(isRawBand([0.5, 0.3], [0.5, 0.4]), false, "a bucket with a spread is a band");
  assert.equal(isRawBand([], []), false);
});

test("stepPath holds each value until the next x; stepChanges finds the changes", () => {
  assert.equal(stepPath([0, 5, 10], [1, 0.5, 0.5], sx, sy), "M0,0H50V50H100V50");
  assert.equal(stepPath([0, 5, 6, 10], [1, null, 0.5, 0.5], sx, sy), "M0,0h0M60,50H100V50");
  assert.deepEqual(stepChanges([0.01, 0.01, 0.005, 0.005, null, 0.001]), [2]);
  assert.deepEqual(stepChanges([]), []);
});

test("nearestIndex and valueAt: nearest point, step value at or before x", () => {
  const xs = [0, 10, 20, 40];
  assert.equal(nearestIndex(xs, 12), 1);
  assert.equal(nearestIndex(xs, 31), 3);
  assert.equal(nearestIndex(xs, -5), 0);
  assert.equal(nearestIndex(xs, 99), 3);
  assert.equal(nearestIndex([7], 0), 0);
  assert.equal(nearestIndex([], 3), -1);
  assert.equal(nearestIndex(xs, null), -1);
  const lr = { x: [0, 1200], y: [0.01, 0.005] };
  assert.deepEqual(valueAt(lr, "step", 1199), { i: 0, x: 0, y: 0.01 });
  assert.deepEqual(valueAt(lr, "step", 1500), { i: 1, x: 1200, y: 0.005 });
  assert.equal(valueAt({ x: [10], y: [1] }, "step", 5), null, "nothing before the first change");
  assert.deepEqual(valueAt({ x: [938, 1876], y: [0.3, 0.2] }, "points", 1000), { i: 0, x: 938, y: 0.3 });
});

test("tooltipText and cssColor", () => {
  assert.equal(tooltipText("step", 512, [["train", 0.23454], ["eval loss", 0.21]]), "step 512 · train 0.2345 · eval loss 0.21");
  assert.equal(tooltipText("Schritt", 3, [["lr", 0.0001]]), "Schritt 3 · lr 1e-4");
  assert.equal(tooltipText("step", 3, []), "step 3");
  const colors = { train: ["--jp-brand-color1", "#1976d2"] };
  assert.equal(cssColor(colors, "train"), "var(--jp-brand-color1, #1976d2)");
  assert.equal(cssColor(colors, "#ff0000"), "#ff0000");
  assert.equal(cssColor(undefined, "nope"), "var(--jp-brand-color1, #1976d2)");
});

// A fake anywidget model: enough of on/off/get/send for initialize (no DOM needed).
function fakeModel(initial = {}) {
  const handlers = {};
  const state = { ...initial };
  const sent = [];
  return {
    sent,
    handlers,
    get: (k) => state[k],
    set(k, v) {
      state[k] = v;
      (handlers[`change:${k}`] ?? []).forEach((f) => f());
    },
    custom: (msg, buffers = []) => (handlers["msg:custom"] ?? []).forEach((f) => f(msg, buffers)),
    on: (e, f) => (handlers[e] ??= []).push(f),
    off: (e, f) => (handlers[e] = (handlers[e] ?? []).filter((g) => g !== f)),
    send: (msg) => sent.push(msg),
  };
}

test("initialize: a model-level store fed by view changes and msg:custom; a gap sends hello", () => {
  const model = fakeModel({ spec: { parts: ["plot"] }, view: {} });
  const cleanup = dashboard.initialize({ model });
  const store = getStore(model);
  assert.ok(store, "store exists before any view renders");
  let changed = 0;
  store.listeners.add(() => changed++);

  model.set("view", { status: { state: "running", text: "running", note: "" }, series: { loss: { gen: 0, start: 0, x: [1, 2], y: [2.3, 2.1], lo: [2.2, 2], hi: [2.4, 2.2], tail: null } } });
  model.set("view", { status: { state: "running", text: "running" }, series: { loss: { gen: 0, start: 2, x: [3], y: [1.9], lo: [1.8], hi: [2], tail: { x: 4, y: 1.85 } } } });
  assert.deepEqual(store.series.loss.x, [1, 2, 3]);
  assert.deepEqual(seriesPoints(store.series.loss).y, [2.3, 2.1, 1.9, 1.85]);
  assert.equal(store.view.status.text, "running");
  assert.equal(changed, 2);
  assert.deepEqual(model.sent, []);

  model.set("view", { series: { loss: { gen: 0, start: 10, x: [11], y: [1] } } });
  assert.deepEqual(model.sent, [{ type: "hello" }], "a gap asks for the full view");
  assert.deepEqual(store.series.loss.x, [1, 2, 3], "the gapped delta is ignored");

  model.custom({ type: "view", view: { status: { state: "finished", text: "done" }, series: { loss: { gen: 0, start: 0, x: [1, 2, 3, 10, 11], y: [2.3, 2.1, 1.9, 1.2, 1] } } } });
  assert.deepEqual(store.series.loss.x, [1, 2, 3, 10, 11], "the full view repairs the gap");
  assert.equal(store.view.status.state, "finished");
  model.custom({ type: "other" });
  assert.equal(changed, 4);

  cleanup();
  assert.equal(getStore(model), undefined);
  assert.deepEqual(model.handlers["change:view"], []);
  assert.deepEqual(model.handlers["msg:custom"], []);
});

test("initialize: a view message's binary columns are merged; a manager that drops buffers gets JSON instead", () => {
  const model = fakeModel({ spec: { parts: ["plot"] }, view: {} });
  const cleanup = dashboard.initialize({ model });
  const store = getStore(model);
  const paths = [["series", "loss", "x"], ["series", "loss", "y"]];
  model.custom({ type: "view", view: { series: { loss: { gen: 0, start: 0, x: null, y: null } } }, buffer_paths: paths },
    [f32([1, 2]), f32([0.5, 0.25])]);
  assert.deepEqual(seriesPoints(store.series.loss).y, [0.5, 0.25]);
  assert.deepEqual(model.sent, []);
  // Buffers lost on the way (a widget manager that drops them): the rest of the view is shown, the series wait for
  // the full view, asked for once, with JSON columns from then on.
  for (const _ of [1, 2]) {
    model.custom({ type: "view", view: { html: { head: "<b>2</b>" }, series: { loss: { gen: 0, start: 2, x: null, y: null } } },
      buffer_paths: paths }, undefined);
  }
  assert.deepEqual(model.sent, [{ type: "hello", binary: false }]);
  assert.deepEqual(store.view.html, { head: "<b>2</b>" });
  assert.deepEqual(store.series.loss.x, [1, 2]);
  cleanup();
});

test("initialize picks up a view already set on the model", () => {
  const model = fakeModel({ view: { status: { state: "starting", text: "starting" }, series: { lr: { gen: 3, start: 0, x: [0], y: [0.01] } } } });
  dashboard.initialize({ model });
  assert.equal(getStore(model).view.status.state, "starting");
  assert.deepEqual(getStore(model).series.lr, { gen: 3, x: [0], y: [0.01], lo: [null], hi: [null], tail: null });
  assert.equal(typeof dashboard.render, "function");
});

test("textWidth: CJK characters count about twice a Latin one (legend and title room)", () => {
  assert.equal(textWidth("eval", 6), 24);
  assert.ok(textWidth("验证", 6) > 1.8 * textWidth("ev", 6));
  assert.equal(textWidth(null, 6), 0);
});

test("controlsState: Stop while live and not stopping, the lr box only where there is a learning rate", () => {
  const train = { enabled: true, lr: 0.01 };
  assert.deepEqual(controlsState(train, "running"), { stop: true, lr: true });
  assert.deepEqual(controlsState(train, "running", true), { stop: false, lr: true }); // Stop was pressed
  assert.deepEqual(controlsState({ enabled: true, lr: null }, "running"), { stop: true, lr: false }); // Model.eval
  for (const state of ["finished", "stopped", "error", "interrupted"]) {
    assert.deepEqual(controlsState(train, state), { stop: false, lr: false });
  }
  assert.deepEqual(controlsState({ enabled: false, lr: 0.01 }, "running"), { stop: false, lr: false });
  assert.deepEqual(controlsState(undefined, undefined), { stop: false, lr: false });
});

test("shownBoxes: the time bar shows only when the view has its HTML; the other boxes follow the spec's parts", async () => {
  const { shownBoxes } = await import("../../nbcallback/widgets/static/dashboard.js");
  const all = ["controls", "plot", "progress", "table"];
  assert.deepEqual(shownBoxes(all, { controls: { enabled: true } }),
    { controls: true, panels: true, metrics: true, compare: false, time: false });
  assert.equal(shownBoxes(all, { time: '<div class="nbc-time"></div>' }).time, true);
  assert.equal(shownBoxes(all, { time: "" }).time, false);
  for (const bad of [null, undefined, 3, {}]) assert.equal(shownBoxes(all, { time: bad }).time, false);
  assert.deepEqual(shownBoxes(["progress"], {}),
    { controls: false, panels: false, metrics: false, compare: false, time: false });
  assert.equal(shownBoxes(undefined, undefined).time, false);
});

test("render: the time bar's HTML goes in its own box, hidden while the view has none", async () => {
  // A minimal DOM, enough for render(): elements with attributes, children, innerHTML and hidden.
  class Node {
    constructor(tag) { Object.assign(this, { tag, attrs: {}, children: [], hidden: false, innerHTML: "", dataset: {} }); }
    setAttribute(k, v) { this.attrs[k] = String(v); }
    append(...kids) { this.children.push(...kids); }
    replaceChildren(...kids) { this.children = kids; }
    remove() {}
    addEventListener() {}
    get clientWidth() { return 600; }
  }
  const find = (node, cls) => node.attrs?.class === cls ? node
    : (node.children ?? []).map((c) => find(c, cls)).find(Boolean);
  globalThis.document = { createElement: (t) => new Node(t), createElementNS: (_, t) => new Node(t) };
  globalThis.ResizeObserver = class { observe() {} disconnect() {} };
  const frames = [];
  globalThis.requestAnimationFrame = (fn) => frames.push(fn);
  globalThis.cancelAnimationFrame = () => {};
  const listeners = {};
  const traits = { spec: { parts: ["progress", "table"] }, view: { html: { head: "<b>bars</b>" } } };
  const model = { get: (k) => traits[k], on: (e, fn) => (listeners[e] = fn), off() {}, send() {} };
  const el = new Node("div");
  const { default: dash } = await import("../../nbcallback/widgets/static/dashboard.js");
  const stop = dash.render({ model, el });
  const time = find(el, "nbc-timebox");
  assert.ok(time, "a box for the time bar");
  assert.equal(time.hidden, true);
  const bar = '<div class="nbc-time"><div class="nbc-time-bar"></div></div>';
  listeners["msg:custom"]({ type: "view", view: { html: { head: "<b>bars</b>" }, time: bar } });
  while (frames.length) frames.shift()();
  assert.equal(time.hidden, false);
  assert.equal(time.innerHTML, bar);
  assert.equal(find(el, "nbc-head").innerHTML, "<b>bars</b>");
  stop();
  for (const k of ["document", "ResizeObserver", "requestAnimationFrame", "cancelAnimationFrame"]) delete globalThis[k];
});

// Unit tests of the earlier runs' overlay in the dashboard front end (issue #47; `node --test tests/js/`).
import test from "node:test";
import assert from "node:assert/strict";

import {
  decodeCompare, float32Column, legendRows, overlayLines, shownBoxes, xDomain,
} from "../../nbcallback/widgets/static/dashboard.js";

// What Overlay.to_widget sends once, as the widget's `compare` trait, once decodeCompare has read its binary columns:
// two earlier runs, newest first.
const compare = {
  runs: [
    {
      label: "lr 0.1", name: "20260101-120000-000", hover: "lr 0.1 (20260101-120000-000)", color: "#ab47bc",
      status: "finished",
      series: { loss: { x: [1, 2, 3], y: [1.0, 0.8, 0.5] }, "eval:accuracy": { x: [3], y: [0.7] } },
    },
    {
      label: "batch 128", name: "base", hover: "batch 128 (base)", color: "#ec407a", status: "stopped",
      series: { loss: { x: [2, 4, 6, 8], y: [0.9, null, 0.4] } }, // y shorter than x: padded with null
    },
  ],
};
const lossPanel = { title: "loss", scale: "log", lines: [{ key: "loss", style: "band" }, { key: "eval:loss", style: "points" }] };
const accPanel = { title: "accuracy", lines: [{ key: "eval:accuracy", style: "points" }] };
const lrPanel = { title: "learning rate", lines: [{ key: "lr", style: "step" }] };

test("overlayLines: each earlier run's line for each of the panel's keys it has, runs newest first", () => {
  const loss = overlayLines(compare, lossPanel);
  assert.deepEqual(loss.map(({ run, line }) => [run.label, line.key]), [["lr 0.1", "loss"], ["batch 128", "loss"]]);
  assert.deepEqual(loss[0].pts, { x: [1, 2, 3], y: [1.0, 0.8, 0.5] });
  assert.deepEqual(loss[1].pts, { x: [2, 4, 6, 8], y: [0.9, null, 0.4, null] });
  const acc = overlayLines(compare, accPanel);
  assert.deepEqual(acc.map(({ run, line }) => [run.label, line.style]), [["lr 0.1", "points"]]);
  assert.deepEqual(overlayLines(compare, lrPanel), []); // no run has a learning-rate line
});

test("overlayLines: nothing to draw without a compare trait or with a malformed one", () => {
  for (const bad of [undefined, null, {}, { runs: null }, { runs: [null, 3, "x"] }, { runs: [{ series: null }] }]) {
    assert.deepEqual(overlayLines(bad, lossPanel), []);
  }
});

/** float32 bytes of `values` as a widget manager hands a binary buffer over: a DataView (NaN for a missing value). */
const buffer = (values, offset = 0) => {
  const bytes = new Uint8Array(offset + 4 * values.length);
  new Float32Array(values.length).forEach((_, i) => new DataView(bytes.buffer).setFloat32(offset + 4 * i, values[i] ?? NaN, true));
  return new DataView(bytes.buffer, offset);
};

test("float32Column: a binary buffer becomes numbers, NaN becomes null; arrays pass, anything else is empty", () => {
  assert.deepEqual(float32Column(buffer([1, 2.5, null, 0.25])), [1, 2.5, null, 0.25]);
  assert.deepEqual(float32Column(buffer([3, null], 1)), [3, null]); // at an odd offset in its buffer
  assert.deepEqual(float32Column(buffer([7]).buffer), [7]); // an ArrayBuffer
  assert.deepEqual(float32Column(new Float32Array([0.5, 4])), [0.5, 4]);
  assert.deepEqual(float32Column([1, null]), [1, null]);
  for (const bad of [undefined, null, 3, "x", {}]) assert.deepEqual(float32Column(bad), []);
  assert.equal(float32Column(buffer([0.1]))[0], Math.fround(0.1)); // float32: the panel shows 4 digits of it
});

/** A `compare` trait with plain arrays as the kernel sends it (Overlay.to_widget): each column as float32 bytes. */
const binary = (trait) => ({
  runs: trait.runs.map((run) => ({
    ...run,
    series: Object.fromEntries(Object.entries(run.series).map(([key, { x, y }]) => [key, { x: buffer(x), y: buffer(y) }])),
  })),
});

test("decodeCompare: the trait as the kernel sends it draws the same lines as plain arrays would", () => {
  const decoded = decodeCompare(binary(compare));
  assert.deepEqual(decoded.runs.map((run) => run.label), ["lr 0.1", "batch 128"]);
  const f32 = (values) => values.map((v) => (v === null ? null : Math.fround(v))); // what float32 keeps of them
  const expected = overlayLines(compare, lossPanel).map(({ pts }) => ({ x: f32(pts.x), y: f32(pts.y) }));
  assert.deepEqual(overlayLines(decoded, lossPanel).map(({ pts }) => pts), expected);
  assert.deepEqual(overlayLines(decoded, accPanel)[0].pts, { x: [3], y: [Math.fround(0.7)] });
  for (const bad of [undefined, null, {}, { runs: 3 }, { runs: [null, "x", { series: null }] }]) {
    assert.deepEqual(overlayLines(decodeCompare(bad), lossPanel), []);
  }
});

test("the x range grows to the earlier runs' lines (a longer earlier run is shown whole)", () => {
  const xs = overlayLines(compare, lossPanel).flatMap(({ pts }) => pts.x);
  assert.deepEqual(xDomain([0, 4], xs), [0, 8]);
  assert.deepEqual(xDomain([0, 10], xs), [0, 10]);
});

test("legendRows: the runs' names wrap into right-aligned rows that fit the panel", () => {
  assert.deepEqual(legendRows([60, 80], 400, 500), [{ x: 360, row: 0 }, { x: 420, row: 0 }]);
  const wrapped = legendRows([150, 150, 150], 320, 500);
  assert.deepEqual(wrapped.map(({ row }) => row), [0, 0, 1]);
  assert.deepEqual(wrapped.map(({ x }) => x), [200, 350, 350]);
  assert.deepEqual(legendRows([900], 300, 500), [{ x: 0, row: 0 }]); // too long for any row: its own, from the left
  assert.deepEqual(legendRows([], 300, 500), []);
});

test("shownBoxes: the compared runs' table shows when the kernel sent its HTML", () => {
  const parts = ["progress", "table", "plot", "controls"];
  assert.equal(shownBoxes(parts, { html: { compare: "<table></table>" } }).compare, true);
  assert.equal(shownBoxes(parts, { html: { table: "<table></table>" } }).compare, false);
  assert.equal(shownBoxes(parts, {}).compare, false);
});

test("render: the earlier runs are drawn faint under the live lines, named in the legend, the <title> and the tooltip", async () => {
  // A minimal DOM, enough for render() and drawPanel(): elements with attributes, children, events and a box.
  class Node {
    constructor(tag) {
      Object.assign(this, { tag, attrs: {}, children: [], hidden: false, innerHTML: "", dataset: {}, style: {},
        handlers: {}, textContent: "" });
    }
    setAttribute(k, v) { this.attrs[k] = String(v); }
    append(...kids) { this.children.push(...kids); }
    replaceChildren(...kids) { this.children = kids; }
    remove() {}
    addEventListener(e, fn) { this.handlers[e] = fn; }
    getBoundingClientRect() { return { left: 0, top: 0, width: 600, height: 220 }; }
    get clientWidth() { return 600; }
    get offsetWidth() { return 120; }
  }
  const all = (node, test, out = []) => {
    if (node && typeof node === "object") {
      if (test(node)) out.push(node);
      for (const c of node.children ?? []) all(c, test, out);
    }
    return out;
  };
  const text = (node) => (typeof node === "string" ? node : (node.children ?? []).map(text).join(""));
  globalThis.document = { createElement: (t) => new Node(t), createElementNS: (_, t) => new Node(t) };
  globalThis.ResizeObserver = class { observe() {} disconnect() {} };
  const frames = [];
  globalThis.requestAnimationFrame = (fn) => frames.push(fn);
  globalThis.cancelAnimationFrame = () => {};
  const listeners = {};
  const traits = {
    spec: { parts: ["plot", "table"], x_range: [0, 4], panels: [{ ...lossPanel, scale: "linear", lines: [
      { key: "loss", label: "train", color: "train", style: "band" }] }], labels: { step: "step" } },
    view: { html: { head: "", compare: '<table class="nbc-table nbc-compare"></table>' }, y_ranges: [[0, 1.2]],
      series: { loss: { gen: 1, start: 0, x: [1, 2], y: [1.1, 0.9], lo: [1.0, 0.8], hi: [1.2, 1.0] } } },
    compare: binary(compare), // as the kernel sends it: float32 buffers
  };
  const model = { get: (k) => traits[k], on: (e, fn) => (listeners[e] = fn), off() {}, send() {} };
  const el = new Node("div");
  const { default: dash } = await import("../../nbcallback/widgets/static/dashboard.js");
  dash.initialize({ model });
  const stop = dash.render({ model, el });
  while (frames.length) frames.shift()();
  const faint = all(el, (n) => n.tag === "path" && /nbc-overlay/.test(n.attrs.class ?? ""));
  assert.deepEqual(faint.map((n) => n.attrs.stroke), ["#ab47bc", "#ec407a"]); // one per run with a loss line
  assert.ok(faint.every((n) => n.attrs.d.startsWith("M")), "the paths have data");
  const groups = all(el, (n) => n.attrs?.class === "nbc-run");
  assert.deepEqual(groups.map((g) => text(g.children[0])), ["lr 0.1 (20260101-120000-000)", "batch 128 (base)"]);
  // under the live lines: the clipped group holds the earlier runs first
  const clipped = all(el, (n) => n.attrs?.["clip-path"])[0];
  const order = clipped.children.map((c) => c.attrs.class);
  assert.ok(order.indexOf("nbc-run") < order.findIndex((c) => /nbc-line/.test(c ?? "")), order);
  const legend = all(el, (n) => /nbc-run-label/.test(n.attrs?.class ?? ""));
  assert.deepEqual(legend.map((n) => n.children.at(-1)), ["lr 0.1", "batch 128"]); // named by what differs
  assert.deepEqual(legend.map((n) => text(n.children[0])), ["lr 0.1 (20260101-120000-000)", "batch 128 (base)"]);
  // the compared runs' table goes in its own box
  assert.equal(all(el, (n) => n.attrs?.class === "nbc-compare")[0].innerHTML, traits.view.html.compare);
  // hover at step 3 (x from 0 to 8: the longer earlier run; plot from 38 to 582 px): the tooltip names the run
  const box = all(el, (n) => n.attrs?.class === "nbc-panel")[0];
  box.handlers.mousemove({ clientX: 38 + (3 / 8) * (582 - 38) });
  const tip = all(el, (n) => n.attrs?.class === "nbc-tip")[0];
  assert.match(tip.textContent, /lr 0\.1 0\.5/);
  stop();
  for (const k of ["document", "ResizeObserver", "requestAnimationFrame", "cancelAnimationFrame"]) delete globalThis[k];
});

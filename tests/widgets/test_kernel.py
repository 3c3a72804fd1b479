"""Kernel-level tests: real ipykernel, real comms, saved notebooks.

* nbclient executes a small notebook; we read the comm traffic the way a front
  end would (the ``view`` deltas of the one anywidget model must add up to the
  series), count messages per second, and check the saved notebook (the static
  snapshot and the PNG in place of the widget, no widget state, nbconvert HTML).
* A jupyter_client session acts while a cell runs: the interrupt button, and
  the widget's ``stop`` / ``lr`` messages sent the way JupyterLab >= 4.4 sends
  them (over a kernel subshell), plus the background-thread mode.

Each kernel runs with OMP_NUM_THREADS=1 and tiny synthetic data.
"""
from __future__ import annotations

import base64
import io
import json
import re
import time

import nbformat
import pytest

from tests.widgets._kernel import (
    OUR_MODELS,
    SETUP,
    KernelSession,
    cell_text,
    make_notebook,
    our_widget_models,
    run_notebook,
    traffic_stats,
    view_in,
    widget_view_outputs,
)
from tests.widgets._reader import accumulate, float32, numbers

pytest.importorskip("ipykernel")
pytest.importorskip("nbclient")
pytest.importorskip("anywidget")

FIT_CELL = """\
print("before the run")
dash = Dashboard()
model.fit(3, train_ds, valid_ds, callbacks=[dash, Pace(0.004)])
print("after the run")
import json
print("SERIES " + json.dumps(dash.state.plot_data().series))
"""


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    """One notebook executed by nbclient, shared by the checks below."""
    tmp = tmp_path_factory.mktemp("nb")
    nb = make_notebook(
        [
            FIT_CELL,
            "metrics = model.eval(valid_ds, callbacks=[ProgressBar()])\nprint(metrics)",
            "model.train(1, train_ds, callbacks=[LiveLossPlot(), ProgressBar(), Pace(0.004)])",
            "model.fit(1, train_ds, valid_ds, callbacks=[Dashboard(display='final')])",
        ]
    )
    client, path = run_notebook(nb, tmp)
    return client, nbformat.read(path, as_version=4), path


def _series_printed(cell) -> dict:
    line = next(line for line in cell_text(cell).splitlines() if line.startswith("SERIES "))
    return json.loads(line[len("SERIES "):])


def test_one_widget_per_run_and_its_view_deltas_add_up_to_the_series(executed) -> None:
    client, nb, _ = executed
    views = client.widget_views(1)
    assert len(views) == 1, "one anywidget model for the whole dashboard"
    (comm_id, sent), = views.items()
    assert len(sent) >= 6  # the comm_open's full view, then about 3 updates a second while the 3 epochs trained
    spec = client.widget_specs(1)[comm_id]
    assert spec["parts"] == ["controls", "plot", "progress", "table"]  # ipykernel 7 + JupyterLab: controls
    assert spec["x_range"] == [0.0, 450.0] and spec["epoch_marks"] == [150.0, 300.0]
    assert [p["title"] for p in spec["panels"]] == ["loss", "accuracy"]
    # What the browser holds after merging every delta, as dashboard.js's mergeDelta does.
    readers = accumulate(sent)
    final = _series_printed(nb.cells[1])
    held = readers["loss"].points()
    n = len(held["x"])
    # The last refresh can come up to a third of a second before the end (then the snapshot replaces
    # the widget): the browser holds the run's series up to there, exactly.
    assert held["x"][:-1] == [int(x) for x in final["loss"]["x"][: n - 1]]
    for key in ("lo", "hi", "y"):  # float32, whether the numbers came as JSON (the comm_open's) or as buffers
        assert held[key][:-1] == float32(final["loss"][key][: n - 1]), key
    assert held["x"][-1] >= 300  # the last refresh came near the end (450); its exact step depends on timing
    accuracy = readers["eval:accuracy"].points()
    assert accuracy["x"] == final["eval:accuracy"]["x"][: len(accuracy["x"])] and len(accuracy["x"]) >= 2
    assert accuracy["y"] == float32(final["eval:accuracy"]["y"][: len(accuracy["y"])])
    # The widget opens with everything so far; each update carries only the new points: none resends the history.
    later = [len(numbers(v.get("series", {}).get("loss", {}).get("x"))) for v in sent[1:]]
    assert max(later) <= 200, later  # about a third of a second of steps each
    last = sent[-1]
    assert '<div class="nbc-bar" data-kind="epoch">' in last["html"]["head"] and last["state"] == "running"
    assert 'data-state="running"' in last["html"]["head"]


def test_live_traffic_is_throttled(executed) -> None:
    client, _, _ = executed
    stats = traffic_stats(client.cell_messages(1))
    print(json.dumps(stats, indent=1, default=str))
    types = stats["by_type"]
    # One DashboardWidget and the Layout model ipywidgets gives every DOMWidget: opened once, both closed.
    assert types["comm_open"] == 2 and types["comm_close"] == 2
    assert types["display_data"] == 2 and types["update_display_data"] == 1  # widget then PNG; the snapshot
    # The times are the kernel's (each message's header), so a busy test process reading late cannot bunch them.
    # The throttle's limits as lower bounds on that clock: what was sent took at least this long to send.
    assert stats["live_seconds"] > 1.5  # long enough to measure a rate
    live = stats["live_messages"]
    assert stats["live_seconds"] >= live / 5.0, stats  # 3 refreshes a second, one message each: at most 5 a second
    messages = client.cell_messages(1)
    opened = next(m[0] for m in messages if m[1] == "display_data")
    snapshot = [m[0] for m in messages if m[1] == "update_display_data"][-1]
    sent = sorted(m[0] for m in messages if m[1] == "comm_msg" and opened < m[0] < snapshot)  # as traffic_stats
    window = 9  # no second with more than 8: any 9 messages in a row span a second or more
    spans = [b - a for a, b in zip(sent, sent[window - 1:])]
    assert live < window or min(spans) >= 1.0, f"{window} messages within {min(spans):.2f} s"
    updates = [m for m in client.cell_messages(1) if m[1] == "comm_msg"]
    # A tick is small: a third of a second of points, not the whole series (the comm_open carries what came before).
    assert updates and max(m[2] for m in updates) <= 6144
    assert stats["live_seconds"] >= stats["live_bytes"] / 20_000, stats  # at most 20 kB a second


def test_the_snapshot_replaces_the_widget_in_the_saved_notebook(executed) -> None:
    client, nb, path = executed
    assert our_widget_models(nb) == []
    assert widget_view_outputs(nb) == 0
    assert set(client.opened) <= client.closed  # no widget model left open, in any cell
    nbformat.validate(nb)
    fit_cell = nb.cells[1]
    kinds = [out["output_type"] for out in fit_cell.outputs]
    assert kinds == ["stream", "display_data", "display_data", "stream"]  # other output of the cell survives
    snapshot = fit_cell.outputs[1]["data"]
    assert set(snapshot) == {"text/html", "text/plain"}
    plain = snapshot["text/plain"]
    assert plain.startswith("Training finished: 3/3 epochs, 450/450 steps")
    assert "accuracy" in plain and "eval_loss" in plain
    html = snapshot["text/html"]
    assert html.count("<tr>") == 4  # header + one row per evaluation
    assert html.count("width:100.0%") == 2 and "✔ finished" in html  # both bars full, the status
    assert "<img" not in html  # the plot is its own image/png output, which GitHub also renders
    plot = fit_cell.outputs[2]
    assert set(plot["data"]) == {"image/png", "text/plain"}
    raw = base64.b64decode(plot["data"]["image/png"])
    from PIL import Image

    from nbcallback.widgets.plot import PANEL_HEIGHT, PANEL_WIDTH

    image = Image.open(io.BytesIO(raw))
    assert image.size == (2 * 2 * PANEL_WIDTH, 2 * PANEL_HEIGHT)  # loss + accuracy at 2x
    assert plot["metadata"] == {"image/png": {"width": 2 * PANEL_WIDTH}}  # shown at CSS size
    fit_bytes = len(json.dumps(fit_cell))
    print(f"saved fit cell: {fit_bytes} bytes; whole notebook {path.stat().st_size} bytes; PNG {len(raw)} bytes")
    assert fit_bytes <= 80_000
    # `jupyter nbconvert --execute` (a stock nbclient) also saves closed widgets' last state: by then ours had
    # dropped its ES module and CSS, which the snapshot no longer needs.
    stock = [state for state in client.stock_state.values() if state.get("_model_name") in OUR_MODELS]
    assert len(stock) == 4  # the Dashboard, eval's ProgressBar, the two of cell 3 (display="final" opens none)
    assert all(state["_esm"] == "export default {};" and state["_css"] == "" for state in stock)
    stock_bytes = max(len(json.dumps(state, default=str)) for state in stock)
    print(f"largest widget state a stock nbclient saves: {stock_bytes} bytes")
    assert stock_bytes <= 8_000
    # The eval-only run left its own snapshot, without a plot.
    assert cell_text(nb.cells[2]).startswith("Evaluation finished: 30/30 steps")
    assert not any("image/png" in out.get("data", {}) for out in nb.cells[2].outputs)
    # display='final': nothing live, no widget at all, one snapshot and the PNG.
    assert not [m for m in client.cell_messages(4) if m[1].startswith("comm")]
    assert [out["output_type"] for out in nb.cells[4].outputs] == ["display_data", "display_data"]
    assert "image/png" in nb.cells[4].outputs[1]["data"]


def test_progress_bar_and_loss_plot_together_show_one_status_line(executed) -> None:
    client, nb, _ = executed
    views = client.widget_views(3)
    assert len(views) == 2
    specs = client.widget_specs(3)
    by_parts = {tuple(specs[cid]["parts"]): sent for cid, sent in views.items()}
    assert set(by_parts) == {("plot",), ("progress", "table")}
    assert not any("nbc-status" in v["html"]["head"] for v in by_parts[("plot",)])  # the plot leaves the status
    assert all('class="nbc-status-text"' in v["html"]["head"] for v in by_parts[("progress", "table")])  # to the bar
    outputs = nb.cells[3].outputs
    html = "".join(out.get("data", {}).get("text/html", "") for out in outputs)
    assert html.count("✔ finished") == 1
    assert sum("image/png" in out.get("data", {}) for out in outputs) == 1  # the plot's PNG in its place
    assert cell_text(nb.cells[3]).count("Training finished: 1/1 epochs") == 2  # the snapshot and the PNG's alt text


def test_nbconvert_html_without_a_kernel(executed) -> None:
    from nbconvert import HTMLExporter

    _, nb, _ = executed
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "Training finished: 3/3 epochs" in body
    assert re.search(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/]{1000}', body)
    assert "application/vnd.jupyter.widget-view+json" not in body
    assert "Error displaying widget" not in body


def _comm_of_run(ks: KernelSession, cell: str) -> str:
    """The comm id of the DashboardWidget a cell opened."""
    opened = ks.wait_for(
        lambda m: m["msg_type"] == "comm_open" and m["parent_header"].get("msg_id") == cell
        and m["content"].get("data", {}).get("state", {}).get("_model_name") == "AnyModel",
        60,
    )
    return opened["content"]["comm_id"]


def _wait_for_updates(ks: KernelSession, comm_id: str, count: int) -> None:
    for _ in range(count):
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id, 60)


def test_interrupt_stop_and_lr_messages_in_a_live_kernel() -> None:
    with KernelSession() as ks:
        assert ks.wait_idle(ks.execute(SETUP))["content"]["status"] == "ok"

        # 1. The interrupt button during a foreground fit: a graceful stop, then the next cell runs.
        cell = ks.execute("d = Dashboard()\nmodel.fit(20, train_ds, valid_ds, callbacks=[d, Pace(0.004)])\nprint('returned')")
        _wait_for_updates(ks, _comm_of_run(ks, cell), 2)
        ks.interrupt()
        reply = ks.wait_idle(cell)
        assert reply["content"]["status"] == "ok", reply["content"]
        out = ks.outputs_of(cell)
        assert "Training stopped by user at epoch " in out and "(kernel interrupt)" in out
        assert "returned" in out
        nxt = ks.execute("model.train(1, train_ds[:5]); print('next ok', d.view().status)")
        ks.wait_idle(nxt)
        assert "next ok stopped" in ks.outputs_of(nxt)

        # 2. The widget's lr and stop messages while the cell is busy, over a subshell (JupyterLab >= 4.4).
        cell = ks.execute(
            "d = Dashboard()\nmodel.fit(60, train_ds, valid_ds, callbacks=[d, Pace(0.004)])\n"
            "print('lr now', opt.param_groups[0]['lr'], 'changes', d.view().lr_changes)"
        )
        comm = _comm_of_run(ks, cell)
        _wait_for_updates(ks, comm, 2)
        subshell = ks.create_subshell()
        ks.send_comm(comm, {"method": "custom", "content": {"type": "lr", "value": 0.0123}}, subshell)
        ks.send_comm(comm, {"method": "custom", "content": {"type": "lr", "value": "not a number"}}, subshell)
        # The next views show the new rate before the stop is sent.
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm
                    and (view_in(m["content"]) or {}).get("controls", {}).get("lr") == 0.0123, 30)
        clicked = time.monotonic()
        ks.send_comm(comm, {"method": "custom", "content": {"type": "stop"}}, subshell)
        ks.wait_for(lambda m: m["msg_type"] == "update_display_data" and m["parent_header"].get("msg_id") == cell, 30)
        latency = time.monotonic() - clicked
        ks.wait_idle(cell)
        out = ks.outputs_of(cell)
        print(f"Stop message -> final snapshot: {latency:.3f} s")
        assert "(Stop button)" in out and "lr set to 0.0123 at step" in out
        assert "lr now 0.0123" in out
        stopped_epoch = int(re.search(r"stopped by user at epoch (\d+)", out).group(1))
        assert stopped_epoch < 60  # the 60-epoch run was cut short
        closed = [m for m in ks.iopub if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == comm]
        assert len(closed) == 1

        # 3. Background mode: the cell returns at once; messages reach the idle main shell.
        cell = ks.execute(
            "d = Dashboard()\nrun = run_in_background(model.fit, 60, train_ds, valid_ds, callbacks=[d, Pace(0.004)])"
        )
        comm = _comm_of_run(ks, cell)
        assert ks.wait_idle(cell, 30)["content"]["status"] == "ok"
        _wait_for_updates(ks, comm, 2)
        ks.send_comm(comm, {"method": "custom", "content": {"type": "lr", "value": 0.02}})
        time.sleep(0.3)
        ks.send_comm(comm, {"method": "custom", "content": {"type": "stop"}})
        wait = ks.execute("run.wait(timeout=60)\nprint(run)\nprint('lr', opt.param_groups[0]['lr'])")
        ks.wait_idle(wait)
        out = ks.outputs_of(wait)
        assert "<BackgroundRun done: stopped by user at epoch" in out and "(Stop button)" in out
        assert "lr 0.02" in out

"""Kernel-level tests: real ipykernel, real comms, saved notebooks.

* nbclient executes a small notebook; we count iopub traffic, check the saved
  notebook (size, widget state, static snapshot, nbformat validation,
  nbconvert HTML).
* A jupyter_client session acts while a cell runs: the interrupt button, and
  the Stop / lr widgets driven by comm messages sent the way JupyterLab >= 4.4
  sends them (over a kernel subshell), plus the background-thread mode.

Each kernel runs with OMP_NUM_THREADS=1 and tiny synthetic data.
"""
from __future__ import annotations

import json
import re
import time

import nbformat
import pytest

from tests.widgets._kernel import (
    SETUP,
    KernelSession,
    cell_text,
    make_notebook,
    our_widget_models,
    run_notebook,
    traffic_stats,
    widget_view_outputs,
)

pytest.importorskip("ipykernel")
pytest.importorskip("nbclient")

FIT_CELL = """\
print("before the run")
dash = Dashboard()
model.fit(3, train_ds, valid_ds, callbacks=[dash, Pace(0.004)])
print("after the run")
"""


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory):
    """One notebook executed by nbclient, shared by the checks below."""
    tmp = tmp_path_factory.mktemp("nb")
    nb = make_notebook(
        [
            FIT_CELL,
            "metrics = model.eval(valid_ds, callbacks=[ProgressBar()])\nprint(metrics)",
            "model.train(1, train_ds, callbacks=[LiveLossPlot(), ProgressBar()])",
            "model.fit(1, train_ds, valid_ds, callbacks=[Dashboard(display='final')])",
            "print('next cell runs', opt.param_groups[0]['lr'])",
        ]
    )
    client, path = run_notebook(nb, tmp)
    return client, nbformat.read(path, as_version=4), path


def test_live_traffic_is_throttled(executed) -> None:
    client, _, _ = executed
    stats = traffic_stats(client.cell_messages(1))
    print(json.dumps({k: v for k, v in stats.items()}, indent=1, default=str))
    types = stats["by_type"]
    assert types["comm_open"] == 10  # one widget tree per fit: 10 models, opened once
    assert types["comm_close"] == 10  # ... and every one closed
    assert types["display_data"] == 2 and types["update_display_data"] == 2  # progress+controls, plot
    assert stats["live_rate"] <= 5.0
    assert stats["live_peak_per_s"] <= 10
    # Plot frames travel as binary buffers of the Image widget; text ticks are plain state updates.
    text_ticks = [m for m in client.cell_messages(1) if m[1] == "comm_msg" and not m[4]]
    frames = [m for m in client.cell_messages(1) if m[1] == "comm_msg" and m[4]]
    assert text_ticks and all(m[2] <= 2048 for m in text_ticks)  # <= 2 KB per text tick
    assert frames and all(m[2] <= 40_000 for m in frames)  # <= 40 KB per plot frame
    assert stats["live_bytes_per_s"] <= 25_000


def test_saved_notebook_holds_the_static_snapshot_and_no_widget_state(executed) -> None:
    client, nb, path = executed
    assert our_widget_models(nb) == []
    assert widget_view_outputs(nb) == 0
    nbformat.validate(nb)
    fit_cell = nb.cells[1]
    kinds = [out["output_type"] for out in fit_cell.outputs]
    assert kinds == ["stream", "display_data", "display_data", "stream"]  # other output of the cell survives
    snapshot = fit_cell.outputs[1]["data"]
    plain = snapshot["text/plain"]
    assert plain.startswith("Training finished: 3/3 epochs, 450/450 steps")
    assert "accuracy" in plain and "eval_loss" in plain
    html = snapshot["text/html"]
    assert html.count("<tr>") == 4  # header + one row per evaluation
    assert 'value="150" max="150"' in html and 'value="3" max="3"' in html
    assert "<img" not in html  # the plot is its own image/png output, which GitHub also renders
    plot = fit_cell.outputs[2]["data"]
    assert set(plot) == {"image/png", "text/plain"}
    import base64

    raw = base64.b64decode(plot["image/png"])
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) <= 40_000
    fit_bytes = len(json.dumps(fit_cell))
    print(f"saved fit cell: {fit_bytes} bytes; whole notebook {path.stat().st_size} bytes; PNG {len(raw)} bytes")
    assert fit_bytes <= 60_000
    # The eval-only and the plot-only runs left their own snapshots.
    assert cell_text(nb.cells[2]).startswith("Evaluation finished: 30/30 steps")
    assert [set(out["data"]) for out in nb.cells[3].outputs[:2]] == [{"text/html", "text/plain"}, {"image/png", "text/plain"}]
    assert "Training finished: 1/1 epochs" in cell_text(nb.cells[3])
    # display='final': nothing live, no widget at all, one snapshot.
    final_cell = client.cell_messages(4)
    assert not [m for m in final_cell if m[1].startswith("comm")]
    assert [out["output_type"] for out in nb.cells[4].outputs] == ["display_data", "display_data"]
    assert "image/png" in nb.cells[4].outputs[1]["data"]
    assert "next cell runs 0.05" in cell_text(nb.cells[5])


def test_stock_nbclient_keeps_only_small_blanked_state(executed) -> None:
    """nbclient 0.11 ignores comm_close and would save closed models; we blank them first."""
    client, _, _ = executed
    leftover = {cid: state for cid, state in client.widget_state.items()}
    assert not leftover  # the recording client forgot the closed ones, like JupyterLab
    stock_bytes = sum(len(json.dumps(s, default=str)) for s in client.stock_state.values())
    print(f"state a stock nbclient would save: {len(client.stock_state)} models, {stock_bytes} bytes")
    left = [b["data"] for buffers in client.stock_buffers.values() for b in buffers.values()]
    assert all(len(data) == 0 for data in left)  # the Image models were blanked: no PNG kept
    assert stock_bytes < 40 * 1024


def test_nbconvert_html_without_a_kernel(executed) -> None:
    from nbconvert import HTMLExporter

    _, nb, _ = executed
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert "Training finished: 3/3 epochs" in body
    assert re.search(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/]{1000}', body)
    assert "application/vnd.jupyter.widget-view+json" not in body
    assert "Error displaying widget" not in body


def test_interrupt_stop_button_lr_and_background_in_a_live_kernel() -> None:
    with KernelSession() as ks:
        assert ks.wait_idle(ks.execute(SETUP))["content"]["status"] == "ok"

        # 1. The interrupt button during a foreground fit: a graceful stop, then the next cell runs.
        cell = ks.execute("d = Dashboard()\nmodel.fit(20, train_ds, valid_ds, callbacks=[d, Pace(0.004)])\nprint('returned')")
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == cell, 60)
        time.sleep(0.5)
        ks.interrupt()
        reply = ks.wait_idle(cell)
        assert reply["content"]["status"] == "ok", reply["content"]
        out = ks.outputs_of(cell)
        assert "Training stopped by user at epoch " in out and "(kernel interrupt)" in out
        assert "returned" in out
        nxt = ks.execute("model.train(1, train_ds[:5]); print('next ok', d.view().status)")
        ks.wait_idle(nxt)
        assert "next ok stopped" in ks.outputs_of(nxt)

        # 2. Stop and lr widgets while the cell is busy, over a subshell (JupyterLab >= 4.4).
        cell = ks.execute(
            "d = Dashboard()\nmodel.fit(60, train_ds, valid_ds, callbacks=[d, Pace(0.004)])\n"
            "print('lr now', opt.param_groups[0]['lr'])"
        )
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == cell, 60)
        subshell = ks.create_subshell()
        lr_box = ks.comm_ids("FloatTextModel")[-1]
        button = ks.comm_ids("ButtonModel")[-1]
        ks.send_comm(lr_box, {"method": "update", "state": {"value": 0.0123}, "buffer_paths": []}, subshell)
        time.sleep(0.5)
        clicked = time.monotonic()
        ks.send_comm(button, {"method": "custom", "content": {"event": "click"}}, subshell)
        ks.wait_for(lambda m: m["msg_type"] == "update_display_data" and m["parent_header"].get("msg_id") == cell, 30)
        latency = time.monotonic() - clicked
        ks.wait_idle(cell)
        out = ks.outputs_of(cell)
        print(f"Stop button -> final snapshot: {latency:.3f} s")
        assert "(Stop button)" in out and "lr set to 0.0123 at step" in out
        assert "lr now 0.0123" in out
        stopped_epoch = int(re.search(r"stopped by user at epoch (\d+)", out).group(1))
        assert stopped_epoch < 60  # the 60-epoch run was cut short

        # 3. Negative control: without clearing ipykernel's routing hint, the click
        #    waits behind the busy cell (anchors §3) and the run is not stopped.
        cell = ks.execute(
            "import nbcallback.widgets.render_widget as rw\n_saved = rw.release_comm_routing\n"
            "rw.release_comm_routing = lambda widget: False\n"
            "try:\n    d = Dashboard()\n    model.fit(3, train_ds, valid_ds, callbacks=[d, Pace(0.004)])\n"
            "finally:\n    rw.release_comm_routing = _saved\nprint('status:', d.view().status)"
        )
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == cell, 60)
        button = ks.comm_ids("ButtonModel")[-1]
        ks.send_comm(button, {"method": "custom", "content": {"event": "click"}}, subshell)
        ks.wait_idle(cell)
        assert "status: finished" in ks.outputs_of(cell)

        # 4. Background mode: the cell returns at once; clicks reach the idle main shell.
        cell = ks.execute(
            "d = Dashboard()\nrun = run_in_background(model.fit, 60, train_ds, valid_ds, callbacks=[d, Pace(0.004)])"
        )
        assert ks.wait_idle(cell, 30)["content"]["status"] == "ok"
        ks.wait_for(lambda m: m["msg_type"] == "comm_msg", 30)
        lr_box = ks.comm_ids("FloatTextModel")[-1]
        button = ks.comm_ids("ButtonModel")[-1]
        ks.send_comm(lr_box, {"method": "update", "state": {"value": 0.02}, "buffer_paths": []})
        time.sleep(0.3)
        ks.send_comm(button, {"method": "custom", "content": {"event": "click"}})
        wait = ks.execute("run.wait(timeout=60)\nprint(run)\nprint('lr', opt.param_groups[0]['lr'])")
        ks.wait_idle(wait)
        out = ks.outputs_of(wait)
        assert "<BackgroundRun done, stopped by user at epoch" in out and "(Stop button)" in out
        assert "lr 0.02" in out

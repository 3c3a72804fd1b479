"""Property-based checks of the rules that are easy to state and easy to get subtly wrong."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbcallback.train import Callback, CallbackParams, CheckpointConfig, LossMonitor, ModelCheckpoint

from .helpers import blobs, make_model

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def expected_checkpoints(prefix: str, epochs: int, batches: int, every: int, keep: int) -> list[str]:
    """Spec §5.1.5/5.1.6, written out independently of the implementation."""
    last, saved = 0, []
    total = epochs * batches
    for step in range(1, total + 1):
        if step != last and step >= last + every:
            saved.append(step)
            last = step
    if total != last:
        saved.append(total)
    names = [f"{prefix}-{(s - 1) // batches + 1}_{(s - 1) % batches + 1}.ckpt" for s in saved]
    return sorted(names[-keep:])


@SETTINGS
@given(epochs=st.integers(1, 3), batches=st.integers(1, 5), every=st.integers(1, 12), keep=st.integers(1, 4))
def test_checkpoint_schedule_and_rotation(epochs, batches, every, keep):
    with tempfile.TemporaryDirectory() as folder:
        config = CheckpointConfig(save_checkpoint_steps=every, keep_checkpoint_max=keep)
        make_model().train(epochs, blobs(batches, batch_size=4), callbacks=ModelCheckpoint("p", folder, config))
        found = sorted(p.name for p in Path(folder).iterdir() if p.suffix == ".ckpt")
    assert found == expected_checkpoints("p", epochs, batches, every, keep)


@SETTINGS
@given(epochs=st.integers(1, 3), batches=st.integers(1, 6), every=st.integers(0, 7), initial=st.integers(0, 2))
def test_loss_monitor_schedule(epochs, batches, every, initial):
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        make_model().train(initial + epochs, blobs(batches, batch_size=4), callbacks=LossMonitor(every),
                           initial_epoch=initial)
    printed = [tuple(map(int, line.split(",")[0].replace("epoch: ", "").split(" step: ")))
               for line in buffer.getvalue().splitlines()]
    total = epochs * batches
    steps = range(every, total + 1, every) if every else []
    assert printed == [(initial + (s - 1) // batches + 1, (s - 1) % batches + 1) for s in steps]


@SETTINGS
@given(epochs=st.integers(1, 3), batches=st.integers(1, 5), stop=st.integers(1, 15))
def test_request_stop_ends_the_run_after_that_step(epochs, batches, stop):
    seen = []

    class Stop(Callback):
        def on_train_step_end(self, run_context):
            cb = run_context.original_args()
            seen.append((cb.cur_epoch_num, cb.cur_step_num))
            if cb.cur_step_num == stop:
                run_context.request_stop()

    make_model().train(epochs, blobs(batches, batch_size=4), callbacks=Stop())
    total = min(stop, epochs * batches)
    assert seen == [((s - 1) // batches + 1, s) for s in range(1, total + 1)]


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.integers(), max_size=6))
def test_callback_params_attribute_item_equivalence(values):
    reserved = set(dir(dict))
    params = CallbackParams()
    for key, value in values.items():
        if key in reserved:
            continue
        setattr(params, key, value)
        assert params[key] == value and getattr(params, key) == value
    assert all(hasattr(params, k) for k in params)
    assert not hasattr(params, "zz_never_set_key")

"""In a notebook kernel, each adapter shows the live widget and leaves the snapshot and the PNG in the saved
notebook (one kernel, one cell per framework; Stop is requested from code at a step, as the button does)."""
from __future__ import annotations

import base64
import os
import sys
from typing import Any

import nbformat
import pytest

from tests.widgets._kernel import cell_text, make_notebook, our_widget_models, run_notebook, widget_view_outputs

if "keras" not in sys.modules:
    os.environ.setdefault("KERAS_BACKEND", "torch")
for _module in ("ipykernel", "nbclient", "anywidget", "lightning", "transformers", "accelerate", "keras"):
    pytest.importorskip(_module, reason=f"{_module} is not installed (pip install 'nbcallback[test]')")

SETUP = '''\
import os
os.environ["KERAS_BACKEND"] = "torch"
import torch, numpy as np
torch.set_num_threads(1)
from torch import nn
from nbcallback.widgets import Dashboard
torch.manual_seed(0)
x = torch.randn(320, 8, generator=torch.Generator().manual_seed(0))
y = (x[:, :2].sum(1) > 0).long()
'''

PLAIN = '''\
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)
with Dashboard(epochs=3, steps_per_epoch=len(loader), optimizer=opt) as board:
    for epoch in range(3):
        for i, (xb, yb) in enumerate(loader):
            loss = nn.functional.cross_entropy(net(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            board.log(loss=loss)
            if (epoch, i) == (1, 4):
                board.request_stop("button")
        board.log_eval(loss=float(nn.functional.cross_entropy(net(x), y)))
print("PLAIN ENDED", epoch, i)
'''

LIGHTNING = '''\
import lightning as L
from nbcallback.integrations import LightningDashboard
class Small(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    def training_step(self, batch, index):
        return nn.functional.cross_entropy(self.net(batch[0]), batch[1])
    def validation_step(self, batch, index):
        self.log("val_loss", nn.functional.cross_entropy(self.net(batch[0]), batch[1]))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
class StopAt(L.Callback):
    def on_train_batch_start(self, trainer, module, batch, index):
        if trainer.global_step == 24:
            dash.board.request_stop("button")
dash = LightningDashboard()
trainer = L.Trainer(max_epochs=3, callbacks=[StopAt(), dash], enable_progress_bar=False, logger=False,
                    enable_checkpointing=False, enable_model_summary=False)
trainer.fit(Small(), loader, loader)
print("LIGHTNING ENDED", trainer.global_step)
'''

TRANSFORMERS = '''\
import transformers
from nbcallback.integrations import TransformersDashboard
class Rows(torch.utils.data.Dataset):
    def __len__(self): return len(x)
    def __getitem__(self, i): return {"x": x[i], "labels": y[i]}
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.layer = nn.Linear(8, 2)
    def forward(self, x, labels=None):
        out = self.layer(x); return {"loss": nn.functional.cross_entropy(out, labels), "logits": out}
args = transformers.TrainingArguments("hf-out", num_train_epochs=3, per_device_train_batch_size=16, logging_steps=2,
                                      eval_strategy="epoch", save_strategy="no", report_to=[], disable_tqdm=True,
                                      use_cpu=True, learning_rate=0.1)
hf = transformers.Trainer(model=Net(), args=args, train_dataset=Rows(), eval_dataset=Rows(),
                          callbacks=[TransformersDashboard()])
hf.remove_callback(transformers.trainer_callback.PrinterCallback)
hf.train()
'''

KERAS = '''\
import keras
from nbcallback.integrations import KerasDashboard
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x.numpy(), y.numpy(), epochs=3, batch_size=32, validation_split=0.2, callbacks=[KerasDashboard()], verbose=0)
'''


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("adapters")
    nb = make_notebook([SETUP, PLAIN, LIGHTNING, TRANSFORMERS, KERAS], setup=False)
    client, path = run_notebook(nb, tmp, timeout=300)
    return client, nbformat.read(path, as_version=4)


def _snapshot(cell: Any) -> tuple[str, str, bytes]:
    """The cell's snapshot (its text, its HTML) and its PNG."""
    shown = [out for out in cell.outputs if out["output_type"] == "display_data"]
    html = next(out["data"] for out in shown if "text/html" in out["data"])
    png = next(out["data"]["image/png"] for out in shown if "image/png" in out["data"])
    return html["text/plain"], html["text/html"], base64.b64decode(png)


def test_no_live_widget_is_left_in_the_saved_notebook(saved: Any) -> None:
    client, nb = saved
    assert our_widget_models(nb) == [] and widget_view_outputs(nb) == 0
    assert set(client.opened) <= client.closed
    assert list(client.opened.values()).count("AnyModel") == 4  # one live widget per run
    nbformat.validate(nb)


@pytest.mark.parametrize(("index", "status"), [
    (1, "Training stopped by user at epoch 2, step 6 (Stop button): 1/3 epochs, 26/60 steps"),
    (2, "Training stopped by user at epoch 2, step 5 (Stop button): 1/3 epochs, 25/60 steps"),
    (3, "Training finished: 3/3 epochs, 60/60 steps"),
    (4, "Training finished: 3/3 epochs, 24/24 steps"),
])
def test_each_framework_leaves_the_snapshot_and_the_plot(saved: Any, index: int, status: str) -> None:
    _client, nb = saved
    text, html, png = _snapshot(nb.cells[index])
    assert text.startswith(status)
    assert "<tr>" in html  # the evaluation table
    assert png.startswith(b"\x89PNG")


def test_stop_ended_the_plain_loop_and_lightning_after_the_step(saved: Any) -> None:
    _client, nb = saved
    assert "PLAIN ENDED 1 5" in cell_text(nb.cells[1])  # asked after step 5's log: step 6 was the last
    assert "LIGHTNING ENDED 25" in cell_text(nb.cells[2])

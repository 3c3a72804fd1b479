import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell(hide_code=True)
def _(mo):
    mo.md(
        r"""
        # nbcallback's `Dashboard` in marimo

        The tutorial's MLP trained on a slice of MNIST with `Model.fit` and a `Dashboard()`: the progress bars,
        the table and the loss panels update live while the cell runs, and when the run ends the cell keeps a
        static snapshot (status, table) and the final plot as a PNG.

        Open it with `marimo edit examples/marimo_dashboard.py` (or serve it with `marimo run`; add
        `-- --epochs 8` for a longer run).
        MNIST comes from `$NBCALLBACK_DATA` or `~/.cache/nbcallback`, downloaded on first use
        (`$NBCALLBACK_MNIST_URL` chooses the mirror).

        marimo applies a widget's clicks only when the cell has finished, so the **Stop** button and the
        learning-rate box are not shown during a run in a cell: interrupt the cell to stop early (the run stops
        gracefully after the current step and the snapshot says where).
        """
    )
    return


@app.cell
def _():
    import marimo as mo
    import torch
    from torch import nn

    from nbcallback.dataset import MnistDataset, download_mnist, transforms, vision
    from nbcallback.train import Model
    from nbcallback.widgets import Dashboard

    torch.set_num_threads(1)
    path = download_mnist(progress=False)
    return Dashboard, MnistDataset, Model, mo, nn, path, torch, transforms, vision


@app.cell
def _(MnistDataset, nn, path, torch, transforms, vision):
    def datapipe(folder, batch_size, num_samples=None, shuffle=None):
        image_transforms = [
            vision.Rescale(1.0 / 255.0, 0),
            vision.Normalize(mean=(0.1307,), std=(0.3081,)),
            vision.HWC2CHW(),
        ]
        dataset = MnistDataset(folder, num_samples=num_samples, shuffle=shuffle)
        dataset = dataset.map(image_transforms, "image")
        dataset = dataset.map(transforms.TypeCast(torch.int64), "label")
        return dataset.batch(batch_size)


    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.dense_relu_sequential = nn.Sequential(
                nn.Linear(28 * 28, 512), nn.ReLU(),
                nn.Linear(512, 512), nn.ReLU(),
                nn.Linear(512, 10),
            )

        def forward(self, x):
            return self.dense_relu_sequential(self.flatten(x))


    # A slice of MNIST keeps the demonstration to seconds: 12,000 training images (188 steps of 64)
    # and the first 2,000 test images.
    train_dataset = datapipe(path / "train", 64, num_samples=12000)
    test_dataset = datapipe(path / "test", 64, num_samples=2000, shuffle=False)
    return Network, test_dataset, train_dataset


@app.cell
def _(Dashboard, Model, Network, mo, nn, test_dataset, torch, train_dataset):
    epochs = int(mo.cli_args().get("epochs") or 3)
    torch.manual_seed(0)
    network = Network()
    trainer = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 1e-2),
                    metrics={"accuracy", "loss"})
    dashboard = Dashboard()
    # The dashboard is this cell's output: live while fit runs, then the snapshot and the PNG.
    # (The cell ends with an assignment: a last expression would replace that output.)
    history = trainer.fit(epochs, train_dataset, test_dataset, callbacks=[dashboard])
    return (dashboard,)


@app.cell
def _(dashboard, mo):
    final = dashboard.view()
    mo.md(f"The run ended: **{final.status_text}** (status `{final.status}`).")
    return


if __name__ == "__main__":
    app.run()

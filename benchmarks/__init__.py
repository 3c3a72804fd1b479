"""nbcallback's benchmark suite.

One entry point runs every comparison of issue 8 as alternating runs in fresh
processes and writes a table, JSON and a bar chart::

    python -m benchmarks --data /path/to/MNIST_Data          # or: python benchmarks/run.py ...
    python -m benchmarks --quick --only train,import          # a smoke run (seconds, not minutes)

Modules:

* :mod:`benchmarks.run` -- the driver (comparisons, rounds, table, JSON, PNG).
* :mod:`benchmarks.workloads` -- what one fresh process measures (``python -m
  benchmarks.workloads VARIANT ...``): the bare PyTorch loop, ``Model.train``
  with the tutorial's callbacks, Lightning, Keras, the input pipeline, the
  widget callbacks, evaluation, imports, checkpoints, first-call costs.
* :mod:`benchmarks._common` -- data decoding, the tutorial network, statistics.

The older single-purpose scripts still run on their own:
``benchmarks/train.py`` (Model.train vs bare), ``benchmarks/pipeline.py``
(the dataset pipeline) and ``benchmarks/widgets.py`` (widgets in a real kernel).
"""

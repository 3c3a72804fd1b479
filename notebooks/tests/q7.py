from otter.test_files import test_case

OK_FORMAT = False

name = "q7"
points = 3

@test_case(points=None, hidden=False)
def test_q7_slowest(slowest_callback, env):
    import time
    import torch
    from torch import nn
    from nbcallback.train import Callback, CallbackProfiler, Model
    from nbcallback.train.profiler import ProfileRow

    def raised(error, function):
        """What calling the student's function raised, and where in its cell."""
        import traceback
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == function.__code__.co_filename]
        where = f' (in the cell that defines {function.__name__}, line {frames[-1].lineno})' if frames else ''
        return f'{function.__name__} raised {type(error).__name__}: {error}{where}'

    def require_function(name, value):
        """Fail, saying why, when function `name` is missing or the last run of its cell failed."""
        import ast
        import re
        import traceback
        runs = [(count, source) for count, source in enumerate(env.get('In') or []) if isinstance(source, str) and re.search(f'^def {name}\\b', source, re.MULTILINE)]
        if runs:
            count, source = runs[-1]
            problem = None
            try:
                tree = ast.parse(source)
                compile(tree, '<cell>', 'exec')
            except SyntaxError as error:
                problem, line, detail = (error, error.lineno, error.msg)
            if problem is None and value is None:
                nodes = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.FunctionDef) and node.name == name)]
                try:
                    exec(compile(ast.Module(nodes, type_ignores=[]), '<cell>', 'exec'), dict(env))
                except Exception as error:
                    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == '<cell>']
                    problem, line, detail = (error, (lines or [1])[-1], str(error))
            if problem is not None and isinstance(problem, NameError) and ('Callback' not in env):
                raise AssertionError(f'the cell that defines {name} (the one numbered [{count}]) fails at line {line} with {type(problem).__name__}: {detail}, because the setup cell has not run since the kernel started: run the setup cell near the top first (it imports Callback and defines new_trainer; or run every cell above this one), then the cell that defines {name}, then this check')
            if problem is not None:
                raise AssertionError(f'the cell that defines {name} (the one numbered [{count}]) fails at line {line} with {type(problem).__name__}: {detail}; fix it, run that cell again, then this check')
        setup = '' if 'Callback' in env else ' (after a kernel restart, run the setup cell near the top first)'
        assert value is not None, f'there is no function named {name}: run the cell that defines it{setup}, then this check'
    require_function('slowest_callback', slowest_callback)

    def check_made_up(rows):
        """slowest_callback on a profile with made-up times, sorted as the profiler sorts its rows."""

        class MadeUp:
            pass
        profiler = MadeUp()
        profiler.rows = rows
        try:
            row = slowest_callback(profiler)
        except Exception as error:
            raise AssertionError(raised(error, slowest_callback)) from None
        hint = '; return the row itself, not its label' if isinstance(row, str) else ''
        assert isinstance(row, ProfileRow), f'slowest_callback(profiler) should return one of profiler.rows (a ProfileRow), but it returned {row!r}{hint}'
        assert row.kind == 'callback', f"slowest_callback returned the row {row.label!r} of kind {row.kind!r}: only the rows of kind 'callback' are the hooks of callbacks (the step, the evaluation and the loop are the trainer's own time)"
        callbacks = [r for r in rows if r.kind == 'callback']
        slowest = max(callbacks, key=lambda r: r.total_s)
        hint = ''
        if row == max(callbacks, key=lambda r: r.mean_us):
            hint = '; that is the hook whose single call is the slowest (mean_us): the slowest callback is the one that took the most time in all (total_s)'
        shown = [(r.label, r.total_s) for r in callbacks]
        assert row == slowest, f'in a profile whose callback rows (label, total_s) are {shown}, slowest_callback returned {row.label!r}, not {slowest.label!r}, the callback row with the largest total_s{hint}'

    def check_run():
        """slowest_callback on a real profile: a deliberately slow callback among fast ones."""

        class Slow(Callback):

            def on_train_epoch_end(self, run_context):
                time.sleep(0.1)

        class CountSteps(Callback):

            def __init__(self):
                super().__init__()
                self.steps = 0

            def on_train_step_end(self, run_context):
                self.steps += 1

        class Quiet(Callback):

            def on_train_epoch_begin(self, run_context):
                pass
        torch.manual_seed(0)
        network = nn.Linear(4, 2)
        model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1))
        data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(5)]
        profiler = CallbackProfiler()
        model.train(2, data, callbacks=[profiler, CountSteps(), Slow(), Quiet()])
        try:
            row = slowest_callback(profiler)
        except Exception as error:
            raise AssertionError(raised(error, slowest_callback)) from None
        slowest = max((r for r in profiler.rows if r.kind == 'callback'), key=lambda r: r.total_s)
        assert row == slowest, f"in a real run (2 epochs, a callback Slow that sleeps 0.1 s after each epoch among fast ones), slowest_callback returned {getattr(row, 'label', row)!r}, not {slowest.label!r}, the callback row with the largest total_s"
    check_made_up([ProfileRow('loop', 'loop', 'data, cb_params, dispatch, the rest', None, 0, 5.0, 0.5), ProfileRow('step', 'train step', 'backward', None, 100, 2.4, 0.24), ProfileRow('callback', 'ModelCheckpoint', 'on_train_step_end', 'step_end', 100, 1.5, 0.15), ProfileRow('callback', 'SaveBest', 'on_train_end', None, 1, 0.6, 0.06), ProfileRow('callback', 'LossMonitor', 'on_train_step_end', 'step_end', 100, 0.5, 0.05)])
    check_run()

@test_case(points=None, hidden=False)
def test_q7_epoch_checkpoint(epoch_checkpoint, env):
    import torch
    from torch import nn
    from nbcallback.train import Model, ModelCheckpoint

    def raised(error, function):
        """What calling the student's function raised, and where in its cell."""
        import traceback
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == function.__code__.co_filename]
        where = f' (in the cell that defines {function.__name__}, line {frames[-1].lineno})' if frames else ''
        return f'{function.__name__} raised {type(error).__name__}: {error}{where}'

    def require_function(name, value):
        """Fail, saying why, when function `name` is missing or the last run of its cell failed."""
        import ast
        import re
        import traceback
        runs = [(count, source) for count, source in enumerate(env.get('In') or []) if isinstance(source, str) and re.search(f'^def {name}\\b', source, re.MULTILINE)]
        if runs:
            count, source = runs[-1]
            problem = None
            try:
                tree = ast.parse(source)
                compile(tree, '<cell>', 'exec')
            except SyntaxError as error:
                problem, line, detail = (error, error.lineno, error.msg)
            if problem is None and value is None:
                nodes = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.FunctionDef) and node.name == name)]
                try:
                    exec(compile(ast.Module(nodes, type_ignores=[]), '<cell>', 'exec'), dict(env))
                except Exception as error:
                    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == '<cell>']
                    problem, line, detail = (error, (lines or [1])[-1], str(error))
            if problem is not None and isinstance(problem, NameError) and ('Callback' not in env):
                raise AssertionError(f'the cell that defines {name} (the one numbered [{count}]) fails at line {line} with {type(problem).__name__}: {detail}, because the setup cell has not run since the kernel started: run the setup cell near the top first (it imports Callback and defines new_trainer; or run every cell above this one), then the cell that defines {name}, then this check')
            if problem is not None:
                raise AssertionError(f'the cell that defines {name} (the one numbered [{count}]) fails at line {line} with {type(problem).__name__}: {detail}; fix it, run that cell again, then this check')
        setup = '' if 'Callback' in env else ' (after a kernel restart, run the setup cell near the top first)'
        assert value is not None, f'there is no function named {name}: run the cell that defines it{setup}, then this check'
    require_function('epoch_checkpoint', epoch_checkpoint)

    def check_epochs(epochs, steps):
        """Train `epochs` epochs of `steps` steps with epoch_checkpoint(folder, steps); look at the files."""
        import os
        import re
        import tempfile
        torch.manual_seed(0)
        network = nn.Linear(4, 2)
        model = Model(network, nn.CrossEntropyLoss(), torch.optim.SGD(network.parameters(), 0.1))
        data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(steps)]
        with tempfile.TemporaryDirectory() as folder:
            try:
                checkpoint = epoch_checkpoint(folder, steps)
            except Exception as error:
                raise AssertionError(raised(error, epoch_checkpoint)) from None
            assert isinstance(checkpoint, ModelCheckpoint), f'epoch_checkpoint(directory, {steps}) should return a ModelCheckpoint, but it returned {checkpoint!r}'
            model.train(epochs, data, callbacks=[checkpoint])
            files = sorted((name for name in os.listdir(folder) if name.endswith('.ckpt')))
        expected = [f'-{epoch}_{steps}.ckpt' for epoch in range(1, epochs + 1)]
        saved_at = {match.group(1) for match in (re.search('_(\\d+)\\.ckpt$', name) for name in files) if match}
        hint = ''
        if not files:
            hint = '; give ModelCheckpoint the directory it is given (directory=directory)'
        elif len(saved_at) > 1:
            saves = sorted(((int(m.group(1)) - 1) * steps + int(m.group(2)) for m in (re.search('-(\\d+)_(\\d+)\\.ckpt$', name) for name in files) if m))
            if len(saves) > 2 and saves[-1] == epochs * steps:
                saves = saves[:-1]
            every = min((b - a for a, b in zip(saves, saves[1:]))) if len(saves) > 1 else saves[0]
            hint = f"; it saves every {every} step(s), and an epoch has {steps}: give ModelCheckpoint CheckpointConfig(save_checkpoint_steps=steps_per_epoch), which saves after each epoch's last step"
        ok = len(files) == epochs and all((name.endswith(end) for name, end in zip(files, expected)))
        assert ok, f'{epochs} epochs of {steps} steps (steps_per_epoch={steps}): expected one checkpoint per epoch, after its last step (file names ending in {expected}), but the ModelCheckpoint wrote {files}{hint}'
    check_epochs(2, 5)


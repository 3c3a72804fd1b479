from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_q2_lines(EpochTimer, env):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Callback, Model

    def raised(error, cls):
        """What training with the student's callback raised, and where in its cell."""
        import traceback
        files = {f.__code__.co_filename for f in vars(cls).values() if hasattr(f, '__code__')}
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in files]
        if frames:
            where = f' (in the cell that defines {cls.__name__}, line {frames[-1].lineno}, in {frames[-1].name})'
        else:
            where = ' (outside the methods of your callback)'
        return f'training with your callback raised {type(error).__name__}: {error}{where}'

    def require_class(name, value):
        """Fail, saying why, when class `name` is missing or the last run of its cell failed."""
        import ast
        import re
        import traceback
        runs = [(count, source) for count, source in enumerate(env.get('In') or []) if isinstance(source, str) and re.search(f'^class {name}\\b', source, re.MULTILINE)]
        if runs:
            count, source = runs[-1]
            problem = None
            try:
                tree = ast.parse(source)
                compile(tree, '<cell>', 'exec')
            except SyntaxError as error:
                problem, line, detail = (error, error.lineno, error.msg)
            if problem is None and value is None:
                nodes = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.ClassDef) and node.name == name)]
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
        assert value is not None, f'there is no class named {name}: run the cell that defines it{setup}, then this check'

    def printed(callback, epochs, steps=3, loss_fn=None, around=()):
        """Train a tiny model with `callback`; return the lines it printed."""
        torch.manual_seed(0)
        x = torch.randn(4 * steps, 3)
        y = (x[:, 0] > 0).long()
        net = nn.Linear(3, 2)
        model = Model(net, loss_fn or nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.5))
        data = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 4 * steps, 4)]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                model.train(epochs, data, callbacks=[*around[:1], callback, *around[1:]])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return out.getvalue().splitlines()
    import re
    import time
    require_class('EpochTimer', EpochTimer)
    pattern = re.compile('Train epoch time: (\\d+\\.\\d{3}) ms, per step time: (\\d+\\.\\d{3}) ms')

    class SlowLoss(nn.Module):
        """Cross-entropy that takes at least `SLEEP` seconds, so each step has a known minimum time."""

        def forward(self, logits, labels):
            time.sleep(SLEEP)
            return nn.functional.cross_entropy(logits, labels)

    def check_timing(epochs, steps):
        windows = []

        class Opens(Callback):

            def on_train_epoch_begin(self, run_context):
                windows.append(time.perf_counter())

        class Closes(Callback):

            def on_train_epoch_end(self, run_context):
                windows[-1] = (time.perf_counter() - windows[-1]) * 1000
        lines = printed(EpochTimer(), epochs, steps=steps, loss_fn=SlowLoss(), around=(Opens(), Closes()))
        assert lines, f'{epochs} epochs of {steps} steps: expected one line per epoch but your callback printed nothing: print the line with print() in on_train_epoch_end'
        assert len(lines) == epochs, f'{epochs} epochs of {steps} steps: expected one line per epoch ({epochs} lines) but your callback printed {len(lines)}: {lines}'
        least = SLEEP * 1000 * steps
        for epoch, line in enumerate(lines, 1):
            match = pattern.fullmatch(line)
            assert match, f"expected a line like 'Train epoch time: {least + 2.345:.3f} ms, per step time: {(least + 2.345) / steps:.3f} ms' but your callback printed {line!r}."
            epoch_ms, step_ms = (float(match[1]), float(match[2]))
            assert epoch_ms >= least, f'epoch {epoch} ran {steps} steps of at least {SLEEP * 1000:.0f} ms, so it took at least {least:.0f} ms, but your line says {epoch_ms:.3f} ms (milliseconds, not seconds?)'
            assert epoch_ms <= windows[epoch - 1] + 1, f'epoch {epoch} took {windows[epoch - 1]:.0f} ms but your line says {epoch_ms:.3f} ms: start the clock again at the beginning of every epoch (on_train_epoch_begin)'
            assert abs(step_ms * steps - epoch_ms) <= 0.01 * steps, f'the per step time is the epoch time divided by the {steps} steps of the epoch (cb_params.batch_num): {epoch_ms:.3f} / {steps} = {epoch_ms / steps:.3f} ms, but your line says {step_ms:.3f} ms'
    SLEEP = 0.05
    check_timing(epochs=2, steps=3)


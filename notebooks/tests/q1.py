from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 3

@test_case(points=None, hidden=False)
def test_q1_every_step(LossLine, env):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Model

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

    def printed(callback, epochs, steps=3, loss_fn=None):
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
                model.train(epochs, data, callbacks=[callback])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return out.getvalue().splitlines()
    from nbcallback.train import LossMonitor
    require_class('LossLine', LossLine)

    def compare(what, expected, got):
        assert got, f'{what}: expected {len(expected)} lines but your callback printed nothing: print each line with print() in on_train_step_end; the first one is {expected[0]!r}.'
        for want, have in zip(expected, got):
            assert want == have, f'{what}: expected the line {want!r} but your callback printed {have!r}.'
        assert len(got) >= len(expected), f'{what}: expected {len(expected)} lines but your callback printed {len(got)}; the first missing line is {expected[len(got)]!r}.'
        assert len(got) <= len(expected), f'{what}: expected {len(expected)} lines but your callback also printed {got[len(expected)]!r}.'
    compare('LossLine(1), one epoch of 3 steps', printed(LossMonitor(1), 1), printed(LossLine(1), 1))

@test_case(points=None, hidden=False)
def test_q1_step_in_epoch(LossLine, env):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Model

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

    def printed(callback, epochs, steps=3, loss_fn=None):
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
                model.train(epochs, data, callbacks=[callback])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return out.getvalue().splitlines()
    from nbcallback.train import LossMonitor
    require_class('LossLine', LossLine)

    def compare(what, expected, got):
        assert got, f'{what}: expected {len(expected)} lines but your callback printed nothing: print each line with print() in on_train_step_end; the first one is {expected[0]!r}.'
        for want, have in zip(expected, got):
            assert want == have, f'{what}: expected the line {want!r} but your callback printed {have!r}.'
        assert len(got) >= len(expected), f'{what}: expected {len(expected)} lines but your callback printed {len(got)}; the first missing line is {expected[len(got)]!r}.'
        assert len(got) <= len(expected), f'{what}: expected {len(expected)} lines but your callback also printed {got[len(expected)]!r}.'
    compare('LossLine(2), two epochs of 3 steps', printed(LossMonitor(2), 2), printed(LossLine(2), 2))


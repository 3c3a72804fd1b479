from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 3

@test_case(points=None, hidden=False)
def test_q4_best_epoch(SaveBest, env):
    import os
    import tempfile
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

    class Scripted:
        """A metric whose value at the k-th validation is values[k]."""

        def __init__(self, values):
            self.values = list(values)
            self.calls = 0

        def clear(self):
            pass

        def update(self, *inputs):
            pass

        def eval(self):
            value = self.values[min(self.calls, len(self.values) - 1)]
            self.calls += 1
            return value

    class Watch(Callback):
        """Runs after the callback under test: what each epoch ended with."""

        def __init__(self):
            super().__init__()
            self.ends = []
            self.weights = []

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.weights.append({k: v.detach().clone() for k, v in cb_params.network.state_dict().items()})

    def fit(callback, metrics, epochs):
        """Fit a tiny model for `epochs` epochs of 2 steps, validating with scripted metrics."""
        torch.manual_seed(0)
        x = torch.randn(8, 3)
        y = (x[:, 0] > 0).long()
        data = [(x[:4], y[:4]), (x[4:], y[4:])]
        net = nn.Linear(3, 2)
        model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.5), metrics={name: Scripted(values) for name, values in metrics.items()})
        watch = Watch()
        try:
            model.fit(epochs, data, data[:1], callbacks=[callback, watch])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return watch
    import nbcallback
    require_class('SaveBest', SaveBest)

    def check_best(metrics, monitor=None):
        values = metrics[monitor or 'accuracy']
        with tempfile.TemporaryDirectory() as folder:
            file_name = os.path.join(folder, 'best.ckpt')
            callback = SaveBest(file_name) if monitor is None else SaveBest(file_name, monitor=monitor)
            watch = fit(callback, metrics, len(values))
            best = values.index(max(values)) + 1
            what = f"with {monitor or 'accuracy'} {values} per epoch"
            assert os.path.exists(file_name), f'{what}, expected a checkpoint at self.file_name but there is none: save one with nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...) when the value improves'
            fresh = nn.Linear(3, 2)
            entries = nbcallback.load_checkpoint(file_name, net=fresh)
        assert 'epoch' in entries, f"the checkpoint has no 'epoch' entry (it has {sorted(entries)}): pass append_dict={{'epoch': cb_params.cur_epoch_num, monitor: value}} to save_checkpoint"
        same = all((torch.equal(fresh.state_dict()[k], v) for k, v in watch.weights[best - 1].items()))
        hint = ''
        if entries['epoch'] == len(values) != best and same:
            hint = f': {len(values)} is cb_params.epoch_num, the number of epochs of the whole run; the epoch that just ended is cb_params.cur_epoch_num'
        assert entries['epoch'] == best, f"{what}, the best is epoch {best} ({max(values)}), but the checkpoint says epoch {entries['epoch']}{hint}"
        assert same, f"{what}, the checkpoint says epoch {best} but its weights are not the network's weights at the end of that epoch: save cb_params.network in on_train_epoch_end"
    check_best({'accuracy': [0.5, 0.8, 0.7, 0.9, 0.6]})

@test_case(points=None, hidden=False)
def test_q4_ties_keep_earlier(SaveBest, env):
    import os
    import tempfile
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

    class Scripted:
        """A metric whose value at the k-th validation is values[k]."""

        def __init__(self, values):
            self.values = list(values)
            self.calls = 0

        def clear(self):
            pass

        def update(self, *inputs):
            pass

        def eval(self):
            value = self.values[min(self.calls, len(self.values) - 1)]
            self.calls += 1
            return value

    class Watch(Callback):
        """Runs after the callback under test: what each epoch ended with."""

        def __init__(self):
            super().__init__()
            self.ends = []
            self.weights = []

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.weights.append({k: v.detach().clone() for k, v in cb_params.network.state_dict().items()})

    def fit(callback, metrics, epochs):
        """Fit a tiny model for `epochs` epochs of 2 steps, validating with scripted metrics."""
        torch.manual_seed(0)
        x = torch.randn(8, 3)
        y = (x[:, 0] > 0).long()
        data = [(x[:4], y[:4]), (x[4:], y[4:])]
        net = nn.Linear(3, 2)
        model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.5), metrics={name: Scripted(values) for name, values in metrics.items()})
        watch = Watch()
        try:
            model.fit(epochs, data, data[:1], callbacks=[callback, watch])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return watch
    import nbcallback
    require_class('SaveBest', SaveBest)

    def check_best(metrics, monitor=None):
        values = metrics[monitor or 'accuracy']
        with tempfile.TemporaryDirectory() as folder:
            file_name = os.path.join(folder, 'best.ckpt')
            callback = SaveBest(file_name) if monitor is None else SaveBest(file_name, monitor=monitor)
            watch = fit(callback, metrics, len(values))
            best = values.index(max(values)) + 1
            what = f"with {monitor or 'accuracy'} {values} per epoch"
            assert os.path.exists(file_name), f'{what}, expected a checkpoint at self.file_name but there is none: save one with nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...) when the value improves'
            fresh = nn.Linear(3, 2)
            entries = nbcallback.load_checkpoint(file_name, net=fresh)
        assert 'epoch' in entries, f"the checkpoint has no 'epoch' entry (it has {sorted(entries)}): pass append_dict={{'epoch': cb_params.cur_epoch_num, monitor: value}} to save_checkpoint"
        same = all((torch.equal(fresh.state_dict()[k], v) for k, v in watch.weights[best - 1].items()))
        hint = ''
        if entries['epoch'] == len(values) != best and same:
            hint = f': {len(values)} is cb_params.epoch_num, the number of epochs of the whole run; the epoch that just ended is cb_params.cur_epoch_num'
        assert entries['epoch'] == best, f"{what}, the best is epoch {best} ({max(values)}), but the checkpoint says epoch {entries['epoch']}{hint}"
        assert same, f"{what}, the checkpoint says epoch {best} but its weights are not the network's weights at the end of that epoch: save cb_params.network in on_train_epoch_end"
    check_best({'accuracy': [0.6, 0.75, 0.75, 0.7]})


from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_q3_stops(StopAtAccuracy, env):
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
            self.stops = []
            self.stop_hook = None

        def saw_stop(self, run_context, hook):
            if self.stop_hook is None and run_context.get_stop_requested():
                self.stop_hook = hook

        def on_train_epoch_begin(self, run_context):
            self.saw_stop(run_context, 'on_train_epoch_begin')

        def on_train_step_begin(self, run_context):
            self.saw_stop(run_context, 'on_train_step_begin')

        def on_train_step_end(self, run_context):
            self.saw_stop(run_context, 'on_train_step_end')

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.stops.append(run_context.get_stop_requested())
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
    require_class('StopAtAccuracy', StopAtAccuracy)

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            hook = watch.stop_hook or 'a step hook'
            assert step == 2 * epoch, f"training stopped in the middle of epoch {epoch} (after global step {step}; each epoch has 2 steps): your callback requested the stop in {hook}, before the epoch's last step; request it in on_train_epoch_end instead, after the validation (cb_params.metrics holds its result there)"
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else 'the target is never reached'
        if any(watch.stops):
            first = watch.stops.index(True) + 1
            how = f'your callback requested the stop after epoch {first}, where the accuracy was {accuracies[first - 1]}'
        else:
            how = 'your callback never called run_context.request_stop(): call it in on_train_epoch_end once the accuracy reaches the target'
        if reached and accuracies[expected - 1] == target and (len(watch.ends) > expected):
            how += f'; after epoch {expected} the accuracy equals the target ({target}), and reaching the target counts: compare with >=, not >'
        assert len(watch.ends) == expected, f'with validation accuracies {accuracies} per epoch and target={target}, training should stop after epoch {expected} ({why}), but it ran {len(watch.ends)} epochs: {how}'
    check_stop([0.5, 0.7, 0.85, 0.9, 0.95], 0.8)

@test_case(points=None, hidden=False)
def test_q3_reaching_counts(StopAtAccuracy, env):
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
            self.stops = []
            self.stop_hook = None

        def saw_stop(self, run_context, hook):
            if self.stop_hook is None and run_context.get_stop_requested():
                self.stop_hook = hook

        def on_train_epoch_begin(self, run_context):
            self.saw_stop(run_context, 'on_train_epoch_begin')

        def on_train_step_begin(self, run_context):
            self.saw_stop(run_context, 'on_train_step_begin')

        def on_train_step_end(self, run_context):
            self.saw_stop(run_context, 'on_train_step_end')

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.stops.append(run_context.get_stop_requested())
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
    require_class('StopAtAccuracy', StopAtAccuracy)

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            hook = watch.stop_hook or 'a step hook'
            assert step == 2 * epoch, f"training stopped in the middle of epoch {epoch} (after global step {step}; each epoch has 2 steps): your callback requested the stop in {hook}, before the epoch's last step; request it in on_train_epoch_end instead, after the validation (cb_params.metrics holds its result there)"
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else 'the target is never reached'
        if any(watch.stops):
            first = watch.stops.index(True) + 1
            how = f'your callback requested the stop after epoch {first}, where the accuracy was {accuracies[first - 1]}'
        else:
            how = 'your callback never called run_context.request_stop(): call it in on_train_epoch_end once the accuracy reaches the target'
        if reached and accuracies[expected - 1] == target and (len(watch.ends) > expected):
            how += f'; after epoch {expected} the accuracy equals the target ({target}), and reaching the target counts: compare with >=, not >'
        assert len(watch.ends) == expected, f'with validation accuracies {accuracies} per epoch and target={target}, training should stop after epoch {expected} ({why}), but it ran {len(watch.ends)} epochs: {how}'
    check_stop([0.6, 0.8, 0.9, 0.95], 0.8)


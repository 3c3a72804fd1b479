from otter.test_files import test_case

OK_FORMAT = False

name = "q6"
points = 4

@test_case(points=None, hidden=False)
def test_q6_plateau(HalveLROnPlateau, env):
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
    require_class('HalveLROnPlateau', HalveLROnPlateau)

    class ScriptedLoss(nn.Module):
        """A loss whose value at the k-th step is values[k] (its gradient is zero)."""

        def __init__(self, values):
            super().__init__()
            self.values = list(values)
            self.calls = 0

        def forward(self, logits, labels):
            value = self.values[self.calls]
            self.calls += 1
            return logits.sum() * 0.0 + value

    class RecordLR(Callback):

        def __init__(self):
            super().__init__()
            self.lrs = []

        def on_train_epoch_end(self, run_context):
            groups = run_context.original_args().optimizer.param_groups
            self.lrs.append([group['lr'] for group in groups])

    def expected_lrs(means, patience, lrs):
        best, wait, out = (float('inf'), 0, [])
        for mean in means:
            if mean < best:
                best, wait = (mean, 0)
            else:
                wait += 1
                if wait >= patience:
                    lrs, wait = ([lr / 2 for lr in lrs], 0)
            out.append(lrs)
        return out

    def check_plateau(step_losses, patience, two_groups=False):
        steps = len(step_losses[0])
        x = torch.zeros(4 * steps, 3)
        y = torch.zeros(4 * steps, dtype=torch.long)
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2))
        if two_groups:
            params = [{'params': net[0].parameters(), 'lr': 0.1}, {'params': net[1].parameters(), 'lr': 0.4}]
        else:
            params = [{'params': net.parameters(), 'lr': 0.1}]
        initial = [group['lr'] for group in params]
        optimizer = torch.optim.SGD(params, 0.1)
        flat = [value for epoch in step_losses for value in epoch]
        model = Model(net, ScriptedLoss(flat), optimizer)
        data = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 4 * steps, 4)]
        record = RecordLR()
        try:
            model.train(len(step_losses), data, callbacks=[HalveLROnPlateau(patience), record])
        except Exception as error:
            raise AssertionError(raised(error, HalveLROnPlateau)) from None
        means = [sum(epoch) / len(epoch) for epoch in step_losses]
        expected = expected_lrs(means, patience, initial)
        hint = ''
        if record.lrs and all((lrs == initial for lrs in record.lrs)):
            hint = "; your callback never changed the learning rate: halve group['lr'] for every group in cb_params.optimizer.param_groups"
        lasts = expected_lrs([epoch[-1] for epoch in step_losses], patience, initial)
        if record.lrs == lasts != expected:
            hint = "; your callback follows each epoch's last step loss (cb_params.net_outputs in on_train_epoch_end), not the epoch's mean: add up cb_params.net_outputs in on_train_step_end and divide by the number of steps in on_train_epoch_end"
        for epoch, (want, got) in enumerate(zip(expected, record.lrs), 1):
            one = not two_groups
            which = 'the learning rate' if one else 'the learning rates of the two parameter groups'
            assert want == got, f'with epoch mean losses {means} and patience={patience}, expected {which} after each epoch to be {([w[0] for w in expected] if one else expected)}, but it was {([g[0] for g in record.lrs] if one else record.lrs)}; the first difference is after epoch {epoch}: expected {(want[0] if one else want)}, got {(got[0] if one else got)}{hint}'
    check_plateau([[1.0, 1.5, 0.5], [0.75, 0.75, 0.75], [1.0, 0.75, 0.5], [0.75, 0.75, 0.75], [0.5, 0.5, 0.5], [0.25, 0.75, 0.5], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], patience=2)

@test_case(points=None, hidden=False)
def test_q6_patience(HalveLROnPlateau, env):
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
    require_class('HalveLROnPlateau', HalveLROnPlateau)

    class ScriptedLoss(nn.Module):
        """A loss whose value at the k-th step is values[k] (its gradient is zero)."""

        def __init__(self, values):
            super().__init__()
            self.values = list(values)
            self.calls = 0

        def forward(self, logits, labels):
            value = self.values[self.calls]
            self.calls += 1
            return logits.sum() * 0.0 + value

    class RecordLR(Callback):

        def __init__(self):
            super().__init__()
            self.lrs = []

        def on_train_epoch_end(self, run_context):
            groups = run_context.original_args().optimizer.param_groups
            self.lrs.append([group['lr'] for group in groups])

    def expected_lrs(means, patience, lrs):
        best, wait, out = (float('inf'), 0, [])
        for mean in means:
            if mean < best:
                best, wait = (mean, 0)
            else:
                wait += 1
                if wait >= patience:
                    lrs, wait = ([lr / 2 for lr in lrs], 0)
            out.append(lrs)
        return out

    def check_plateau(step_losses, patience, two_groups=False):
        steps = len(step_losses[0])
        x = torch.zeros(4 * steps, 3)
        y = torch.zeros(4 * steps, dtype=torch.long)
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2))
        if two_groups:
            params = [{'params': net[0].parameters(), 'lr': 0.1}, {'params': net[1].parameters(), 'lr': 0.4}]
        else:
            params = [{'params': net.parameters(), 'lr': 0.1}]
        initial = [group['lr'] for group in params]
        optimizer = torch.optim.SGD(params, 0.1)
        flat = [value for epoch in step_losses for value in epoch]
        model = Model(net, ScriptedLoss(flat), optimizer)
        data = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 4 * steps, 4)]
        record = RecordLR()
        try:
            model.train(len(step_losses), data, callbacks=[HalveLROnPlateau(patience), record])
        except Exception as error:
            raise AssertionError(raised(error, HalveLROnPlateau)) from None
        means = [sum(epoch) / len(epoch) for epoch in step_losses]
        expected = expected_lrs(means, patience, initial)
        hint = ''
        if record.lrs and all((lrs == initial for lrs in record.lrs)):
            hint = "; your callback never changed the learning rate: halve group['lr'] for every group in cb_params.optimizer.param_groups"
        lasts = expected_lrs([epoch[-1] for epoch in step_losses], patience, initial)
        if record.lrs == lasts != expected:
            hint = "; your callback follows each epoch's last step loss (cb_params.net_outputs in on_train_epoch_end), not the epoch's mean: add up cb_params.net_outputs in on_train_step_end and divide by the number of steps in on_train_epoch_end"
        for epoch, (want, got) in enumerate(zip(expected, record.lrs), 1):
            one = not two_groups
            which = 'the learning rate' if one else 'the learning rates of the two parameter groups'
            assert want == got, f'with epoch mean losses {means} and patience={patience}, expected {which} after each epoch to be {([w[0] for w in expected] if one else expected)}, but it was {([g[0] for g in record.lrs] if one else record.lrs)}; the first difference is after epoch {epoch}: expected {(want[0] if one else want)}, got {(got[0] if one else got)}{hint}'
    check_plateau([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 0.5], [0.5, 0.5]], patience=3)


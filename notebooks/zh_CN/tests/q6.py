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
        """使用学生的回调训练时抛出了什么，以及在其单元格中的位置。"""
        import traceback
        files = {f.__code__.co_filename for f in vars(cls).values() if hasattr(f, '__code__')}
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in files]
        if frames:
            where = f'（定义{cls.__name__}的单元格第{frames[-1].lineno}行，在{frames[-1].name}中）'
        else:
            where = '（不在你的回调的方法中）'
        return f'使用你的回调训练时抛出了{type(error).__name__}：{error}{where}'

    def require_class(name, value):
        """类`name`不存在、或定义它的单元格最近一次运行失败时，说明原因并判为失败。"""
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
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}，因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格（它导入Callback并定义new_trainer；也可以运行这个单元格上方的所有单元格），再运行定义{name}的单元格，然后运行这个检查')
            if problem is not None:
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}；请改正后重新运行该单元格，再运行这个检查')
        setup = '' if 'Callback' in env else '（内核重启后，请先运行靠近顶部的设置单元格）'
        assert value is not None, f'没有名为{name}的类：请先运行定义它的单元格{setup}，再运行这个检查'
    require_class('HalveLROnPlateau', HalveLROnPlateau)

    class ScriptedLoss(nn.Module):
        """一个loss，第k个step的值为values[k]（梯度为零）。"""

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
            hint = "；你的回调从未改变学习率：请把cb_params.optimizer.param_groups中每个group的group['lr']减半"
        lasts = expected_lrs([epoch[-1] for epoch in step_losses], patience, initial)
        if record.lrs == lasts != expected:
            hint = '；你的回调依据的是每个epoch最后一个step的loss（on_train_epoch_end中的cb_params.net_outputs），而不是该epoch的平均值：请在on_train_step_end中累加cb_params.net_outputs，并在on_train_epoch_end中除以step数'
        for epoch, (want, got) in enumerate(zip(expected, record.lrs), 1):
            one = not two_groups
            which = '学习率' if one else '两个参数组的学习率'
            assert want == got, f'各epoch的平均loss为{means}，patience={patience}时，预期{which}在各epoch之后依次为{([w[0] for w in expected] if one else expected)}，但实际为{([g[0] for g in record.lrs] if one else record.lrs)}；第一处不同在epoch {epoch}之后：预期{(want[0] if one else want)}，实际为{(got[0] if one else got)}{hint}'
    check_plateau([[1.0, 1.5, 0.5], [0.75, 0.75, 0.75], [1.0, 0.75, 0.5], [0.75, 0.75, 0.75], [0.5, 0.5, 0.5], [0.25, 0.75, 0.5], [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]], patience=2)

@test_case(points=None, hidden=False)
def test_q6_patience(HalveLROnPlateau, env):
    import torch
    from torch import nn
    from nbcallback.train import Callback, Model

    def raised(error, cls):
        """使用学生的回调训练时抛出了什么，以及在其单元格中的位置。"""
        import traceback
        files = {f.__code__.co_filename for f in vars(cls).values() if hasattr(f, '__code__')}
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename in files]
        if frames:
            where = f'（定义{cls.__name__}的单元格第{frames[-1].lineno}行，在{frames[-1].name}中）'
        else:
            where = '（不在你的回调的方法中）'
        return f'使用你的回调训练时抛出了{type(error).__name__}：{error}{where}'

    def require_class(name, value):
        """类`name`不存在、或定义它的单元格最近一次运行失败时，说明原因并判为失败。"""
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
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}，因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格（它导入Callback并定义new_trainer；也可以运行这个单元格上方的所有单元格），再运行定义{name}的单元格，然后运行这个检查')
            if problem is not None:
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}；请改正后重新运行该单元格，再运行这个检查')
        setup = '' if 'Callback' in env else '（内核重启后，请先运行靠近顶部的设置单元格）'
        assert value is not None, f'没有名为{name}的类：请先运行定义它的单元格{setup}，再运行这个检查'
    require_class('HalveLROnPlateau', HalveLROnPlateau)

    class ScriptedLoss(nn.Module):
        """一个loss，第k个step的值为values[k]（梯度为零）。"""

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
            hint = "；你的回调从未改变学习率：请把cb_params.optimizer.param_groups中每个group的group['lr']减半"
        lasts = expected_lrs([epoch[-1] for epoch in step_losses], patience, initial)
        if record.lrs == lasts != expected:
            hint = '；你的回调依据的是每个epoch最后一个step的loss（on_train_epoch_end中的cb_params.net_outputs），而不是该epoch的平均值：请在on_train_step_end中累加cb_params.net_outputs，并在on_train_epoch_end中除以step数'
        for epoch, (want, got) in enumerate(zip(expected, record.lrs), 1):
            one = not two_groups
            which = '学习率' if one else '两个参数组的学习率'
            assert want == got, f'各epoch的平均loss为{means}，patience={patience}时，预期{which}在各epoch之后依次为{([w[0] for w in expected] if one else expected)}，但实际为{([g[0] for g in record.lrs] if one else record.lrs)}；第一处不同在epoch {epoch}之后：预期{(want[0] if one else want)}，实际为{(got[0] if one else got)}{hint}'
    check_plateau([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 0.5], [0.5, 0.5]], patience=3)


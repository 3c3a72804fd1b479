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

    class Scripted:
        """一个评估指标，第k次验证时的值为values[k]。"""

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
        """在被测的回调之后运行：记录每个epoch结束时的状态。"""

        def __init__(self):
            super().__init__()
            self.ends = []
            self.weights = []

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.weights.append({k: v.detach().clone() for k, v in cb_params.network.state_dict().items()})

    def fit(callback, metrics, epochs):
        """用`fit`训练一个很小的模型`epochs`个epoch（每个epoch 2个step），用预设的评估指标验证。"""
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
            what = f"各epoch的{monitor or 'accuracy'}为{values}"
            assert os.path.exists(file_name), f'{what}，预期在self.file_name有一个检查点，但没有找到：请在值变好时用nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...)保存'
            fresh = nn.Linear(3, 2)
            entries = nbcallback.load_checkpoint(file_name, net=fresh)
        assert 'epoch' in entries, f"检查点中没有'epoch'条目（只有{sorted(entries)}）：请把append_dict={{'epoch': cb_params.cur_epoch_num, monitor: value}}传给save_checkpoint"
        same = all((torch.equal(fresh.state_dict()[k], v) for k, v in watch.weights[best - 1].items()))
        hint = ''
        if entries['epoch'] == len(values) != best and same:
            hint = f'：{len(values)}是cb_params.epoch_num，即整个训练的epoch数；刚结束的epoch是cb_params.cur_epoch_num'
        assert entries['epoch'] == best, f"{what}，最佳的是epoch {best}（{max(values)}），但检查点中记录的是epoch {entries['epoch']}{hint}"
        assert same, f'{what}，检查点中记录的是epoch {best}，但其权重不是网络在该epoch结束时的权重：请在on_train_epoch_end中保存cb_params.network'
    check_best({'accuracy': [0.5, 0.8, 0.7, 0.9, 0.6]})

@test_case(points=None, hidden=False)
def test_q4_ties_keep_earlier(SaveBest, env):
    import os
    import tempfile
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

    class Scripted:
        """一个评估指标，第k次验证时的值为values[k]。"""

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
        """在被测的回调之后运行：记录每个epoch结束时的状态。"""

        def __init__(self):
            super().__init__()
            self.ends = []
            self.weights = []

        def on_train_epoch_end(self, run_context):
            cb_params = run_context.original_args()
            self.ends.append((cb_params.cur_epoch_num, cb_params.cur_step_num))
            self.weights.append({k: v.detach().clone() for k, v in cb_params.network.state_dict().items()})

    def fit(callback, metrics, epochs):
        """用`fit`训练一个很小的模型`epochs`个epoch（每个epoch 2个step），用预设的评估指标验证。"""
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
            what = f"各epoch的{monitor or 'accuracy'}为{values}"
            assert os.path.exists(file_name), f'{what}，预期在self.file_name有一个检查点，但没有找到：请在值变好时用nbcallback.save_checkpoint(cb_params.network, self.file_name, append_dict=...)保存'
            fresh = nn.Linear(3, 2)
            entries = nbcallback.load_checkpoint(file_name, net=fresh)
        assert 'epoch' in entries, f"检查点中没有'epoch'条目（只有{sorted(entries)}）：请把append_dict={{'epoch': cb_params.cur_epoch_num, monitor: value}}传给save_checkpoint"
        same = all((torch.equal(fresh.state_dict()[k], v) for k, v in watch.weights[best - 1].items()))
        hint = ''
        if entries['epoch'] == len(values) != best and same:
            hint = f'：{len(values)}是cb_params.epoch_num，即整个训练的epoch数；刚结束的epoch是cb_params.cur_epoch_num'
        assert entries['epoch'] == best, f"{what}，最佳的是epoch {best}（{max(values)}），但检查点中记录的是epoch {entries['epoch']}{hint}"
        assert same, f'{what}，检查点中记录的是epoch {best}，但其权重不是网络在该epoch结束时的权重：请在on_train_epoch_end中保存cb_params.network'
    check_best({'accuracy': [0.6, 0.75, 0.75, 0.7]})


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
    require_class('StopAtAccuracy', StopAtAccuracy)

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            hook = watch.stop_hook or '某个step钩子方法'
            assert step == 2 * epoch, f'训练在epoch {epoch}的中途停止了（在全局step {step}之后；每个epoch有2个step）：你的回调在{hook}中请求了停止，那时该epoch的最后一个step还没有运行；请改为在验证之后的on_train_epoch_end中请求停止（那里的cb_params.metrics保存着验证结果）'
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else '始终没有达到目标'
        if any(watch.stops):
            first = watch.stops.index(True) + 1
            how = f'你的回调在epoch {first}之后请求了停止，那时的精度是{accuracies[first - 1]}'
        else:
            how = '你的回调从未调用run_context.request_stop()：请在on_train_epoch_end中，当精度达到目标时调用它'
        if reached and accuracies[expected - 1] == target and (len(watch.ends) > expected):
            how += f'；epoch {expected}之后的精度正好等于目标（{target}），而达到目标就算数：请用>=比较，而不是>'
        assert len(watch.ends) == expected, f'各epoch的验证精度为{accuracies}，target={target}时，训练应在epoch {expected}之后停止（{why}），但实际运行了{len(watch.ends)}个epoch：{how}'
    check_stop([0.5, 0.7, 0.85, 0.9, 0.95], 0.8)

@test_case(points=None, hidden=False)
def test_q3_reaching_counts(StopAtAccuracy, env):
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
    require_class('StopAtAccuracy', StopAtAccuracy)

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            hook = watch.stop_hook or '某个step钩子方法'
            assert step == 2 * epoch, f'训练在epoch {epoch}的中途停止了（在全局step {step}之后；每个epoch有2个step）：你的回调在{hook}中请求了停止，那时该epoch的最后一个step还没有运行；请改为在验证之后的on_train_epoch_end中请求停止（那里的cb_params.metrics保存着验证结果）'
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else '始终没有达到目标'
        if any(watch.stops):
            first = watch.stops.index(True) + 1
            how = f'你的回调在epoch {first}之后请求了停止，那时的精度是{accuracies[first - 1]}'
        else:
            how = '你的回调从未调用run_context.request_stop()：请在on_train_epoch_end中，当精度达到目标时调用它'
        if reached and accuracies[expected - 1] == target and (len(watch.ends) > expected):
            how += f'；epoch {expected}之后的精度正好等于目标（{target}），而达到目标就算数：请用>=比较，而不是>'
        assert len(watch.ends) == expected, f'各epoch的验证精度为{accuracies}，target={target}时，训练应在epoch {expected}之后停止（{why}），但实际运行了{len(watch.ends)}个epoch：{how}'
    check_stop([0.6, 0.8, 0.9, 0.95], 0.8)


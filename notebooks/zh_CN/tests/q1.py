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

    def printed(callback, epochs, steps=3, loss_fn=None):
        """用`callback`训练一个很小的模型；返回它打印的各行。"""
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
        assert got, f'{what}：预期打印{len(expected)}行，但你的回调什么也没有打印：请在on_train_step_end中用print()打印每一行；第一行是 {expected[0]!r}。'
        for want, have in zip(expected, got):
            assert want == have, f'{what}：预期打印 {want!r}，但你的回调打印了 {have!r}。'
        assert len(got) >= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调打印了{len(got)}行；缺少的第一行是 {expected[len(got)]!r}。'
        assert len(got) <= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调还多打印了 {got[len(expected)]!r}。'
    compare('LossLine(1)，1个epoch，每个epoch 3个step', printed(LossMonitor(1), 1), printed(LossLine(1), 1))

@test_case(points=None, hidden=False)
def test_q1_step_in_epoch(LossLine, env):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Model

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

    def printed(callback, epochs, steps=3, loss_fn=None):
        """用`callback`训练一个很小的模型；返回它打印的各行。"""
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
        assert got, f'{what}：预期打印{len(expected)}行，但你的回调什么也没有打印：请在on_train_step_end中用print()打印每一行；第一行是 {expected[0]!r}。'
        for want, have in zip(expected, got):
            assert want == have, f'{what}：预期打印 {want!r}，但你的回调打印了 {have!r}。'
        assert len(got) >= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调打印了{len(got)}行；缺少的第一行是 {expected[len(got)]!r}。'
        assert len(got) <= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调还多打印了 {got[len(expected)]!r}。'
    compare('LossLine(2)，2个epoch，每个epoch 3个step', printed(LossMonitor(2), 2), printed(LossLine(2), 2))


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
        """调用学生的函数时抛出了什么，以及在其单元格中的位置。"""
        import traceback
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == function.__code__.co_filename]
        where = f'（定义{function.__name__}的单元格第{frames[-1].lineno}行）' if frames else ''
        return f'{function.__name__}抛出了{type(error).__name__}：{error}{where}'

    def require_function(name, value):
        """函数`name`不存在、或定义它的单元格最近一次运行失败时，说明原因并判为失败。"""
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
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}，因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格（它导入Callback并定义new_trainer；也可以运行这个单元格上方的所有单元格），再运行定义{name}的单元格，然后运行这个检查')
            if problem is not None:
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}；请改正后重新运行该单元格，再运行这个检查')
        setup = '' if 'Callback' in env else '（内核重启后，请先运行靠近顶部的设置单元格）'
        assert value is not None, f'没有名为{name}的函数：请先运行定义它的单元格{setup}，再运行这个检查'
    require_function('slowest_callback', slowest_callback)

    def check_made_up(rows):
        """在时间为虚构的分析结果上运行slowest_callback，各行按分析器的方式排序。"""

        class MadeUp:
            pass
        profiler = MadeUp()
        profiler.rows = rows
        try:
            row = slowest_callback(profiler)
        except Exception as error:
            raise AssertionError(raised(error, slowest_callback)) from None
        hint = '；请返回这一行本身，而不是它的label' if isinstance(row, str) else ''
        assert isinstance(row, ProfileRow), f'slowest_callback(profiler)应当返回profiler.rows中的一行（一个ProfileRow），但它返回了{row!r}{hint}'
        assert row.kind == 'callback', f"slowest_callback返回的行{row.label!r}的kind是{row.kind!r}：只有kind为'callback'的行才是回调的钩子（训练步、验证和循环是训练器自己的时间）"
        callbacks = [r for r in rows if r.kind == 'callback']
        slowest = max(callbacks, key=lambda r: r.total_s)
        hint = ''
        if row == max(callbacks, key=lambda r: r.mean_us):
            hint = '；这是单次调用最慢（mean_us）的钩子：最慢的回调是总耗时（total_s）最多的那个'
        shown = [(r.label, r.total_s) for r in callbacks]
        assert row == slowest, f'在回调各行（label, total_s）为{shown}的分析结果中，slowest_callback返回了{row.label!r}，而不是{slowest.label!r}（total_s最大的回调行）{hint}'

    def check_run():
        """在真实的分析结果上运行slowest_callback：几个快的回调中有一个故意很慢的回调。"""

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
        assert row == slowest, f"在一次真实运行中（2个epoch，几个快的回调中有一个每个epoch之后睡眠0.1 s的回调Slow），slowest_callback返回了{getattr(row, 'label', row)!r}，而不是{slowest.label!r}，即total_s最大的回调行"
    check_made_up([ProfileRow('loop', 'loop', 'data, cb_params, dispatch, the rest', None, 0, 5.0, 0.5), ProfileRow('step', 'train step', 'backward', None, 100, 2.4, 0.24), ProfileRow('callback', 'ModelCheckpoint', 'on_train_step_end', 'step_end', 100, 1.5, 0.15), ProfileRow('callback', 'SaveBest', 'on_train_end', None, 1, 0.6, 0.06), ProfileRow('callback', 'LossMonitor', 'on_train_step_end', 'step_end', 100, 0.5, 0.05)])
    check_run()

@test_case(points=None, hidden=False)
def test_q7_epoch_checkpoint(epoch_checkpoint, env):
    import torch
    from torch import nn
    from nbcallback.train import Model, ModelCheckpoint

    def raised(error, function):
        """调用学生的函数时抛出了什么，以及在其单元格中的位置。"""
        import traceback
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == function.__code__.co_filename]
        where = f'（定义{function.__name__}的单元格第{frames[-1].lineno}行）' if frames else ''
        return f'{function.__name__}抛出了{type(error).__name__}：{error}{where}'

    def require_function(name, value):
        """函数`name`不存在、或定义它的单元格最近一次运行失败时，说明原因并判为失败。"""
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
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}，因为内核启动（或重启）以来还没有运行过设置单元格：请先运行靠近顶部的设置单元格（它导入Callback并定义new_trainer；也可以运行这个单元格上方的所有单元格），再运行定义{name}的单元格，然后运行这个检查')
            if problem is not None:
                raise AssertionError(f'定义{name}的单元格（编号为[{count}]的那个）在第{line}行出现{type(problem).__name__}：{detail}；请改正后重新运行该单元格，再运行这个检查')
        setup = '' if 'Callback' in env else '（内核重启后，请先运行靠近顶部的设置单元格）'
        assert value is not None, f'没有名为{name}的函数：请先运行定义它的单元格{setup}，再运行这个检查'
    require_function('epoch_checkpoint', epoch_checkpoint)

    def check_epochs(epochs, steps):
        """用epoch_checkpoint(folder, steps)训练`epochs`个epoch，每个epoch `steps`个step；查看写出的文件。"""
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
            assert isinstance(checkpoint, ModelCheckpoint), f'epoch_checkpoint(directory, {steps})应当返回一个ModelCheckpoint，但它返回了{checkpoint!r}'
            model.train(epochs, data, callbacks=[checkpoint])
            files = sorted((name for name in os.listdir(folder) if name.endswith('.ckpt')))
        expected = [f'-{epoch}_{steps}.ckpt' for epoch in range(1, epochs + 1)]
        saved_at = {match.group(1) for match in (re.search('_(\\d+)\\.ckpt$', name) for name in files) if match}
        hint = ''
        if not files:
            hint = '；请把传入的目录交给ModelCheckpoint（directory=directory）'
        elif len(saved_at) > 1:
            saves = sorted(((int(m.group(1)) - 1) * steps + int(m.group(2)) for m in (re.search('-(\\d+)_(\\d+)\\.ckpt$', name) for name in files) if m))
            if len(saves) > 2 and saves[-1] == epochs * steps:
                saves = saves[:-1]
            every = min((b - a for a, b in zip(saves, saves[1:]))) if len(saves) > 1 else saves[0]
            hint = f'；它每{every}个step保存一次，而每个epoch有{steps}个step：请给ModelCheckpoint传入CheckpointConfig(save_checkpoint_steps=steps_per_epoch)，这样它在每个epoch最后一个step之后保存'
        ok = len(files) == epochs and all((name.endswith(end) for name, end in zip(files, expected)))
        assert ok, f'{epochs}个epoch，每个epoch {steps}个step（steps_per_epoch={steps}）：预期每个epoch一个检查点，在该epoch最后一个step之后保存（文件名以{expected}结尾），但ModelCheckpoint写出了{files}{hint}'
    check_epochs(2, 5)


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

    def printed(callback, epochs, steps=3, loss_fn=None, around=()):
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
                model.train(epochs, data, callbacks=[*around[:1], callback, *around[1:]])
        except Exception as error:
            raise AssertionError(raised(error, type(callback))) from None
        return out.getvalue().splitlines()
    import re
    import time
    require_class('EpochTimer', EpochTimer)
    pattern = re.compile('Train epoch time: (\\d+\\.\\d{3}) ms, per step time: (\\d+\\.\\d{3}) ms')

    class SlowLoss(nn.Module):
        """至少耗时`SLEEP`秒的交叉熵，使每个step有已知的最短时间。"""

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
        assert lines, f'{epochs}个epoch，每个epoch {steps}个step：预期每个epoch打印一行，但你的回调什么也没有打印：请在on_train_epoch_end中用print()打印这一行'
        assert len(lines) == epochs, f'{epochs}个epoch，每个epoch {steps}个step：预期每个epoch打印一行（共{epochs}行），但你的回调打印了{len(lines)}行：{lines}'
        least = SLEEP * 1000 * steps
        for epoch, line in enumerate(lines, 1):
            match = pattern.fullmatch(line)
            assert match, f"预期打印形如 'Train epoch time: {least + 2.345:.3f} ms, per step time: {(least + 2.345) / steps:.3f} ms' 的行，但你的回调打印了 {line!r}。"
            epoch_ms, step_ms = (float(match[1]), float(match[2]))
            assert epoch_ms >= least, f'epoch {epoch}运行了{steps}个step，每个step至少{SLEEP * 1000:.0f} ms，因此至少用时{least:.0f} ms，但你打印的是{epoch_ms:.3f} ms（单位应是毫秒，不是秒？）'
            assert epoch_ms <= windows[epoch - 1] + 1, f'epoch {epoch}用时{windows[epoch - 1]:.0f} ms，但你打印的是{epoch_ms:.3f} ms：请在每个epoch开始时重新开始计时（on_train_epoch_begin）'
            assert abs(step_ms * steps - epoch_ms) <= 0.01 * steps, f'每个step的时间是epoch时间除以该epoch的{steps}个step（cb_params.batch_num）：{epoch_ms:.3f} / {steps} = {epoch_ms / steps:.3f} ms，但你打印的是{step_ms:.3f} ms'
    SLEEP = 0.05
    check_timing(epochs=2, steps=3)


from otter.test_files import test_case

OK_FORMAT = False

name = "q5"
points = 4

@test_case(points=None, hidden=False)
def test_q5_norms(GradNorms, env):
    import math
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
    require_class('GradNorms', GradNorms)

    class Reference(Callback):
        """在被测的回调之后运行：记录真实的范数，以及结束时的cb_params。"""

        def __init__(self):
            super().__init__()
            self.norms, self.per_parameter_sums = ([], [])

        def on_train_step_end(self, run_context):
            grads = [p.grad for p in run_context.original_args().network.parameters() if p.grad is not None]
            self.norms.append(math.sqrt(sum((float(g.pow(2).sum()) for g in grads))))
            self.per_parameter_sums.append(sum((float(g.norm()) for g in grads)))

        def on_train_end(self, run_context):
            self.cb_params = run_context.original_args()

    def check_norms(epochs, steps, freeze_first=False):
        torch.manual_seed(0)
        x = torch.randn(4 * steps, 3)
        y = (x[:, 0] > 0).long()
        net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
        if freeze_first:
            net[0].requires_grad_(False)
        model = Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), 0.5))
        data = [(x[i:i + 4], y[i:i + 4]) for i in range(0, 4 * steps, 4)]
        reference = Reference()
        try:
            model.train(epochs, data, callbacks=[GradNorms(), reference])
        except Exception as error:
            hint = '（被冻结的层的参数的p.grad为None：请跳过它们）' if freeze_first else ''
            raise AssertionError(raised(error, GradNorms) + hint) from None
        cb_params = reference.cb_params
        assert 'grad_norms' in cb_params, "训练结束后，cb_params中没有'grad_norms'：请在on_train_begin中创建列表（cb_params.grad_norms = []），并在每个step之后向其中追加"
        norms = cb_params.grad_norms
        assert norms != [], 'cb_params.grad_norms是空的：请在on_train_step_end中把该step的梯度范数追加到其中'
        total = epochs * steps
        assert isinstance(norms, list) and len(norms) == total, f'{epochs}个epoch，每个epoch {steps}个step：预期cb_params.grad_norms是每个step一个值的列表（共{total}个值），但它是{norms!r}'
        for i, (got, want) in enumerate(zip(norms, reference.norms)):
            assert isinstance(got, float), f'cb_params.grad_norms[{i}]是{type(got).__name__}：请追加Python的float（float(...)）'
            hint = ''
            if math.isclose(got, reference.per_parameter_sums[i], rel_tol=0.0001):
                hint = '：这是各个参数的范数之和；全局范数是所有梯度元素平方和的平方根'
            assert math.isclose(got, want, rel_tol=0.0001), f'step {i + 1}：预期梯度范数为{want:.6f}，但cb_params.grad_norms[{i}]是{got:.6f}{hint}'
    check_norms(epochs=2, steps=3)


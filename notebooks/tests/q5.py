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
    require_class('GradNorms', GradNorms)

    class Reference(Callback):
        """Runs after the callback under test: the true norms, and cb_params at the end."""

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
            hint = " (a frozen layer's parameters have p.grad None: skip them)" if freeze_first else ''
            raise AssertionError(raised(error, GradNorms) + hint) from None
        cb_params = reference.cb_params
        assert 'grad_norms' in cb_params, "after training, cb_params has no 'grad_norms': create the list in on_train_begin (cb_params.grad_norms = []) and append to it after every step"
        norms = cb_params.grad_norms
        assert norms != [], "cb_params.grad_norms is empty: append the step's gradient norm to it in on_train_step_end"
        total = epochs * steps
        assert isinstance(norms, list) and len(norms) == total, f'{epochs} epochs of {steps} steps: expected cb_params.grad_norms to be a list with one value per step ({total} values) but it is {norms!r}'
        for i, (got, want) in enumerate(zip(norms, reference.norms)):
            assert isinstance(got, float), f'cb_params.grad_norms[{i}] is a {type(got).__name__}: append a Python float (float(...))'
            hint = ''
            if math.isclose(got, reference.per_parameter_sums[i], rel_tol=0.0001):
                hint = ': that is the sum of the per-parameter norms; the global norm is the square root of the sum of the squares of all entries'
            assert math.isclose(got, want, rel_tol=0.0001), f'step {i + 1}: expected the gradient norm {want:.6f} but cb_params.grad_norms[{i}] is {got:.6f}{hint}'
    check_norms(epochs=2, steps=3)


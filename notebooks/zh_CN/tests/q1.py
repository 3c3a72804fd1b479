from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 3

@test_case(points=None, hidden=False)
def test_q1_every_step(LossLine):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Model

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
            raise AssertionError(f'使用你的回调训练时抛出了{type(error).__name__}：{error}') from None
        return out.getvalue().splitlines()
    from nbcallback.train import LossMonitor
    assert LossLine is not None, '没有名为LossLine的类：请先运行定义它的单元格'

    def compare(what, expected, got):
        for want, have in zip(expected, got):
            assert want == have, f'{what}：预期打印 {want!r}，但你的回调打印了 {have!r}'
        assert len(got) >= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调打印了{len(got)}行；缺少的第一行是 {expected[len(got)]!r}'
        assert len(got) <= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调还多打印了 {got[len(expected)]!r}'
    compare('LossLine(1)，1个epoch，每个epoch 3个step', printed(LossMonitor(1), 1), printed(LossLine(1), 1))

@test_case(points=None, hidden=False)
def test_q1_step_in_epoch(LossLine):
    import contextlib
    import io
    import torch
    from torch import nn
    from nbcallback.train import Model

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
            raise AssertionError(f'使用你的回调训练时抛出了{type(error).__name__}：{error}') from None
        return out.getvalue().splitlines()
    from nbcallback.train import LossMonitor
    assert LossLine is not None, '没有名为LossLine的类：请先运行定义它的单元格'

    def compare(what, expected, got):
        for want, have in zip(expected, got):
            assert want == have, f'{what}：预期打印 {want!r}，但你的回调打印了 {have!r}'
        assert len(got) >= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调打印了{len(got)}行；缺少的第一行是 {expected[len(got)]!r}'
        assert len(got) <= len(expected), f'{what}：预期打印{len(expected)}行，但你的回调还多打印了 {got[len(expected)]!r}'
    compare('LossLine(2)，2个epoch，每个epoch 3个step', printed(LossMonitor(2), 2), printed(LossLine(2), 2))


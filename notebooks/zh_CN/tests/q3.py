from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 3

@test_case(points=None, hidden=False)
def test_q3_stops(StopAtAccuracy):
    import os
    import tempfile
    import torch
    from torch import nn
    from nbcallback.train import Callback, Model

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
            raise AssertionError(f'使用你的回调训练时抛出了{type(error).__name__}：{error}') from None
        return watch
    assert StopAtAccuracy is not None, '没有名为StopAtAccuracy的类：请先运行定义它的单元格'

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            assert step == 2 * epoch, f'训练在epoch {epoch}的中途停止了（在全局step {step}之后；每个epoch有2个step）：请在验证之后的on_train_epoch_end中请求停止，而不是在step的钩子方法中'
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else '始终没有达到目标'
        assert len(watch.ends) == expected, f'各epoch的验证精度为{accuracies}，target={target}时，训练应在epoch {expected}之后停止（{why}），但实际运行了{len(watch.ends)}个epoch'
    check_stop([0.5, 0.7, 0.85, 0.9, 0.95], 0.8)

@test_case(points=None, hidden=False)
def test_q3_reaching_counts(StopAtAccuracy):
    import os
    import tempfile
    import torch
    from torch import nn
    from nbcallback.train import Callback, Model

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
            raise AssertionError(f'使用你的回调训练时抛出了{type(error).__name__}：{error}') from None
        return watch
    assert StopAtAccuracy is not None, '没有名为StopAtAccuracy的类：请先运行定义它的单元格'

    def check_stop(accuracies, target):
        watch = fit(StopAtAccuracy(target), {'accuracy': accuracies}, len(accuracies))
        reached = [epoch for epoch, value in enumerate(accuracies, 1) if value >= target]
        expected = reached[0] if reached else len(accuracies)
        for epoch, step in watch.ends:
            assert step == 2 * epoch, f'训练在epoch {epoch}的中途停止了（在全局step {step}之后；每个epoch有2个step）：请在验证之后的on_train_epoch_end中请求停止，而不是在step的钩子方法中'
        why = f'accuracy {accuracies[expected - 1]} >= {target}' if reached else '始终没有达到目标'
        assert len(watch.ends) == expected, f'各epoch的验证精度为{accuracies}，target={target}时，训练应在epoch {expected}之后停止（{why}），但实际运行了{len(watch.ends)}个epoch'
    check_stop([0.6, 0.8, 0.9, 0.95], 0.8)


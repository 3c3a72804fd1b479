"""Decisions of the callbacks agree across the processes of a data-parallel run (2 gloo ranks on the CPU)."""
import json
import os
import signal
import subprocess
import textwrap

import pytest

from tests.callbacks.support import PYTHON, subprocess_env

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    torch.set_num_threads(1)


    def worker(rank, folder):
        import faulthandler
        faulthandler.dump_traceback_later(180, exit=True)  # a hung collective must not outlive the test
        dist.init_process_group("gloo", init_method=f"file://{folder}/pg", rank=rank, world_size=2)
        from torch import nn
        from nbcallback.train import (
            BackupAndRestore, Callback, EarlyStopping, LambdaCallback, Model, OnRequestExit,
        )
        from tests.callbacks.support import Recorder, toy_batches, toy_net

        def model(lr=0.1):
            torch.manual_seed(0)
            net = toy_net()
            opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
            return Model(net, nn.CrossEntropyLoss(), opt), net

        data = toy_batches(128, seed=rank + 1)  # each rank its own data: different local losses
        out = {}

        # EarlyStopping on the training loss sees the mean over the ranks. Alone, rank 1 would stop
        # after epoch 2 (and, through the stop agreement, rank 0 with it); the mean first stalls at epoch 3.
        script = [[1.0, 0.2, 0.1, 0.05, 0.05], [1.0, 1.1, 1.2, 1.3, 1.3]][rank]

        def last_loss(cb):
            cb.net_outputs = torch.tensor(script[cb.cur_epoch_num - 1])
            return script[cb.cur_epoch_num - 1]

        m, _ = model()
        local = Recorder("on_train_epoch_end", last_loss)
        stopper = EarlyStopping(monitor="loss", patience=1)
        m.train(5, data, callbacks=[local, stopper])
        out["early"] = [stopper.best, stopper.best_epoch, stopper.stopped_epoch, len(local.values)]

        # A SIGTERM on rank 1 only stops both ranks at the same step; rank 0 saves.
        class Term(Callback):
            def on_train_step_end(self, run_context):
                if rank == 1 and run_context.original_args().cur_step_num == 3:
                    os.kill(os.getpid(), signal.SIGTERM)

        m, _ = model()
        steps = Recorder("on_train_end", lambda cb: cb.cur_step_num)
        m.train(3, data, callbacks=[Term(), OnRequestExit(directory=f"{folder}/exit"), steps])
        out["exit_step"] = steps.values[0]

        # BackupAndRestore: one backup per rank; a crash on both ranks, then a resume.
        class Crash(Callback):
            def on_train_step_end(self, run_context):
                if run_context.original_args().cur_step_num == 7:
                    raise RuntimeError("crash")

        m, net = model()
        m.train(3, data, callbacks=[BackupAndRestore(f"{folder}/ref", save_freq=2)])
        reference = {k: v.clone() for k, v in net.state_dict().items()}
        m, _ = model()
        try:
            m.train(3, data, callbacks=[BackupAndRestore(f"{folder}/bk", save_freq=2), Crash()])
        except RuntimeError:
            pass
        out["backups"] = sorted(os.listdir(f"{folder}/bk"))
        m, net = model()
        backup = BackupAndRestore(f"{folder}/bk", save_freq=2)
        m.train(3, data, callbacks=[backup])
        out["resumed_from"] = list(backup.resumed_from)
        out["bitwise"] = all(torch.equal(reference[k], v) for k, v in net.state_dict().items())
        with open(f"{folder}/rank{rank}.json", "w") as handle:
            json.dump(out, handle)
        dist.destroy_process_group()


    if __name__ == "__main__":
        mp.start_processes(worker, args=(sys.argv[1],), nprocs=2, start_method="fork")
    """
)


@pytest.mark.ddp
def test_two_ranks_agree(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(SCRIPT)
    # A session of its own: the ranks are its children, stopped with it (by its group id) on failure.
    proc = subprocess.Popen(
        [PYTHON, str(script), str(tmp_path)],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # One decision, taken on the mean of the ranks' values.
    assert ranks[0]["early"] == ranks[1]["early"] == [pytest.approx(0.65), 2, 3, 3]
    # The signal reached rank 1 only, in step 3; the ranks' stop vote of step 3 is read after step 4
    # (see StopVote), so both stopped after step 4, and rank 0 wrote the checkpoint.
    assert ranks[0]["exit_step"] == ranks[1]["exit_step"] == 4
    assert sorted(p.name for p in (tmp_path / "exit").iterdir()) == ["Net_train.ckpt", "Net_train.meta"]
    for rank in ranks:
        assert rank["backups"] == ["rank_0", "rank_1"]
        assert rank["resumed_from"] == [1, 2, 6]
        assert rank["bitwise"] is True

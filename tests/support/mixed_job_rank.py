# One rank of a job whose ranks are C++ (ppe) and Python (PyTorch) processes:
# tests/distributed_tests/test_initialize.cpp starts it, under torchrun or
# with the env:// variables set by hand.
#
#   mixed_job_rank.py PYTHON_RANK PROGRAM [ARGS...]
#
# The rank named PYTHON_RANK runs the Python worker below; every other rank
# replaces this process with PROGRAM ARGS (the C++ worker). The Python worker
# does what the C++ worker ("worker: a C++ rank beside a Python rank") does,
# collective for collective: an all-reduce, torch's DistributedDataParallel
# over the same model (ppe's DDP on the C++ side) for three SGD steps, and an
# all-gather of the final weights. It then checks that every rank holds the
# same weights, and that they equal plain full-batch training of rank 0's
# initial weights on all ranks' batches (DDP averages the gradients of equal
# batches, so each step is one step on the mean loss of the whole batch).
import copy
import datetime
import os
import sys


def batch(rank, step):
    import torch

    x = torch.arange(32, dtype=torch.float32).reshape(8, 4) / 10 + rank - 0.5 * step
    y = x.sum(dim=1, keepdim=True) * 0.25 - rank
    return x, y


def main():
    python_rank = int(sys.argv[1])
    rank = int(os.environ["RANK"])
    if rank != python_rank:
        os.execv(sys.argv[2], sys.argv[2:])

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    world = dist.get_world_size()
    total = torch.full((3,), float(rank + 1))
    dist.all_reduce(total)
    assert torch.equal(total, torch.full((3,), world * (world + 1) / 2)), f"all_reduce gave {total}"

    torch.manual_seed(100 + rank)  # each rank starts elsewhere: DDP broadcasts rank 0's weights
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    reference = copy.deepcopy(model)
    initial = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(3):
        optimizer.zero_grad()
        x, y = batch(rank, step)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        optimizer.step()

        reference_optimizer.zero_grad()
        xs, ys = zip(*(batch(r, step) for r in range(world)))
        torch.nn.functional.mse_loss(reference(torch.cat(xs)), torch.cat(ys)).backward()
        reference_optimizer.step()

    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    for r, other in enumerate(gathered):
        assert torch.equal(other, weights), f"rank {r} holds other weights: {other} vs {weights}"
    expected = torch.cat([p.detach().reshape(-1) for p in reference.parameters()])
    assert not torch.equal(weights, initial), "the DDP steps changed nothing"
    assert torch.allclose(weights, expected, rtol=1e-5, atol=1e-6), f"DDP gave {weights}, full batch {expected}"
    dist.destroy_process_group()
    print(f"python rank {rank} of {world}: all-reduce, 3 DDP steps and all-gather agree", flush=True)


if __name__ == "__main__":
    main()

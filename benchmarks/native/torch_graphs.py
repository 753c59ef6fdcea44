"""What the PyTorch twins (mlp_torch.py, half_torch.py) share: a model captured as a CUDA graph the
way torch.cuda.graph documents it, and the two ways a forward is timed."""
import statistics
import time

import torch


def capture(model, inp):
    """Runs model on inp eagerly, warms it up on a side stream and captures it; replays the graph
    once. Returns (graph, the graph's output, eager's output). Call it under torch.no_grad()."""
    eager_out = model(inp)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(inp)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = model(inp)
    graph.replay()
    torch.cuda.synchronize()
    return graph, static_out, eager_out


def per_forward(run, n=200):
    """Microseconds per call of run: with a synchronize after each (median of n), and n back to back
    with one synchronize (mean)."""
    torch.cuda.synchronize()
    sync_each = []
    for _ in range(n):
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        sync_each.append((time.perf_counter() - t0) * 1e6)
    t0 = time.perf_counter()
    for _ in range(n):
        run()
    torch.cuda.synchronize()
    return statistics.median(sync_each), (time.perf_counter() - t0) * 1e6 / n

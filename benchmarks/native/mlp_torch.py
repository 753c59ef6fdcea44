#!/usr/bin/env python3
"""PyTorch twin of the MLP benchmark: 16 x (Linear(width, width) + ReLU), FP32 with TF32 off.

For each width and batch: eager and CUDA-graph replay (torch.cuda.graph), microseconds per forward
with a synchronize after each (latency, median of 200) and pipelined (200 forwards, one
synchronize). Inputs are random, never zero; the graph's output is checked against eager's.
Prints one line per cell, "MLP16 torch <mode>: width W batch B: X us sync each, Y us pipelined".
"""
import statistics
import sys
import time

import torch

LAYERS = 16
WIDTHS = (512, 1024, 4096)
BATCHES = (1, 8, 32, 128, 256)


def per_forward(run, n=200):
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


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, TF32 off")
    warm = time.perf_counter()
    a = torch.randn(8192, 8192, device=device)
    while time.perf_counter() - warm < 3.0:
        a = torch.relu(a @ a / 90.0)
    torch.cuda.synchronize()
    print(f"clock warm-up: {time.perf_counter() - warm:.1f} s of 8192^3 sgemms before the first measurement")
    torch.manual_seed(0)
    for width in WIDTHS:
        model = torch.nn.Sequential(*[m for _ in range(LAYERS)
                                      for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]).to(device).eval()
        for batch in BATCHES:
            x = torch.rand(batch, width, device=device) + 0.5
            with torch.no_grad():
                eager_out = model(x)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(x)
                torch.cuda.current_stream().wait_stream(s)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_out = model(x)
                graph.replay()
                torch.cuda.synchronize()
                if not torch.equal(static_out, eager_out):
                    diff = (static_out - eager_out).abs().max().item()
                    if diff > 1e-4 * eager_out.abs().max().item():
                        print(f"CHECK FAILED width {width} batch {batch}: graph differs from eager by {diff}")
                        sys.exit(1)
                eager = per_forward(lambda: model(x))
                replay = per_forward(graph.replay)
            for mode, (sync_each, piped) in (("eager", eager), ("graph", replay)):
                print(f"MLP16 torch {mode}: width {width} batch {batch}: {sync_each:.1f} us sync each, "
                      f"{piped:.1f} us pipelined")
            del graph


if __name__ == "__main__":
    main()

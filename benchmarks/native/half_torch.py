#!/usr/bin/env python3
"""PyTorch twin of the library's BF16 benchmark (HalfPrecision): the same work, timed the same way.

GEMM: torch.nn.functional.linear at 4096^3 (no bias) and the glossary page's Linear + ReLU at
2048 x 640 x 512, BF16; median TFLOP/s of 15 trials of 20 back-to-back calls timed with CUDA events.
MLP: 16 x (Linear(width, width) + ReLU) in BF16 as one CUDA graph (torch.cuda.graph): microseconds
per forward with a synchronize after each (median of 200) and pipelined (200 replays, one
synchronize). Inputs are random, never zero; the graph's output is checked against eager's.
Prints "GEMM bf16 torch: ..." and "MLP16 bf16 torch graph: ..." lines in HalfPrecision's format.
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_graphs import capture, per_forward

LAYERS = 16
WIDTHS = (512, 1024, 4096)
BATCHES = (1, 8, 32, 128, 256)
TRIALS = 15
PER_TRIAL = 20
FORWARDS = 200


def tflops(run, flops):
    for _ in range(5):
        run()
    results = []
    for _ in range(TRIALS):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(PER_TRIAL):
            run()
        end.record()
        end.synchronize()
        results.append(flops * PER_TRIAL / (start.elapsed_time(end) * 1e-3) / 1e12)
    return statistics.median(results)


def main():
    device = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    torch.manual_seed(0)
    big = torch.rand(8192, 8192, device=device, dtype=torch.bfloat16) * 2 - 1
    warm = time.perf_counter()
    while time.perf_counter() - warm < 3.0:
        F.linear(big, big)
        torch.cuda.synchronize()
    print(f"clock warm-up: {time.perf_counter() - warm:.1f} s of 8192^3 BF16 GEMMs before the first measurement")
    a = torch.rand(4096, 4096, device=device, dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(4096, 4096, device=device, dtype=torch.bfloat16) * 2 - 1
    square = tflops(lambda: F.linear(a, b), 2.0 * 4096 ** 3)
    print(f"GEMM bf16 torch: 4096x4096x4096: {square:.1f} TFLOP/s")
    x = torch.rand(2048, 512, device=device, dtype=torch.bfloat16) * 2 - 1
    w = torch.rand(640, 512, device=device, dtype=torch.bfloat16) * 2 - 1
    bias = torch.rand(640, device=device, dtype=torch.bfloat16) * 2 - 1
    flops = 2.0 * 2048 * 640 * 512
    linear = tflops(lambda: F.relu(F.linear(x, w, bias)), flops)
    print(f"GEMM bf16 torch: linear 2048x640x512 relu_bias: {linear:.1f} TFLOP/s, {flops / (linear * 1e12) * 1e6:.2f} us")
    for width in WIDTHS:
        model = torch.nn.Sequential(*[m for _ in range(LAYERS)
                                      for m in (torch.nn.Linear(width, width), torch.nn.ReLU())])
        model = model.to(device=device, dtype=torch.bfloat16).eval()
        for batch in BATCHES:
            inp = torch.rand(batch, width, device=device, dtype=torch.bfloat16) + 0.5
            with torch.no_grad():
                graph, static_out, eager_out = capture(model, inp)
                if not torch.equal(static_out, eager_out):
                    print(f"CHECK FAILED width {width} batch {batch}: the graph's output differs from eager's")
                    sys.exit(1)
                for _ in range(20):
                    graph.replay()
                sync_each, piped = per_forward(graph.replay, FORWARDS)
            print(f"MLP16 bf16 torch graph: width {width} batch {batch}: {sync_each:.1f} us sync each,"
                  f" {piped:.1f} us pipelined")
            del graph


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch twin of the MLP benchmark: 16 x (Linear(width, width) + ReLU), FP32 with TF32 off.

For each width and batch: eager and CUDA-graph replay (torch.cuda.graph), microseconds per forward
with a synchronize after each (latency, median of 200) and pipelined (200 forwards, one
synchronize). Inputs are random, never zero; the graph's output is checked against eager's.
Prints one line per cell, "MLP16 torch <mode>: width W batch B: X us sync each, Y us pipelined".
"""
import sys
import time

import torch

from torch_graphs import capture, per_forward

LAYERS = 16
WIDTHS = (512, 1024, 4096)
BATCHES = (1, 8, 32, 128, 256)


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
                graph, static_out, eager_out = capture(model, x)
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

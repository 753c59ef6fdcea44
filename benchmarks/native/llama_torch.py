#!/usr/bin/env python3
"""PyTorch peers of the Llama decode benchmark, on a checkpoint made by llama_reference.py.

For each batch size B: B prompts of random ids, all of --prompt-len tokens (no padding), greedy decoding of
--new-tokens N tokens. The first token comes from the prefill; the other N - 1 come from N - 1 decode
steps, so "ms per step" = decode time / (N - 1) and tokens/s = B * (N - 1) / decode time.
  hf_generate_eager: model.generate(do_sample=False, no EOS), PyTorch eager with transformers' dynamic KV
      cache (attention --attn, default sdpa). Decode time = whole call - a separate prefill forward.
  torch_static_graph: a gpt-fast style decoder in this file on the same weights (q/k/v and gate/up fused
      into one matrix each), static KV cache [B, NKV, P + N, D] attended in full under a position mask,
      eager prefill, and one decode step (forward, argmax, feeding the token back, position + 1) captured
      with torch.cuda.graph and replayed N - 1 times.
  torch_compile_reduce_overhead: torch.compile(step, mode="reduce-overhead") of that same step, B = 1 only;
      a failure is recorded, not raised.
Floor per step = (weight bytes + B * KV bytes at the mean context P + N/2) / read bandwidth measured here
(sum over a 4 GiB BF16 tensor); weight bytes count every matrix once (a tied embedding once, as lm_head
reads it; an untied input embedding not at all, as a step gathers only B rows of it).
Timing: CUDA events, one warm-up, median of --repeats. Prints a table and writes --out JSON.

  python3 llama_torch.py --model /tmp/llama-1b --out llama_torch.json
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
import transformers
from torch import nn
from transformers import LlamaForCausalLM

BF16 = torch.bfloat16


def timed(fn):
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    out = fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end), out


def llama3_inv_freq(config):
    """RoPE inverse frequencies from the config, as transformers' _compute_llama3_parameters computes them."""
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    theta = params.get("rope_theta", getattr(config, "rope_theta", None))
    dim = config.head_dim
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "default":
        return inv_freq
    if kind != "llama3":
        raise SystemExit(f"rope_type {kind!r} is not handled here (llama3 or default only)")
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    old = params["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) * ~(wavelen > old / low)
    return torch.where(medium, smoothed, scaled)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Layer(nn.Module):
    def __init__(self, hf_layer, batch, nkv, max_len, dim):
        super().__init__()
        a, m = hf_layer.self_attn, hf_layer.mlp
        # Buffers, not plain attributes: torch.compile's CUDA graphs treat buffers as static addresses
        # (a plain tensor attribute would be copied into the graph's input buffer on every call).
        self.register_buffer("w_in", hf_layer.input_layernorm.weight.detach(), persistent=False)
        self.register_buffer("wqkv", torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]).detach(),
                             persistent=False)
        self.register_buffer("wo", a.o_proj.weight.detach(), persistent=False)
        self.register_buffer("w_post", hf_layer.post_attention_layernorm.weight.detach(), persistent=False)
        self.register_buffer("w13", torch.cat([m.gate_proj.weight, m.up_proj.weight]).detach(), persistent=False)
        self.register_buffer("w2", m.down_proj.weight.detach(), persistent=False)
        shape = (batch, nkv, max_len, dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=BF16, device="cuda"), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=BF16, device="cuda"), persistent=False)


class StaticLlama(nn.Module):
    """Llama forward with transformers' numerics (BF16 residual, FP32 RMSNorm, BF16 cos/sin) and a static cache."""

    def __init__(self, hf, batch, max_len):
        super().__init__()
        c = hf.config
        self.nq, self.nkv, self.d, self.inter = (c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                                                 c.intermediate_size)
        self.eps = c.rms_norm_eps
        self.layers = nn.ModuleList(Layer(l, batch, self.nkv, max_len, self.d) for l in hf.model.layers)
        buf = lambda name, t: self.register_buffer(name, t, persistent=False)
        buf("embed", hf.model.embed_tokens.weight.detach())
        buf("norm", hf.model.norm.weight.detach())
        buf("lm_head", hf.lm_head.weight.detach())  # the embedding itself when tied
        self.inv_freq = llama3_inv_freq(c)
        freqs = torch.outer(torch.arange(max_len).float(), self.inv_freq)  # FP32, as transformers
        emb = torch.cat((freqs, freqs), dim=-1)
        buf("cos", emb.cos().to(device="cuda", dtype=BF16))
        buf("sin", emb.sin().to(device="cuda", dtype=BF16))
        buf("arange", torch.arange(max_len, device="cuda"))
        buf("tok", torch.zeros(batch, 1, dtype=torch.long, device="cuda"))  # the step's input token
        buf("pos", torch.zeros(1, dtype=torch.long, device="cuda"))  # its position
        buf("history", torch.zeros(batch, max_len, dtype=torch.long, device="cuda"))  # prompt + output

    def rms(self, x, w):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * h.to(x.dtype)

    def forward(self, tokens, positions):
        """Logits [B, V] of the last position; tokens [B, T] sit at positions [T]; writes their K/V."""
        b, t = tokens.shape
        nq, nkv, d = self.nq, self.nkv, self.d
        x = F.embedding(tokens, self.embed)
        cos, sin = self.cos[positions], self.sin[positions]
        mask = self.arange[None, :] <= positions[:, None]  # [T, max_len]: causal over the whole cache
        for layer in self.layers:
            h = self.rms(x, layer.w_in)
            q, k, v = F.linear(h, layer.wqkv).split([nq * d, nkv * d, nkv * d], dim=-1)
            q = q.view(b, t, nq, d).transpose(1, 2)
            k = k.view(b, t, nkv, d).transpose(1, 2)
            v = v.view(b, t, nkv, d).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            layer.k_cache.index_copy_(2, positions, k)
            layer.v_cache.index_copy_(2, positions, v)
            y = F.scaled_dot_product_attention(q, layer.k_cache, layer.v_cache, attn_mask=mask, enable_gqa=True)
            x = x + F.linear(y.transpose(1, 2).reshape(b, t, nq * d), layer.wo)
            gate, up = F.linear(self.rms(x, layer.w_post), layer.w13).split(self.inter, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.w2)
        return F.linear(self.rms(x[:, -1], self.norm), self.lm_head)

    def prefill(self, prompts):
        p = prompts.shape[1]
        logits = self(prompts, self.arange[:p])
        nxt = logits.argmax(-1)
        self.history[:, :p] = prompts
        self.history[:, p] = nxt
        self.tok.copy_(nxt[:, None])
        self.pos.fill_(p)
        return logits

    def step(self):
        """One greedy decode step on device state only, so it can be captured and replayed."""
        nxt = self(self.tok, self.pos).argmax(-1)
        self.history.index_copy_(1, self.pos + 1, nxt[:, None])
        self.tok.copy_(nxt[:, None])
        self.pos.add_(1)
        return nxt


def run_hf(model, prompts, n, repeats):
    mask = torch.ones_like(prompts)
    kw = dict(attention_mask=mask, do_sample=False, max_new_tokens=n, min_new_tokens=n, eos_token_id=None,
              pad_token_id=0)
    totals, prefills, out = [], [], None
    with torch.no_grad():
        for r in range(repeats + 1):  # the first round is the warm-up
            total, out = timed(lambda: model.generate(input_ids=prompts, **kw))
            # generate's own prefill computes only the last position's logits; so does this one.
            pre, _ = timed(lambda: model(input_ids=prompts, attention_mask=mask, use_cache=True, logits_to_keep=1))
            if r:
                totals.append(total)
                prefills.append(pre)
    if out.shape[1] != prompts.shape[1] + n:
        print(f"WARNING: generate returned {out.shape[1] - prompts.shape[1]} new tokens, expected {n}")
    prefill = statistics.median(prefills)
    return {"prefill_ms": prefill, "decode_ms": statistics.median(totals) - prefill, "total_ms_all": totals,
            "prefill_ms_all": prefills}, out


def run_static(st, prompts, n, repeats):
    with torch.no_grad():
        st.prefill(prompts)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph requires
            for _ in range(3):
                st.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            st.step()
        prefills, decodes = [], []
        for r in range(repeats + 1):
            pre, _ = timed(lambda: st.prefill(prompts))  # also resets tok, pos and history
            dec, _ = timed(lambda: [graph.replay() for _ in range(n - 1)])
            if r:
                prefills.append(pre)
                decodes.append(dec)
    torch.cuda.synchronize()
    del graph
    return {"prefill_ms": statistics.median(prefills), "decode_ms": statistics.median(decodes),
            "prefill_ms_all": prefills, "decode_ms_all": decodes}, st.history.clone()


def run_compiled(st, prompts, n, repeats):
    for t in st.buffers():
        torch._dynamo.mark_static_address(t)
    compiled = torch.compile(st.step, mode="reduce-overhead")

    def decode(count):
        for _ in range(count):
            torch.compiler.cudagraph_mark_step_begin()
            compiled()

    with torch.no_grad():
        t0 = time.perf_counter()
        st.prefill(prompts)
        decode(3)  # compile, CUDA-graph warm-up and recording
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        prefills, decodes = [], []
        for r in range(repeats + 1):
            pre, _ = timed(lambda: st.prefill(prompts))
            dec, _ = timed(lambda: decode(n - 1))
            if r:
                prefills.append(pre)
                decodes.append(dec)
    skips = {k: v for k, v in torch._dynamo.utils.counters["inductor"].items() if "cudagraph" in k}
    return {"prefill_ms": statistics.median(prefills), "decode_ms": statistics.median(decodes),
            "prefill_ms_all": prefills, "decode_ms_all": decodes, "compile_s": compile_s,
            "inductor_cudagraph_counters": dict(skips)}, st.history.clone()


def agreement(a, b, p):
    """Per row: how many generated tokens agree before the first difference."""
    rows = []
    for x, y in zip(a[:, p:].tolist(), b[:, p:].tolist()):
        same = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), len(x))
        rows.append(same)
    return rows


def measure_bandwidth(runs=10):
    x = torch.ones(2 ** 31, dtype=BF16, device="cuda")  # 4 GiB
    for _ in range(3):
        x.sum()
    times = [timed(lambda: x.sum())[0] for _ in range(runs)]
    nbytes = x.numel() * x.element_size()
    del x
    torch.cuda.empty_cache()
    return {"bytes": nbytes, "gbps_median": nbytes / statistics.median(times) / 1e6,
            "gbps_best": nbytes / min(times) / 1e6, "ms_all": times}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory from llama_reference.py")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--hf-repeats", type=int, default=2,
                    help="timed generate calls per batch (each 256 eager steps; its time per step varies little)")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"], help="transformers attention")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true", help="skip torch_compile_reduce_overhead")
    ap.add_argument("--out", help="JSON file")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    p, n = args.prompt_len, args.new_tokens
    if n < 8:
        raise SystemExit("--new-tokens must be at least 8 (the graph warm-up takes 3 steps)")
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=BF16, attn_implementation=args.attn)
    model = model.to("cuda").eval()
    model.generation_config.eos_token_id = None  # always N tokens; no processor touches EOS logits
    c = model.config
    if p + n > c.max_position_embeddings:
        raise SystemExit(f"prompt {p} + {n} tokens exceed max_position_embeddings {c.max_position_embeddings}")
    device = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, transformers {transformers.__version__} on {device}")

    bw = measure_bandwidth()
    print(f"read bandwidth (sum over 4 GiB BF16): {bw['gbps_median']:.0f} GB/s median, {bw['gbps_best']:.0f} best")
    params = {t.data_ptr(): t for t in model.parameters()}.values()  # a tied matrix once
    weight_bytes = sum(t.numel() * t.element_size() for t in params)
    if not c.tie_word_embeddings:
        weight_bytes -= model.model.embed_tokens.weight.numel() * 2
    kv_per_pos = c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim * 2
    hf_inv = next((b for name, b in model.named_buffers() if name.endswith(".inv_freq")), None)
    inv_diff = None if hf_inv is None else (llama3_inv_freq(c) - hf_inv.float().cpu()).abs().max().item()
    print(f"weights read per step {weight_bytes / 1e9:.3f} GB; KV {kv_per_pos} B per position per sequence; "
          f"inv_freq max diff vs transformers {inv_diff}")

    results, checks = [], {}
    vocab_hi = min(c.vocab_size, 128000)  # no Llama 3 special tokens
    for b in batches:
        gen = torch.Generator().manual_seed(args.seed + b)
        prompts = torch.randint(0, vocab_hi, (b, p), generator=gen).to("cuda")
        floor_ms = (weight_bytes + b * kv_per_pos * (p + n / 2)) / (bw["gbps_median"] * 1e6)
        row = lambda method, r: {"method": method, "batch": b, "floor_ms_per_step": floor_ms, **r}
        hf, hf_tokens = run_hf(model, prompts, n, args.hf_repeats)
        results.append(row("hf_generate_eager", hf))
        st = StaticLlama(model, b, p + n)
        with torch.no_grad():
            ours = st(prompts, st.arange[:p]).float()
            ref = model(input_ids=prompts, use_cache=False, logits_to_keep=1).logits[:, -1].float()
        stat, st_tokens = run_static(st, prompts, n, args.repeats)
        results.append(row("torch_static_graph", stat))
        agree = agreement(hf_tokens, st_tokens, p)
        checks[f"static_vs_hf_b{b}"] = {
            "prefill_logits_max_abs_diff": (ours - ref).abs().max().item(),
            "prefill_logits_rel_l2": ((ours - ref).norm() / ref.norm()).item(),
            "agreeing_prefix_per_row": agree, "first8_all_rows_match": min(agree) >= min(8, n)}
        print(f"B={b}: static graph vs generate: prefill logits rel L2 "
              f"{checks[f'static_vs_hf_b{b}']['prefill_logits_rel_l2']:.3g}, tokens agree before the first "
              f"difference per row: {agree}")
        del st
        torch.cuda.empty_cache()
        if b == 1 and not args.no_compile:
            try:
                ct, ct_tokens = run_compiled(StaticLlama(model, b, p + n), prompts, n, args.repeats)
                results.append(row("torch_compile_reduce_overhead", ct))
                checks["compile_vs_static_b1"] = {"agreeing_prefix_per_row": agreement(ct_tokens, st_tokens, p)}
            except Exception as e:  # recorded: the other peers still count
                results.append(row("torch_compile_reduce_overhead", {"error": f"{type(e).__name__}: {e}"[:2000]}))
                print(f"torch.compile failed: {type(e).__name__}: {str(e)[:300]}")
            torch.cuda.empty_cache()

    steps = n - 1
    print(f"\n{'method':32} {'B':>3} {'prefill ms':>10} {'ms/step':>8} {'tok/s':>9} {'floor ms':>8} {'% floor':>7}")
    for r in results:
        if "error" in r:
            print(f"{r['method']:32} {r['batch']:>3} failed: {r['error'][:60]}")
            continue
        r["decode_ms_per_step"] = r["decode_ms"] / steps
        r["tokens_per_s"] = r["batch"] * steps / (r["decode_ms"] / 1e3)
        r["share_of_floor"] = r["floor_ms_per_step"] / r["decode_ms_per_step"]
        print(f"{r['method']:32} {r['batch']:>3} {r['prefill_ms']:>10.2f} {r['decode_ms_per_step']:>8.3f} "
              f"{r['tokens_per_s']:>9.0f} {r['floor_ms_per_step']:>8.3f} {100 * r['share_of_floor']:>6.1f}%")
    if args.out:
        summary = {
            "device": device, "torch": torch.__version__, "transformers": transformers.__version__,
            "model": args.model, "attn_implementation": args.attn, "prompt_len": p, "new_tokens": n,
            "decode_steps": steps, "repeats": args.repeats, "prompts": "random ids, same length, no padding",
            "config": {k: getattr(c, k) for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                                  "num_attention_heads", "num_key_value_heads", "head_dim",
                                                  "vocab_size", "tie_word_embeddings")},
            "bandwidth": bw, "weight_bytes": weight_bytes, "kv_bytes_per_position": kv_per_pos,
            "floor_context": p + n / 2, "inv_freq_max_abs_diff_vs_transformers": inv_diff,
            "results": results, "checks": checks}
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=2)
            f.write("\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Random-weight Llama checkpoint and reference logits for checking the Java decoder.

Writes, under --out DIR:
  config.json, generation_config.json, model.safetensors (or shards + model.safetensors.index.json):
      the checkpoint, written by transformers' save_pretrained in BF16. config.json is then given the
      legacy keys that published Llama 3 checkpoints carry (rope_theta, rope_scaling, torch_dtype) where
      transformers 5 wrote only rope_parameters/dtype; --keep-config-json leaves the file as written.
  reference.safetensors:
      tokens        int32   [prompt_len + steps]   random ids (below 128000 for 1b: no special tokens)
      logits_bf16   float32 [steps + 1, V]  transformers' BF16 forward, positions prompt_len-1 .. prompt_len-1+steps
      logits_fp32   float32 [steps + 1, V]  the same weights upcast to FP32 (TF32 off), same positions
      inv_freq      float32 [head_dim / 2]  the llama3-scaled RoPE inverse frequencies transformers used
      batch{i}_tokens / batch{i}_logits_bf16 / batch{i}_logits_fp32   with --batch-prompts N, i < N
      greedy_tokens int32   [G]  with --greedy-steps G: generate() continuation of tokens[:prompt_len], BF16
  reference.json: settings, versions, device, and transformers' own BF16-vs-FP32 error per step (max abs,
      relative L2, top-1 agreement, top-10 overlap, FP32 top-1 margin). These define the tolerance for the
      Java decoder: its error against logits_fp32 must stay within a small multiple of these.

Teacher forcing: one forward over the whole sequence (position_ids 0..n-1, no KV cache), so logits row s
is the prediction after prompt_len + s tokens. Weights: transformers' default init (normal, std
initializer_range = 0.02; RMSNorm weights 1), except that RMSNorm weights are redrawn uniform in
[1 - j, 1 + j] (--norm-jitter j, default 0.25) so a decoder that swaps or skips a norm weight is caught.
Attention is transformers' "eager" implementation in both runs: plain matmuls (true FP32 with TF32 off)
and an FP32 softmax, so the two runs differ only in dtype.

  python3 llama_reference.py --out /tmp/llama-tiny --config tiny --batch-prompts 3 --greedy-steps 16
  python3 llama_reference.py --out /tmp/llama-1b --config 1b --shard-size 1GB --greedy-steps 32
"""
import argparse
import copy
import inspect
import json
import os
import time

import torch
import transformers
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

SPECIAL_START = 128000  # Llama 3 special tokens start here; random prompts stay below

CONFIGS = {
    # Llama 3.2 1B's shape.
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5, rope_theta=500000.0,
               rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                 original_max_position_embeddings=8192),
               tie_word_embeddings=True, vocab_size=128256, max_position_embeddings=131072,
               bos_token_id=128000, eos_token_id=[128001, 128008, 128009]),
    # Small enough for CPU unit tests; untied so lm_head.weight is exercised; head_dim 64 as the GPU
    # decoder's attention takes it, with 2 query heads on 1 kv head; original_max_position_embeddings 64
    # puts its frequencies in all three llama3 bands (kept, smoothed, divided by factor).
    "tiny": dict(hidden_size=128, intermediate_size=352, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=64, rms_norm_eps=1e-5, rope_theta=500000.0,
                 rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                   original_max_position_embeddings=64),
                 tie_word_embeddings=False, vocab_size=512, max_position_embeddings=256,
                 bos_token_id=1, eos_token_id=[2]),
}
ATTN = "eager"


def effective_rope(config):
    """(theta, scaling dict) as the config object holds them: transformers 5 keeps both in rope_parameters."""
    params = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    theta = params.get("rope_theta", getattr(config, "rope_theta", None))
    return theta, params


def build_model(name, seed, norm_jitter):
    spec = dict(CONFIGS[name])
    # rope_theta/rope_scaling kwargs are accepted by transformers 4 and mapped to rope_parameters by 5.
    spec["rope_scaling"] = dict(spec["rope_scaling"])
    config = LlamaConfig(hidden_act="silu", attention_bias=False, mlp_bias=False, initializer_range=0.02,
                         attn_implementation=ATTN, **spec)
    theta, params = effective_rope(config)
    want = CONFIGS[name]["rope_scaling"]
    if theta != CONFIGS[name]["rope_theta"] or any(params.get(k) != v for k, v in want.items()):
        raise SystemExit(f"LlamaConfig did not keep the RoPE settings: theta {theta}, parameters {params}")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)  # built on the CPU in FP32: the CPU generator is the same on every host
    gen = torch.Generator().manual_seed(seed + 1)
    norms = [m for m in model.modules() if type(m).__name__ == "LlamaRMSNorm"]
    if len(norms) != 2 * config.num_hidden_layers + 1:
        raise SystemExit(f"found {len(norms)} LlamaRMSNorm modules, expected {2 * config.num_hidden_layers + 1}")
    with torch.no_grad():
        for module in norms if norm_jitter > 0 else []:
            w = torch.rand(module.weight.shape, generator=gen) * (2 * norm_jitter) + (1 - norm_jitter)
            module.weight.copy_(w)
    # Module.to(dtype) would also round the RoPE inv_freq buffers to BF16; from_pretrained(dtype=bf16) keeps
    # them FP32, so put the FP32 values back after the cast.
    rope_buffers = {n: b.clone() for n, b in model.named_buffers() if "inv_freq" in n}
    model = model.to(device="cuda", dtype=torch.bfloat16).eval()
    for full_name, value in rope_buffers.items():
        owner_name, _, attr = full_name.rpartition(".")
        setattr(model.get_submodule(owner_name), attr, value.to("cuda"))
    return model


def save_checkpoint(model, out, shard_size, keep_config_json, name):
    kwargs = {}
    if shard_size:
        kwargs["max_shard_size"] = shard_size
    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        kwargs["safe_serialization"] = True
    if hasattr(model.config, "dtype"):
        model.config.dtype = torch.bfloat16
    model.save_pretrained(out, **kwargs)
    path = os.path.join(out, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    if not keep_config_json:
        # Published Llama 3 checkpoints (written by transformers 4) carry these keys; transformers 5 writes
        # rope_parameters and dtype instead. Both forms load in transformers 5 and give the same model.
        cfg.setdefault("rope_theta", CONFIGS[name]["rope_theta"])
        cfg.setdefault("rope_scaling", dict(CONFIGS[name]["rope_scaling"]))
        cfg.setdefault("torch_dtype", "bfloat16")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
    dtype = cfg.get("dtype", cfg.get("torch_dtype"))
    if dtype != "bfloat16":
        raise SystemExit(f"{path}: dtype is {dtype!r}, expected 'bfloat16'")
    return cfg


@torch.no_grad()
def forced_logits(model, tokens, first, count):
    """Logits rows first .. first+count-1 of one teacher-forced forward over tokens, as FP32 on the CPU."""
    ids = tokens.to(device="cuda", dtype=torch.long)[None]
    positions = torch.arange(ids.shape[1], device="cuda")[None]
    logits = model(input_ids=ids, position_ids=positions, use_cache=False).logits
    return logits[0, first:first + count].float().cpu().contiguous()


def compare(l16, l32):
    """Per-row error of l16 against l32 ([rows, V] FP32)."""
    diff = l16 - l32
    top16, top32 = l16.topk(10, dim=-1).indices, l32.topk(10, dim=-1).indices
    two = l32.topk(2, dim=-1).values
    rows = {
        "max_abs": diff.abs().amax(-1).tolist(),
        "rel_l2": (diff.norm(dim=-1) / l32.norm(dim=-1)).tolist(),
        "top1_agree": (l16.argmax(-1) == l32.argmax(-1)).tolist(),
        "top10_overlap": [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(top16, top32)],
        "fp32_top1_margin": (two[:, 0] - two[:, 1]).tolist(),
        "fp32_max_abs_logit": l32.abs().amax(-1).tolist(),
    }
    rows["summary"] = {
        "max_abs_max": max(rows["max_abs"]),
        "rel_l2_max": max(rows["rel_l2"]),
        "rel_l2_mean": sum(rows["rel_l2"]) / len(rows["rel_l2"]),
        "top1_agree": f"{sum(rows['top1_agree'])}/{len(rows['top1_agree'])}",
        "top10_overlap_min": min(rows["top10_overlap"]),
        "top10_overlap_mean": sum(rows["top10_overlap"]) / len(rows["top10_overlap"]),
    }
    return rows


@torch.no_grad()
def greedy(model, prompt, count):
    ids = prompt.to(device="cuda", dtype=torch.long)[None]
    # No EOS: generation runs exactly `count` steps, and no logits processor touches the EOS logits.
    model.generation_config.eos_token_id = None
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=count,
                         do_sample=False, eos_token_id=None, pad_token_id=0)
    new = out[0, ids.shape[1]:]
    if new.numel() != count:
        raise SystemExit(f"generate returned {new.numel()} new tokens, expected {count}")
    return new.to(torch.int32).cpu()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt-len", type=int, help="default 128 for 1b, 12 for tiny")
    p.add_argument("--steps", type=int, default=32, help="teacher-forced decode steps")
    p.add_argument("--shard-size", help="save_pretrained max_shard_size, e.g. 1GB, to force shards")
    p.add_argument("--batch-prompts", type=int, default=0, help="extra prompts of decreasing lengths")
    p.add_argument("--greedy-steps", type=int, default=0, help="generate() tokens to store as greedy_tokens")
    p.add_argument("--norm-jitter", type=float, default=0.25, help="RMSNorm weights uniform in [1-j, 1+j]")
    p.add_argument("--keep-config-json", action="store_true", help="leave config.json as transformers wrote it")
    args = p.parse_args()
    spec = CONFIGS[args.config]
    prompt_len = args.prompt_len or (128 if args.config == "1b" else 12)
    total = prompt_len + args.steps
    if prompt_len < 1 or args.steps < 1 or total > spec["max_position_embeddings"]:
        raise SystemExit(f"prompt_len {prompt_len} + steps {args.steps} must be positive and fit "
                         f"max_position_embeddings {spec['max_position_embeddings']}")
    # Prompt lengths for --batch-prompts: prompt_len, prompt_len - stride, ...; stride 7 where that fits.
    n = args.batch_prompts
    stride = max(1, min(7, (prompt_len - 1) // max(1, n - 1)))
    batch_lens = [prompt_len - stride * i for i in range(n)]
    if n and batch_lens[-1] < 1:
        raise SystemExit(f"--batch-prompts {n} needs a longer --prompt-len than {prompt_len}")

    # The FP32 run must be true FP32: TF32 would cut matmul inputs to 10-bit mantissas.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    t0 = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    model = build_model(args.config, args.seed, args.norm_jitter)
    config_json = save_checkpoint(model, args.out, args.shard_size, args.keep_config_json, args.config)
    model32 = copy.deepcopy(model).float()  # the checkpoint's BF16 values, exactly, in FP32
    print(f"built and saved {args.config} in {time.perf_counter() - t0:.1f} s "
          f"(attention {model.config._attn_implementation})")

    hi = min(spec["vocab_size"], SPECIAL_START)
    gen = torch.Generator().manual_seed(args.seed)
    tensors = {}
    inv_freq = [b for n_, b in model.named_buffers() if n_.endswith(".inv_freq")][0]
    tensors["inv_freq"] = inv_freq.float().cpu().contiguous()
    tokens = torch.randint(0, hi, (total,), generator=gen)
    tensors["tokens"] = tokens.to(torch.int32)
    tensors["logits_bf16"] = forced_logits(model, tokens, prompt_len - 1, args.steps + 1)
    tensors["logits_fp32"] = forced_logits(model32, tokens, prompt_len - 1, args.steps + 1)
    main_stats = compare(tensors["logits_bf16"], tensors["logits_fp32"])
    batch_stats = []
    for i, length in enumerate(batch_lens):
        seq = torch.randint(0, hi, (length + args.steps,), generator=gen)
        tensors[f"batch{i}_tokens"] = seq.to(torch.int32)
        tensors[f"batch{i}_logits_bf16"] = forced_logits(model, seq, length - 1, args.steps + 1)
        tensors[f"batch{i}_logits_fp32"] = forced_logits(model32, seq, length - 1, args.steps + 1)
        stats = compare(tensors[f"batch{i}_logits_bf16"], tensors[f"batch{i}_logits_fp32"])
        batch_stats.append({"prompt_len": length, **stats})
    del model32
    if args.greedy_steps > 0:
        tensors["greedy_tokens"] = greedy(model, tokens[:prompt_len], args.greedy_steps)
    save_file(tensors, os.path.join(args.out, "reference.safetensors"))

    embed = model.get_input_embeddings().weight.float()
    summary = {
        "config": args.config,
        "seed": args.seed,
        "prompt_len": prompt_len,
        "steps": args.steps,
        "logit_rows": "row s = logits after prompt_len + s tokens, i.e. at position prompt_len - 1 + s",
        "batch_prompt_lens": batch_lens,
        "greedy_steps": args.greedy_steps,
        "greedy": "model.generate(tokens[:prompt_len]) in BF16 with a KV cache, do_sample=False, no EOS",
        "token_range": [0, hi],
        "attn_implementation": model.config._attn_implementation,
        "init": f"transformers default (normal std 0.02), RMSNorm weights uniform [{1 - args.norm_jitter}, "
                f"{1 + args.norm_jitter}], torch.manual_seed({args.seed}) on the CPU",
        "embed_std": embed.std().item(),
        "tf32": False,
        "bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(0),
        "config_json": config_json,
        "files": sorted(os.listdir(args.out)) + ["reference.json"],
        "bf16_vs_fp32": main_stats,
        "batch_bf16_vs_fp32": batch_stats,
        "seconds": time.perf_counter() - t0,
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    s = main_stats["summary"]
    print(f"transformers BF16 vs FP32 over {args.steps + 1} rows: max abs {s['max_abs_max']:.4g}, "
          f"rel L2 max {s['rel_l2_max']:.4g} mean {s['rel_l2_mean']:.4g}, top-1 {s['top1_agree']}, "
          f"top-10 overlap min {s['top10_overlap_min']} mean {s['top10_overlap_mean']:.2f}")
    for b in batch_stats:
        s = b["summary"]
        print(f"  prompt {b['prompt_len']}: rel L2 max {s['rel_l2_max']:.4g}, top-1 {s['top1_agree']}")
    print(f"wrote {args.out}: {', '.join(summary['files'])}")


if __name__ == "__main__":
    main()

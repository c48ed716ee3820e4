#!/usr/bin/env python3
"""Checks minfer against HF transformers' Qwen2ForCausalLM, Qwen3ForCausalLM and
LlamaForCausalLM (code nobody here wrote), picked by the dump's architecture.

Input: a directory written by `minfer-dump MODEL --ids ... --out DIR` (dequantized weights,
minfer's per-layer hidden states and last-row logits for both matmul paths, greedy tokens).
The HF model is built from the same hyper-parameters, loaded with the same dequantized weights
and run in float64 on the CPU. Prints a JSON report and writes it to --report.

Llama: llama.cpp's converter permutes the rows of attn_q/attn_k so that ggml's adjacent-pair
RoPE matches HF's rotate-half; they are permuted back here. rope_freqs.weight (Llama 3.1
scaling) is not a HF weight: its factor goes into rope_scaling, and the HF inverse frequencies
are checked against base^(-2i/d) / rope_freqs.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)

# Llama 3.1's rope scaling constants (the factor comes from rope_freqs.weight).
LLAMA3_LOW_FREQ_FACTOR, LLAMA3_HIGH_FREQ_FACTOR, LLAMA3_OLD_CONTEXT = 1.0, 4.0, 8192


def load_f32(path, shape=None):
    a = np.fromfile(path, dtype="<f4")
    return a.reshape(shape) if shape is not None else a


def unpermute_rows(w, n_head):
    """Inverse of llama.cpp's permute(): GGUF adjacent-pair row order back to HF rotate-half."""
    out, cols = w.shape
    return w.reshape(n_head, out // n_head // 2, 2, cols).swapaxes(1, 2).reshape(out, cols)


def build_hf(d, idx):
    h = idx["hparams"]
    arch = h.get("architecture", "qwen2")  # older dumps are qwen2
    head_dim = h.get("head_dim", h["n_embd"] // h["n_head"])
    common = dict(
        vocab_size=h["n_vocab"], hidden_size=h["n_embd"], intermediate_size=h["n_ff"],
        num_hidden_layers=h["n_layer"], num_attention_heads=h["n_head"],
        num_key_value_heads=h["n_head_kv"], max_position_embeddings=h["n_ctx"],
        rope_theta=h["rope_base"], rms_norm_eps=h["rms_eps"], tie_word_embeddings=h["tied"],
        attn_implementation="eager", torch_dtype=torch.float64)
    divisors = None
    if arch == "qwen2":
        cfg, cls = Qwen2Config(use_sliding_window=False, **common), Qwen2ForCausalLM
    elif arch == "qwen3":
        cfg, cls = Qwen3Config(head_dim=head_dim, use_sliding_window=False, attention_bias=False, **common), Qwen3ForCausalLM
    elif arch == "llama":
        rope_scaling = None
        if "rope_freqs.weight" in idx["weights"]:
            divisors = load_f32(os.path.join(d, "weights", "rope_freqs.weight.f32")).astype(np.float64)
            rope_scaling = {"rope_type": "llama3", "factor": float(divisors.max()),
                            "low_freq_factor": LLAMA3_LOW_FREQ_FACTOR, "high_freq_factor": LLAMA3_HIGH_FREQ_FACTOR,
                            "original_max_position_embeddings": LLAMA3_OLD_CONTEXT}
        cfg = LlamaConfig(head_dim=head_dim, attention_bias=False, mlp_bias=False, rope_scaling=rope_scaling, **common)
        cls = LlamaForCausalLM
    else:
        sys.exit(f"no HF model for architecture '{arch}'")
    model = cls(cfg).to(torch.float64).eval()
    if divisors is not None:
        base = h["rope_base"] ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
        hf_inv = model.model.rotary_emb.inv_freq.double().numpy()
        if not np.allclose(hf_inv, base / divisors, rtol=1e-5):
            sys.exit(f"rope_freqs.weight does not match HF's llama3 rope scaling: {divisors} vs {base / hf_inv}")
    # GGUF name -> HF name. GGUF ne = [in, out] is stored row-major [out][in], as torch Linear.
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
                 "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
                 "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
                 "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
                 "attn_output.weight": "self_attn.o_proj.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
                 "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight",
                 "attn_q_norm.weight": "self_attn.q_norm.weight", "attn_k_norm.weight": "self_attn.k_norm.weight"}
    state = {}
    for gname, info in idx["weights"].items():
        if gname == "rope_freqs.weight":
            continue  # in rope_scaling, checked above
        if gname.startswith("blk."):
            _, layer, rest = gname.split(".", 2)
            hname = f"model.layers.{layer}.{per_layer[rest]}"
        else:
            hname = names[gname]
        shape = list(reversed(info["ne"]))
        w = load_f32(os.path.join(d, "weights", gname + ".f32"), shape).astype(np.float64)
        if arch == "llama" and gname.endswith(("attn_q.weight", "attn_k.weight")):
            w = unpermute_rows(w, h["n_head"] if gname.endswith("attn_q.weight") else h["n_head_kv"])
        state[hname] = torch.from_numpy(np.ascontiguousarray(w))
    if h["tied"]:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if "rotary" not in m]
    if missing or unexpected:
        sys.exit(f"weights do not map onto {cls.__name__}: missing {missing}, unexpected {unexpected}")
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump_dir")
    ap.add_argument("--label", default="")
    ap.add_argument("--report", default="")
    a = ap.parse_args()
    idx = json.load(open(os.path.join(a.dump_dir, "index.json")))
    h = idx["hparams"]
    model = build_hf(a.dump_dir, idx)
    ids = torch.tensor([idx["prompt_ids"]])
    outs = {}
    hooks = [layer.register_forward_hook(lambda m, i, o, k=k: outs.__setitem__(k, (o[0] if isinstance(o, tuple) else o).detach()))
             for k, layer in enumerate(model.model.layers)]
    with torch.no_grad():
        logits = model(ids).logits[0, -1].numpy()
    for hk in hooks:
        hk.remove()
    report = {"label": a.label, "hparams": h, "prompt_tokens": len(idx["prompt_ids"]),
              "weight_types": sorted({w["type"] for w in idx["weights"].values()}), "paths": {}}
    n = len(idx["prompt_ids"])
    # The dump names its float path for what it computes (f32 on cpu, f16 on cuda); older
    # dumps have no "paths" and called it f16.
    for path in idx.get("paths", ["mmq", "f16"]):
        pd = os.path.join(a.dump_dir, path)
        layers = []
        for k in range(h["n_layer"]):
            ref = outs[k][0].numpy().reshape(n, h["n_embd"])
            got = load_f32(os.path.join(pd, f"blk.{k}.ffn_residual.f32"), (n, h["n_embd"]))
            layers.append(float(np.abs(got - ref).max() / np.abs(ref).max()))
        got_logits = load_f32(os.path.join(pd, "logits_last.f32"))
        lrange = float(logits.max() - logits.min())
        # Top-1 agreement: teacher-force minfer's greedy continuation through HF.
        greedy = idx[path]["greedy"]
        seq = torch.tensor([idx["prompt_ids"] + greedy[:-1]])
        with torch.no_grad():
            hl = model(seq).logits[0, n - 1:].numpy()
        agree = int(sum(int(np.argmax(hl[i]) == greedy[i]) for i in range(len(greedy))))
        report["paths"][path] = {
            "layer_rel_err_max": max(layers), "layer_rel_err": layers,
            "logit_max_abs_err": float(np.abs(got_logits - logits).max()),
            "logit_range": lrange,
            "logit_max_abs_err_rel_range": float(np.abs(got_logits - logits).max() / lrange),
            "top1_last_prompt_token_equal": bool(np.argmax(got_logits) == np.argmax(logits)),
            "greedy_tokens": len(greedy), "greedy_top1_agreement": agree / max(1, len(greedy)),
        }
    txt = json.dumps(report, indent=1)
    print(txt)
    if a.report:
        with open(a.report, "w") as f:
            f.write(txt)


if __name__ == "__main__":
    main()

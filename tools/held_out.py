#!/usr/bin/env python3
"""Run the held-out checks of docs/validation.md: published end-to-end iteration times of
Megatron-LM and NeMo runs that the kernel model was not fitted to, each through `placesim plan`
as the run was configured, with the same calibrated model for all.

Each row names its source, the model by its dimensions, the cluster preset, the plan's flags and
the published figure (an iteration time in seconds, or tokens/s per GPU, converted by the global
batch: seconds = global batch x sequence / (tokens/s per GPU x GPUs)). The script prints the
table of docs/validation.md (measured, predicted, error) with the mean absolute error per GPU
and overall, and writes it as CSV. Where a source leaves a setting out, the row takes what its
launch script or recipe uses (docs/validation.md says which). A plan that does not fit in GPU
memory is printed with placesim's reason and left out of the means. Usage (after the build;
about ten minutes, the 1T and 530B rows the longest):

    /usr/bin/python3 tools/held_out.py [--placesim build/placesim] [--only SUBSTRING] [-o held-out.csv]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

# Models by their dimensions (placesim's --model-file keys).
MODELS = {
    # Narayanan et al. 2021, Table 1: GPT with vocabulary 51,200, sequence 2,048.
    "gpt-1.7b": dict(family="gpt", layers=24, hidden=2304, heads=24, vocab=51200, sequence=2048),
    "gpt-3.6b": dict(family="gpt", layers=30, hidden=3072, heads=32, vocab=51200, sequence=2048),
    "gpt-7.5b": dict(family="gpt", layers=36, hidden=4096, heads=32, vocab=51200, sequence=2048),
    "gpt-18b": dict(family="gpt", layers=40, hidden=6144, heads=48, vocab=51200, sequence=2048),
    "gpt-39b": dict(family="gpt", layers=48, hidden=8192, heads=64, vocab=51200, sequence=2048),
    "gpt-76b": dict(family="gpt", layers=60, hidden=10240, heads=80, vocab=51200, sequence=2048),
    "gpt-145b": dict(family="gpt", layers=80, hidden=12288, heads=96, vocab=51200, sequence=2048),
    "gpt-310b": dict(family="gpt", layers=96, hidden=16384, heads=128, vocab=51200, sequence=2048),
    "gpt-530b": dict(family="gpt", layers=105, hidden=20480, heads=128, vocab=51200, sequence=2048),
    "gpt-1t": dict(family="gpt", layers=128, hidden=25600, heads=160, vocab=51200, sequence=2048),
    "gpt3-175b": dict(family="gpt", layers=96, hidden=12288, heads=96, vocab=51200, sequence=2048),
    # NeMo's GPT-3 175B (GPTConfig175B): no dropout.
    "gpt3-175b-nemo": dict(family="gpt", layers=96, hidden=12288, heads=96, vocab=51200, sequence=2048, dropout=False),
    # BLOOM: vocabulary 250,880, tied embeddings, no dropout; ALiBi, where family gpt keeps a learned
    # position table (2,048 x 14,336 weights, 0.02% of the model).
    "bloom-176b": dict(family="gpt", layers=70, hidden=14336, heads=112, vocab=250880, sequence=2048, dropout=False),
    "llama2-70b": dict(family="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=32000,
                       sequence=4096),
    "llama3-8b": dict(family="llama", layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256,
                      sequence=8192),
    "llama3-70b": dict(family="llama", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, vocab=128256,
                       sequence=8192),
    "llama3.1-405b": dict(family="llama", layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248,
                          vocab=128256, sequence=8192),
    # Nemotron-4 340B: rotary, untied, no dropout (family llama), a feed-forward that is not gated
    # (squared ReLU, timed as GELU: both element-wise); its LayerNorm is timed as llama's RMSNorm.
    "nemotron4-340b": dict(family="llama", layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728,
                           vocab=256000, sequence=4096, activation="gelu"),
}

NARAYANAN = ("Narayanan et al. 2021, Table 1 (TFLOP/s with recomputation, their eq. 3; micro-batch, interleaving and "
             "data-parallel implementation from examples/sc21: PyTorch's DDP up to 18B, Megatron's local DDP from 39B)")
NEMO_2409 = "NeMo 24.09 performance summary, fp8"
DGXC = "NVIDIA DGX Cloud benchmarking (dgxc-benchmarking), NeMo 24.09, bf16 (MFU of 989 TFLOP/s, tokens/s of all GPUs)"

A100_FULL = ["--precision", "fp16", "--recompute", "full", "--attention", "unfused"]
H100_NEMO = ["--sequence-parallel", "--distributed-optimizer", "--recompute", "none"]


def narayanan_seconds(batch, layers, hidden, tflops, gpus, seq=2048, vocab=51200):
    """Their eq. 3 (full recomputation): F = 96 B s l h^2 (1 + s / 6h + V / 16lh), at the TFLOP/s they report."""
    flops = 96 * batch * seq * layers * hidden ** 2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return flops / (tflops * 1e12 * gpus)


def row(source, model, gpus, gbs, mbs, flags, gpu="a100", tp=1, pp=1, cp=1, vp=1, seconds=None, tokens_per_gpu=None,
        cluster=None, label=None):
    if seconds is None:
        seconds = gbs * MODELS[model]["sequence"] / (tokens_per_gpu * gpus)
    return dict(source=source, model=model, gpus=gpus, gbs=gbs, mbs=mbs, tp=tp, pp=pp, cp=cp, vp=vp, gpu=gpu,
                flags=flags, measured=seconds, cluster=cluster, label=label or model)


def narayanan(model, gpus, batch, tflops, mbs, tp, pp=1, vp=1, local_ddp=False):
    m = MODELS[model]
    flags = A100_FULL + (["--no-overlap-grad-reduce"] if local_ddp else [])
    return row(NARAYANAN, model, gpus, batch, mbs, flags, tp=tp, pp=pp, vp=vp,
               seconds=narayanan_seconds(batch, m["layers"], m["hidden"], tflops, gpus))


ROWS = [
    narayanan("gpt-1.7b", 32, 512, 137, 16, 1),
    narayanan("gpt-3.6b", 64, 512, 138, 16, 2),
    narayanan("gpt-7.5b", 128, 512, 142, 16, 4),
    narayanan("gpt-18b", 256, 1024, 135, 8, 8),
    narayanan("gpt-39b", 512, 1536, 138, 4, 8, 2, local_ddp=True),
    narayanan("gpt-76b", 1024, 1792, 140, 2, 8, 4, 3, local_ddp=True),
    narayanan("gpt-145b", 1536, 2304, 148, 2, 8, 8, 2, local_ddp=True),
    narayanan("gpt-310b", 1920, 2160, 155, 1, 8, 16, 2, local_ddp=True),
    narayanan("gpt-530b", 2520, 2520, 163, 1, 8, 35, 3, local_ddp=True),
    narayanan("gpt-1t", 3072, 3072, 163, 1, 8, 64, local_ddp=True),
    row("Megatron-LM README, GPT-3 175B example (\"around 32 s\"; full recomputation assumed)", "gpt3-175b", 1024, 1536,
        1, A100_FULL, tp=8, pp=16, seconds=32.0),
    row("BigScience BLOOM training log (DeepSpeed-Megatron, Jean Zay; network assumed 4 x 100 Gb/s per node)",
        "bloom-176b", 384, 2048, 2, ["--precision", "bf16", "--recompute", "full", "--attention", "unfused", "--zero", "1"], tp=4, pp=12,
        seconds=105.2, cluster={"preset": "dgx-a100", "gpus_per_nic": 2, "nic_bandwidth": "100Gbps"}),
    # H100, fp8 (Transformer Engine), NeMo's recipes: sequence parallelism, the distributed optimizer.
    row(NEMO_2409, "gpt3-175b-nemo", 128, 256, 1, ["--precision", "fp8"] + H100_NEMO, gpu="h100", tp=4, pp=8, vp=6,
        tokens_per_gpu=716, label="gpt3-175b"),
    row(NEMO_2409, "gpt3-175b-nemo", 512, 2048, 2, ["--precision", "fp8"] + H100_NEMO, gpu="h100", tp=4, pp=8, vp=6,
        tokens_per_gpu=825, label="gpt3-175b"),
    row(NEMO_2409, "llama2-70b", 64, 128, 1, ["--precision", "fp8"] + H100_NEMO, gpu="h100", tp=4, pp=4, vp=20,
        tokens_per_gpu=1728),
    row(NEMO_2409, "llama3-8b", 8, 128, 1, ["--precision", "fp8"] + H100_NEMO, gpu="h100", cp=2, tokens_per_gpu=12270),
    row(NEMO_2409, "llama3-70b", 64, 128, 1, ["--precision", "fp8"] + H100_NEMO, gpu="h100", tp=4, pp=4, cp=2, vp=5,
        tokens_per_gpu=1524),
    row("Megatron-Bridge 26.02 performance summary, fp8", "llama3-70b", 64, 256, 1, ["--precision", "fp8"] + H100_NEMO,
        gpu="h100", tp=4, pp=8, vp=5, tokens_per_gpu=1621),
    row("Megatron-Bridge 25.11 performance summary, fp8", "llama3.1-405b", 1024, 512, 1,
        ["--precision", "fp8"] + H100_NEMO, gpu="h100", tp=8, pp=8, cp=2, vp=8, tokens_per_gpu=292),
    # H100, bf16: NVIDIA's DGX Cloud benchmarking recipes (NeMo 24.09), the smallest scale of each.
    row(DGXC, "llama3-8b", 8, 128, 1, ["--precision", "bf16"] + H100_NEMO, gpu="h100", cp=2,
        tokens_per_gpu=81222 / 8, label="llama3.1-8b"),
    row(DGXC, "llama3-70b", 64, 128, 1, ["--precision", "bf16"] + H100_NEMO, gpu="h100", tp=4, pp=4, cp=2, vp=5,
        tokens_per_gpu=71235 / 64, label="llama3.1-70b"),
    row(DGXC, "llama3.1-405b", 576, 252, 1, ["--precision", "bf16"] + H100_NEMO, gpu="h100", tp=8, pp=9, cp=2, vp=7,
        tokens_per_gpu=120022 / 576),
    row(DGXC, "gpt3-175b-nemo", 128, 256, 1, ["--precision", "bf16"] + H100_NEMO, gpu="h100", tp=4, pp=8, vp=12,
        tokens_per_gpu=63099 / 128, label="gpt3-175b"),
    row(DGXC, "nemotron4-340b", 128, 32, 1, ["--precision", "bf16"] + H100_NEMO, gpu="h100", tp=8, pp=8, vp=12,
        tokens_per_gpu=28432 / 128),
]


def predict(placesim, r, work):
    model_file = os.path.join(work, r["model"] + ".yaml")
    with open(model_file, "w") as f:  # JSON is YAML: placesim reads both files as YAML
        json.dump(dict(name=r["model"], **MODELS[r["model"]]), f)
    cluster = dict(r["cluster"] or {"preset": "dgx-a100" if r["gpu"] == "a100" else "dgx-h100"})
    cluster["servers"] = r["gpus"] // 8
    cluster_file = os.path.join(work, f"cluster-{r['label']}-{r['gpus']}.yaml")
    with open(cluster_file, "w") as f:
        json.dump({"cluster": cluster}, f)
    dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
    cmd = [placesim, "plan", "--model-file", model_file, "--gpu", r["gpu"], "--cluster", cluster_file,
           "--tp", str(r["tp"]), "--pp", str(r["pp"]), "--dp", str(dp), "--cp", str(r["cp"]),
           "--virtual-stages", str(r["vp"]), "--micro-batch-size", str(r["mbs"]), "--global-batch", str(r["gbs"]),
           "--engine", "flow", "--collectives", "condensed", "--stage-split", "even", "--json"] + r["flags"]
    if r["tp"] == 1 and "--sequence-parallel" in cmd:
        cmd.remove("--sequence-parallel")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode == 1 and "infeasible" in out.stderr:  # does not fit in GPU memory: said, not simulated
        return out.stderr.strip().splitlines()[-1], cmd
    if out.returncode != 0:
        raise SystemExit(f"{r['label']}: placesim plan failed ({out.returncode}):\n{' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout)["iteration_s"]["flow"], cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placesim", default="build/placesim")
    ap.add_argument("--only", default="", help="run the rows whose model or source contains this")
    ap.add_argument("-o", "--output", default="held-out.csv")
    ap.add_argument("--commands", action="store_true", help="print each row's placesim command")
    args = ap.parse_args()
    rows = [r for r in ROWS if args.only in r["label"] or args.only in r["source"]]
    results = []
    with tempfile.TemporaryDirectory() as work, open(args.output, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["source", "model", "gpu", "gpus", "measured_s", "predicted_s", "error"])
        print(f"{'model':<16} {'gpu':<5} {'GPUs':>5} {'measured':>9} {'placesim':>9} {'error':>7}  (wall)")
        for r in rows:
            t0 = time.time()
            predicted, cmd = predict(args.placesim, r, work)
            head = f"{r['label']:<16} {r['gpu']:<5} {r['gpus']:>5} {r['measured']:>8.2f}s"
            if isinstance(predicted, str):  # the plan does not fit: no time, and not in the means
                out.writerow([r["source"], r["label"], r["gpu"], r["gpus"], f"{r['measured']:.4f}", "", predicted])
                print(f"{head} {'-':>9} {'-':>7}  {predicted}", flush=True)
            else:
                error = predicted / r["measured"] - 1
                results.append((r, error))
                out.writerow([r["source"], r["label"], r["gpu"], r["gpus"], f"{r['measured']:.4f}", f"{predicted:.4f}",
                              f"{error:.4f}"])
                print(f"{head} {predicted:>8.2f}s {100 * error:>+6.1f}%  ({time.time() - t0:.0f} s)", flush=True)
            f.flush()
            if args.commands:
                print("   ", " ".join(cmd))
    groups = {}
    for r, e in results:
        key = r["gpu"] + (" fp8" if "fp8" in r["flags"] else " bf16" if r["gpu"] == "h100" else "")
        groups.setdefault(key, []).append(abs(e))
    for key, errors in sorted(groups.items()):
        print(f"mean absolute error, {key}: {100 * sum(errors) / len(errors):.1f}% over {len(errors)} rows")
    if results:
        print(f"overall: {100 * sum(abs(e) for _, e in results) / len(results):.1f}% over {len(results)} rows")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    sys.exit(main())

"""Whole models through tuned, end to end, against torch eager and torch.compile.

On the GPU machine, with a daemon running (bench/models.sh starts one):

    python3 bench/models.py [--models gpt2,encoder,decoder,vit,resnet,llama]
        [--cases decode,prefill,train] [--modes ieee_fp32,tf32,bf16] [--tune] [--reps 30]
        [--compile default,max-autotune[,tuned]] [--max-autotune-cases decode,prefill]
        [--deadline SECONDS] [--no-graphs]

Models: a GPT-2-medium-like decoder written from torch.nn primitives
(GPT-2 medium's public config: d_model 1024, 16 heads, feed-forward 4096,
GELU tanh, pre-LayerNorm, an LM head of 50257; 12 layers; random weights);
and models nobody here wrote: torch's nn.TransformerEncoder and
nn.TransformerDecoder stacks (the multi-head attention fast path off, so
that the projections go through F.linear) of a small public LLM's width
(TinyLlama-1.1B: d_model 2048, 32 heads, feed-forward 5632; 4 layers), and
where installed torchvision's ViT-B/16 and ResNet-50 and Hugging Face
transformers' Llama built from its config with random weights. Each line
says which were there.

Cases: decode (16 sequences of one token: M = 16), prefill (1 x 1024
tokens) and a training step (forward and backward of 4 x 256 tokens), each
in modes ieee_fp32 (float32, TF32 off), tf32 (float32, TF32 on) and bf16.

Variants, timed interleaved round by round in this process on the same
inputs (CUDA events, median of --reps rounds after warm-up): torch eager;
tuned (tuned.optimize(model) run inside tuned.enable(), entered and left
each call); torch.compile (dynamic=False, compiled afresh each case) of
the eager model in mode "default" and in "max-autotune-no-cudagraphs"
(Inductor autotunes its GEMMs: about a minute a model and case, so only
the --max-autotune-cases), and of the tuned model (--compile picks them);
and for inference cases each of them again with its step captured in a
CUDA graph (torch.cuda.graph; tuned's captured inside enable()), the graph
lines' variants: one compile gives both an eager and a graph line, and
max-autotune's own CUDA graphs are left out so that every variant of a
graph line replays the same way. Before the timed rounds the warm-up's
misses are filled (tuned.serving.wait_idle): each GEMM is served as the
table says. Tuned's output is checked against eager's (relative Frobenius
error). gemm_share is the share of eager's time in GEMMs (tuned.record's
back-to-back times), problems the distinct GEMM problems. --tune first
records each model's workload, sweeps the problems no earlier case of the
run swept (`tunectl workload sweep FILE --wait`) and says so, after the
case's timed rounds, in
    SUMMARY workload model=<m> problems=<n> swept=<n> first_run_raised=0 tune_wall_s=<s> gpus=<n>
      predicted_saving=<x> measured_saving=<x> exec=<graph|eager>
(predicted_saving: what `tunectl workload report` says the served kernels
save, over eager's step time; measured_saving: 1 - tuned's step time over
eager's; both with CUDA graphs where the case runs them)
(--record-only: only the workload files, <model>_<case>_<mode>.workload.json
in --out, neither swept nor timed: bench/fleet.sh's workloads.)
Then one line per model, case, mode and execution (eager; graph: both
replayed from CUDA graphs, inference cases only):
    SUMMARY model name=<m> case=<c> dtype=<mode> exec=<eager|graph> vs_eager=<x>
      vs_compile=<x> vs_max_autotune=<x> compiled_tuned_vs_compile=<x> tuned_ms=<x>
      gemm_share=<x> problems=<n> served=<hits>/<calls> error=<x> gpu=<name>
(vs_eager: torch eager's time over tuned's, for exec=graph eager + graphs'
over tuned + graphs'; vs_compile, vs_max_autotune: those variants' over
tuned's of the line's execution (graphed for exec=graph), 0 where not run; compiled_tuned_vs_compile:
torch.compile's time over torch.compile of the tuned model's; served: of
the tuned variant's GEMM calls in one eager step, those its table served
with a tuned kernel.) And per dtype, the CPU time of one served linear
call from Python, tuned.model.Linear's forward (x of 16 x 1024, a
1024 x 1024 weight, through tuned::linear) against nn.Linear's (F.linear),
with what served it (kernel: a tuned kernel; torch: torch's own cuBLAS):
    SUMMARY host_overhead dtype=<f32|bf16> math=<mode> tuned_us=<x> torch_us=<x>
      nobias_tuned_us=<x> nobias_torch_us=<x> served=<kernel|torch>
(measured after the models, so that what their sweeps tuned is served:
GPT-2's decode has this shape), and last the bars over this run's lines
(bench/models_bars.py, which also takes the logs of a run split across
device calls):
    SUMMARY models_bars models=<n> cases=<n> modes=<n> lines=<n> eager_min=<x> ...
--deadline stops starting models and cases after that many seconds, so that
a run within the device's limit still ends with its SUMMARY lines.
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import models_bars
import tuned
import tuned.serving

D_MODEL, HEADS, FF, LAYERS = 2048, 32, 5632, 4
# GPT-2 medium (public config): width, heads, feed-forward, layers, vocabulary.
GPT2 = dict(d=1024, heads=16, ff=4096, layers=12, vocab=50257)


class GPT2Block(torch.nn.Module):
    """A pre-LayerNorm decoder block from torch.nn primitives: causal
    self-attention (scaled_dot_product_attention), GELU (tanh) MLP."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class GPT2Model(torch.nn.Module):
    """Token embedding, GPT2Block layers, a final LayerNorm and the LM head."""

    def __init__(self, d, heads, ff, layers, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(GPT2Block(d, heads, ff) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def build(name, device):
    """The model `name` (or None where its library is missing) and a
    function making its input for a case: (tokens per sequence, sequences)."""
    if name == "gpt2":
        return GPT2Model(**GPT2), lambda t, b, dtype: (
            torch.randint(0, GPT2["vocab"], (b, t), device=device),)
    if name in ("encoder", "decoder"):
        if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
            torch.backends.mha.set_fastpath_enabled(False)
        if name == "encoder":
            layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=True)
            model = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
            return model, lambda t, b, dtype: (torch.randn(b, t, D_MODEL, device=device, dtype=dtype),)

        class Decoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                layer = torch.nn.TransformerDecoderLayer(D_MODEL, HEADS, FF, batch_first=True)
                self.stack = torch.nn.TransformerDecoder(layer, LAYERS)

            def forward(self, x, memory):
                return self.stack(x, memory)
        return Decoder(), lambda t, b, dtype: (torch.randn(b, t, D_MODEL, device=device, dtype=dtype),
                                               torch.randn(b, 64, D_MODEL, device=device, dtype=dtype))
    if name in ("vit", "resnet"):
        try:
            import torchvision
        except ImportError:
            return None, None
        model = torchvision.models.vit_b_16() if name == "vit" else torchvision.models.resnet50()
        return model, lambda t, b, dtype: (torch.randn(max(b, 1), 3, 224, 224, device=device, dtype=dtype),)
    if name == "llama":
        try:
            from transformers import LlamaConfig, LlamaModel
        except ImportError:
            return None, None
        config = LlamaConfig(hidden_size=D_MODEL, intermediate_size=FF, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, vocab_size=32000)
        return LlamaModel(config), lambda t, b, dtype: (
            torch.randint(0, 32000, (b, t), device=device),)
    raise ValueError(f"unknown model {name}")


def output(y):
    """The tensor of a model's output (a tensor, or a transformers output)."""
    return getattr(y, "last_hidden_state", y)


class Timer:
    """Milliseconds of a callable: CUDA events on a GPU, the clock elsewhere."""

    def __init__(self, device):
        self.cuda = device.startswith("cuda")

    def __call__(self, fn):
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)


def step(model, inputs, train):
    """One call: inference under no_grad, or forward and backward."""
    if train:
        output(model(*inputs)).float().square().mean().backward()
        return None
    with torch.no_grad():
        return output(model(*inputs))


def graphed(fn):
    """fn captured in a CUDA graph (torch.cuda.graph) after warm-up calls on
    a side stream; returns a function replaying it, which returns the
    captured output."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return lambda: (graph.replay(), out)[1]


def sync():
    """Waits for the GPU's work, where there is a GPU (a CPU run's smoke test has none)."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def served_share(fn):
    """(GEMM calls a tuned step's table served with a kernel, all it looked up)."""
    tc = tuned.serving.extension()
    if tc is None:
        return 0, 0
    before = tc.stats()
    fn()
    sync()
    after = tc.stats()
    hits = after["hits"] - before["hits"]
    return hits, hits + after["torch"] - before["torch"]


def host_overhead(args, mode, reps=2000, batch=100):
    """The SUMMARY host_overhead line of a mode: the median CPU microseconds
    of a call of tuned.model.Linear and of nn.Linear (16 x 1024 by 1024 x
    1024, with a bias, and without: nobias_*), over batches of `batch` calls
    with a synchronize between them (outside the timing), interleaved."""
    dtype = torch.bfloat16 if mode == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    x = torch.randn(16, 1024, device=args.device, dtype=dtype)
    layers = {}
    for bias in (True, False):
        plain = torch.nn.Linear(1024, 1024, bias=bias, device=args.device, dtype=dtype)
        layers[bias] = (tuned.optimize(copy.deepcopy(plain)), plain)
    times = {}
    with torch.no_grad():
        for served, _ in layers.values():
            served(x)
        tuned.serving.wait_idle()
        hits, _ = served_share(lambda: layers[True][0](x))
        for _ in range(reps // batch):
            for bias, pair in layers.items():
                for way, layer in zip(("tuned", "torch"), pair):
                    sync()
                    t0 = time.perf_counter()
                    for _ in range(batch):
                        layer(x)
                    times.setdefault((way, bias), []).append((time.perf_counter() - t0) / batch * 1e6)
    sync()
    med = {k: statistics.median(v) for k, v in times.items()}
    line = (f"SUMMARY host_overhead dtype={'bf16' if mode == 'bf16' else 'f32'} math={mode} "
            f"tuned_us={med['tuned', True]:.2f} torch_us={med['torch', True]:.2f} "
            f"nobias_tuned_us={med['tuned', False]:.2f} nobias_torch_us={med['torch', False]:.2f} "
            f"served={'kernel' if hits else 'torch'}")
    print(line, flush=True)
    return line


# torch.compile's variants: label -> (torch.compile's mode, compiles the tuned
# model). max-autotune without its own CUDA graphs: the exec=graph lines
# capture every variant alike (graphed), so one compile serves both lines.
COMPILES = {"default": ("default", False), "max-autotune": ("max-autotune-no-cudagraphs", False),
            "tuned": ("default", True)}


def run(args):
    device = args.device
    timer = Timer(device)
    gpu = (torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu").replace(" ", "_")
    cases = {"decode": (1, 16), "prefill": (1024, 1), "train": (256, 4)}
    kinds = [k for k in args.compile.split(",") if k] if hasattr(torch, "compile") else []
    unknown = set(kinds) - set(COMPILES)
    if unknown:
        raise SystemExit(f"--compile: unknown {sorted(unknown)} (known: {', '.join(COMPILES)})")
    graphs = device.startswith("cuda") and not args.no_graphs
    began = time.monotonic()
    lines = []
    for name in args.models.split(","):
        model, make_input = build(name, device)
        if model is None:
            print(f"# {name}: not installed here", flush=True)
            continue
        # Each case in every mode before the next case: a run that reaches
        # its --deadline has skipped whole cases, never a mode.
        for case in args.cases.split(","):
            for mode in args.modes.split(","):
                if args.deadline and time.monotonic() - began > args.deadline:
                    print(f"# {name} {case} {mode}: skipped, past --deadline {args.deadline} s",
                          flush=True)
                    continue
                dtype = torch.bfloat16 if mode == "bf16" else torch.float32
                torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
                eager = copy.deepcopy(model).to(device=device, dtype=dtype)
                served = tuned.optimize(copy.deepcopy(eager)) if not args.record_only else None
                train = case == "train"
                for m in (eager, served):
                    if m is not None:
                        m.train(train)
                tokens, seqs = cases[case]
                torch.manual_seed(0)
                inputs = make_input(tokens, seqs, dtype)
                problems, share, tuned_workload = workload(args, name, case, mode, eager, inputs,
                                                           train, timer)
                if args.record_only:
                    print(f"# recorded {name}_{case}_{mode}: {problems} problems", flush=True)
                    continue
                variants = {"eager": lambda: step(eager, inputs, train)}

                def tuned_step():
                    with tuned.enable():
                        return step(served, inputs, train)
                variants["tuned"] = tuned_step
                for _ in range(args.warmup):  # the misses queued, then filled
                    tuned_step()
                tuned.serving.wait_idle()
                hits, calls = served_share(tuned_step)
                for kind in kinds:
                    if kind == "max-autotune" and case not in args.max_autotune_cases.split(","):
                        continue
                    compile_mode, of_tuned = COMPILES[kind]
                    c = torch.compile(served if of_tuned else eager, mode=compile_mode,
                                      dynamic=False)
                    variants[f"compile_{kind}"] = lambda c=c: step(c, inputs, train)
                error = 0.0
                if not train:
                    want, got = variants["eager"]().float(), variants["tuned"]().float()
                    error = ((got - want).norm() / want.norm()).item()
                t0 = time.monotonic()
                for fn in variants.values():  # warm-up (and compiles)
                    for _ in range(args.warmup):
                        fn()
                compile_s = time.monotonic() - t0
                if graphs and not train:  # each variant's step captured in a CUDA graph
                    for k in list(variants):
                        variants[k + "_graph"] = graphed(variants[k])
                times = {k: [] for k in variants}
                for _ in range(args.reps):  # interleaved, round by round
                    for k, fn in variants.items():
                        times[k].append(timer(fn))
                med = {k: statistics.median(v) for k, v in times.items()}
                print(f"# {name} {case} {mode}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items())
                      + f"; warm-up and compiles {compile_s:.0f} s", flush=True)
                for exe, tail in [("eager", "")] + ([("graph", "_graph")] if "tuned_graph" in med else []):
                    ours = med["tuned" + tail]
                    ratio = lambda k: med[k + tail] / ours if k + tail in med else 0.0  # noqa: E731
                    compiled_tuned = (med["compile_default" + tail] / med["compile_tuned" + tail]
                                      if "compile_tuned" + tail in med and "compile_default" in med
                                      else 0.0)
                    line = (f"SUMMARY model name={name} case={case} dtype={mode} exec={exe} "
                            f"vs_eager={ratio('eager'):.3f} vs_compile={ratio('compile_default'):.3f} "
                            f"vs_max_autotune={ratio('compile_max-autotune'):.3f} "
                            f"compiled_tuned_vs_compile={compiled_tuned:.3f} tuned_ms={ours:.3f} "
                            f"gemm_share={share:.3f} problems={problems} served={hits}/{calls} "
                            f"error={error:.1e} gpu={gpu}")
                    print(line, flush=True)
                    lines.append(line)
                if tuned_workload is not None:
                    lines.append(workload_line(tuned_workload, med))
                del variants
                if kinds:  # the next case compiles afresh, never for two shapes
                    torch._dynamo.reset()
    if not args.record_only:
        for mode in args.modes.split(","):  # after the sweeps: the table serves what they tuned
            lines.append(host_overhead(args, mode))
        print(models_bars.bars(lines), flush=True)


def workload(args, name, case, mode, model, inputs, train, timer):
    """Records one eager step's GEMMs: (distinct problems, their share of the
    step's time, the SUMMARY workload line's fields or None). With --tune,
    sweeps them first (`tunectl workload sweep FILE --wait`) and reads the
    saving that `tunectl workload report FILE --json` predicts for the step
    (saves_ms: the recorded GEMM time less its time with the served kernels)."""
    path = os.path.join(args.out, f"{name}_{case}_{mode}.workload.json")
    with tuned.record(path) as r:
        total = timer(lambda: step(model, inputs, train))
    problems = r.workload.problems()
    share = sum(p["gpu_ms"] for p in problems) / total if total > 0 else 0.0
    if not (args.tune and problems):
        return len(problems), share, None
    # Only the problems no earlier case of this run swept (a training step's
    # forward is prefill's): a file of those, swept as the user's would be.
    fresh = tuned.Workload()
    for p in problems:
        key = (p["dtype"], p["layout"], p["math"], tuple(p["shape"]), p.get("epilogue", "none"))
        if key not in args.swept:
            args.swept.add(key)
            fresh.add(*key[:4], calls=p["calls"], gpu_ms=p["gpu_ms"], epilogue=key[4])
    swept = len(problems) - len(fresh.problems())
    start = time.monotonic()
    if fresh.problems():
        fresh_path = path.replace(".workload.json", ".to_sweep.workload.json")
        fresh.write(fresh_path)
        done = subprocess.run([args.tunectl, "workload", "sweep", fresh_path, "--wait"],
                              capture_output=True, text=True)
        swept += sum(1 for line in done.stdout.splitlines()
                     if line.strip() and line.split()[-1].isdigit())
    wall = time.monotonic() - start
    report = subprocess.run([args.tunectl, "workload", "report", path, "--json"], capture_output=True,
                            text=True)
    try:
        saves_ms = json.loads(report.stdout)["saves_ms"]
    except (ValueError, KeyError) as e:
        print(f"# {name}: no workload report ({e!r}): {report.stderr.strip()}", file=sys.stderr)
        saves_ms = 0.0
    raised = 0
    try:
        served = tuned.optimize(copy.deepcopy(model))
        with tuned.enable():
            step(served, inputs, train)
    except Exception as e:  # noqa: BLE001 (the bar: a first run never raises)
        raised = 1
        print(f"# {name}: the first run raised {e!r}", file=sys.stderr)
    fields = dict(model=f"{name}_{case}_{mode}", problems=len(problems), swept=swept,
                  first_run_raised=raised, tune_wall_s=f"{wall:.0f}", gpus=args.gpus)
    return len(problems), share, (fields, saves_ms)


def workload_line(tuned_workload, med):
    """The SUMMARY workload line: the report's predicted saving of a step
    (saves_ms over eager's step time) beside the one measured (1 - tuned's
    time over eager's), both with CUDA graphs where they ran (the host out
    of the way, as the report assumes), else eager."""
    fields, saves_ms = tuned_workload
    base, ours = ("eager_graph", "tuned_graph") if "tuned_graph" in med else ("eager", "tuned")
    predicted = saves_ms / med[base] if med[base] > 0 else 0.0
    measured = 1.0 - med[ours] / med[base] if med[base] > 0 else 0.0
    line = ("SUMMARY workload " + " ".join(f"{k}={v}" for k, v in fields.items()) +
            f" predicted_saving={predicted:.3f} measured_saving={measured:.3f}"
            f" exec={'graph' if base == 'eager_graph' else 'eager'}")
    print(line, flush=True)
    return line


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="gpt2,encoder,decoder,vit,resnet,llama")
    p.add_argument("--cases", default="decode,prefill,train")
    p.add_argument("--modes", default="ieee_fp32,tf32,bf16")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="cuda")
    p.add_argument("--tune", action="store_true", help="record, sweep and then time each workload")
    p.add_argument("--record-only", action="store_true",
                   help="only record each workload into --out (bench/fleet.sh's workloads)")
    p.add_argument("--tunectl", default="tunectl")
    p.add_argument("--gpus", type=int, default=1, help="GPUs of the fleet that sweeps (for the line)")
    p.add_argument("--compile", default="default,max-autotune",
                   help="the torch.compile variants: default (torch.compile of eager), max-autotune "
                        "(Inductor's GEMM autotuning: about a minute a model and case), tuned "
                        "(torch.compile of the tuned model: compiled_tuned_vs_compile); '' for none")
    p.add_argument("--no-compile", dest="compile", action="store_const", const="",
                   help="no torch.compile variant (--compile '')")
    p.add_argument("--max-autotune-cases", default="decode,prefill",
                   help="the cases that run the max-autotune variant (a training step's is the slowest "
                        "compile)")
    p.add_argument("--deadline", type=float, default=0,
                   help="seconds after which the remaining models and cases are skipped (0: none), "
                        "so that a run ends with its SUMMARY lines inside the device's limit")
    p.add_argument("--no-graphs", action="store_true", help="skip the CUDA graph executions")
    p.add_argument("--out", default=tempfile.mkdtemp(prefix="tuned_models_"))
    args = p.parse_args()
    args.swept = set()  # the problems this run has swept
    os.makedirs(args.out, exist_ok=True)
    run(args)


if __name__ == "__main__":
    main()

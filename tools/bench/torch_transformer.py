#!/usr/bin/python3
"""PyTorch peer of `kiln bench --model transformer` and of kiln's greedy translation.

  torch_transformer.py bench --config tiny --threads 1 [--repeats 10]
      trains kiln's Transformer (torch_model.py) on random tokens, as kiln's bench
      does, and prints one JSON line: median and min ms per step, tokens/s,
      GFLOP/s (matmul FLOPs counted analytically), peak RSS.
  torch_transformer.py translate --checkpoint DIR --ids FILE [--decoding kv|rerun] [--beam N]
      greedy-decodes (or, with --beam N > 1, beam-searches as models/decode/beam.cpp
      does) each line of source subword ids (`kiln eval --dump-ids`) with the params
      of a kiln checkpoint (de-en or text task) and prints one JSON line with the
      wall time and sentences per second.
  torch_transformer.py train --config tiny --vocab N --batches E0.jsonl ... --dev-batches DEV.jsonl --minutes M
      trains on `kiln batches` files with kiln's schedule, printing the dev loss at
      each evaluation (time_to_quality.py drives it).

The thread pools are sized from the environment when torch loads, so the script
re-executes itself once with OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set and
OPENBLAS_CORETYPE removed (a forced core type keeps OpenBLAS off its AVX-512
kernels), unless OpenBLAS would pick kernels narrower than the CPU's vectors by
itself (a CPU model it does not know): then its kernels of that width.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
BLAS_ALTERNATIVE = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
# All of the heap from brk, never trimmed: torch allocates its large activations
# afresh each step, and glibc's default (mmap above a threshold, trim the heap top)
# makes each step fault in those pages again, which costs 4x the step on this VM.
MALLOC_TUNING = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    bench = sub.add_parser("bench", help="time the training step")
    bench.add_argument("--config", choices=("tiny", "small", "base"), default="small")
    bench.add_argument("--batch", type=int, default=0, help="sentences per batch (default 32, base 16)")
    bench.add_argument("--src-len", type=int, default=32)
    bench.add_argument("--tgt-len", type=int, default=32)
    bench.add_argument("--vocab", type=int, default=8000)
    bench.add_argument("--repeats", "--steps", type=int, default=10, help="timed steps (at least 3)")
    bench.add_argument("--max-ms", type=float, default=3000, help="stop timing after this long (3 steps at least)")
    bench.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    bench.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                       help="bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16) (kiln's "
                       "--precision bf16)")
    bench.add_argument("--ranks", type=int, default=1,
                       help="data-parallel processes, each --threads threads and a batch of --batch: "
                       "DistributedDataParallel over gloo (its default 25 MiB buckets)")
    tr = sub.add_parser("translate", help="greedy decoding or beam search with a kiln checkpoint's params")
    tr.add_argument("--checkpoint", required=True, help="kiln checkpoint directory")
    tr.add_argument("--ids", required=True, help="source subword ids, one sentence per line "
                    "(a tab and the reference ids may follow: then exact match is reported)")
    tr.add_argument("--decoding", choices=("kv", "rerun"), default="kv",
                    help="kv: one position per step over cached keys and values; rerun: the whole prefix each step")
    tr.add_argument("--batch", type=int, default=32, help="sentences per batch, each on --beam decoder rows (kiln's "
                    "eval fits power-of-two batches of similar length into its --batch-tokens)")
    tr.add_argument("--beam", type=int, default=1, help="beam size (1: greedy); more: beam search as kiln's "
                    "(models/decode/beam.cpp), every sentence of a batch on --beam rows")
    tr.add_argument("--length-penalty", type=float, default=0.6,
                    help="beam search's alpha in ((5 + len) / 6)^alpha (0: the plain sum of log-probs)")
    tr.add_argument("--max-len", type=int, help="cap on generated tokens (default: the checkpoint's task's, as "
                    "kiln decodes: de-en 64, text the prepared corpus's longest sentence)")
    tr.add_argument("--bos", type=int, default=2)
    tr.add_argument("--eos", type=int, default=3)
    tr.add_argument("--output", help="write each hypothesis's ids (eos dropped) to this file")
    tt = sub.add_parser("train", help="train on kiln's batch files (kiln batches), reporting the dev loss over time")
    tt.add_argument("--config", choices=("tiny", "small", "base"), default="small")
    tt.add_argument("--vocab", type=int, required=True, help="the task's vocabulary (de-en: its spm.model's size)")
    tt.add_argument("--d-model", type=int, help="override the preset's d_model (as kiln train's flag)")
    tt.add_argument("--heads", type=int, help="override the preset's attention heads")
    tt.add_argument("--d-ff", type=int, help="override the preset's feed-forward width")
    tt.add_argument("--layers", type=int, help="override the preset's encoder and decoder layers")
    tt.add_argument("--batches", required=True, nargs="+",
                    help="`kiln batches --split train` files, one per epoch, trained on in order (then again from "
                    "the first, which kiln would not: the final line counts the passes)")
    tt.add_argument("--dev-batches", required=True, help="`kiln batches --split dev` file: the dev loss's data")
    tt.add_argument("--minutes", type=float, required=True, help="wall-clock training budget")
    tt.add_argument("--eval-minutes", type=float, default=5, help="minutes between dev losses")
    tt.add_argument("--warmup", type=int, default=400, help="the schedule's warm-up steps (kiln de-en: 400)")
    tt.add_argument("--lr-factor", type=float, default=1.0, help="the schedule's factor (kiln de-en: 1)")
    tt.add_argument("--dropout", type=float, help="dropout rate (default: the preset's)")
    tt.add_argument("--label-smoothing", type=float, help="label smoothing (default: the preset's)")
    tt.add_argument("--save", help="write a kiln checkpoint to SAVE/step-N (8 digits, as kiln's snapshots) at each "
                    "dev evaluation")
    tt.add_argument("--template", help="with --save: the kiln checkpoint of the same config whose metadata to use")
    for sp in (bench, tr, tt):
        sp.add_argument("--threads", type=int, default=os.cpu_count(), help="intra-op threads (default: all cores)")
        sp.add_argument("--glibc-malloc-defaults", action="store_true",
                        help="leave glibc malloc's mmap and trim thresholds alone")
        sp.add_argument("--omp-wait-policy", choices=("passive", "active", "unset"), default="passive",
                        help="OMP_WAIT_POLICY: passive keeps idle OpenMP workers from spinning on the cores "
                        "OpenBLAS's own threads need")
    args = p.parse_args()
    if args.threads < 1:
        p.error("--threads must be positive")
    if args.mode == "translate" and (args.beam < 1 or args.batch < 1 or args.length_penalty < 0):
        p.error("--beam and --batch must be positive, --length-penalty not negative")
    if args.mode == "bench" and (args.repeats < 3 or args.batch < 0 or args.vocab < 2 or args.ranks < 1
                                 or not (0 < args.src_len <= 256 and 0 < args.tgt_len <= 256)):
        p.error("--repeats must be at least 3, --vocab at least 2, --ranks at least 1, lengths in 1..256 (max_len)")
    return args


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return next((line.split() for line in f if line.startswith("flags")), [])


def has_avx512():
    return all(f in cpu_flags() for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


# OpenBLAS's cores by the vectors their SGEMM kernels use (Cooperlake and
# SapphireRapids run SkylakeX's; Zen runs Haswell's).
OPENBLAS_AVX512_CORES = {"skylakex", "cooperlake", "sapphirerapids"}
OPENBLAS_AVX2_CORES = OPENBLAS_AVX512_CORES | {"haswell", "zen"}


def openblas_core():
    """The core whose kernels the BLAS torch calls runs (openblas_get_corename), or None
    when that BLAS is not OpenBLAS. It picks them when it loads, reading OPENBLAS_CORETYPE."""
    import ctypes
    try:
        corename = ctypes.CDLL("libblas.so.3").openblas_get_corename
    except (OSError, AttributeError):
        return None
    corename.restype = ctypes.c_char_p
    return corename().decode()


def openblas_own_core(env):
    """openblas_core() in a child process with `env`."""
    probe = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
                            "import torch_transformer as t; print(t.openblas_core() or '')"],
                           env=env, capture_output=True, text=True)
    return probe.stdout.strip() or None


def openblas_core_override(env):
    """OPENBLAS_CORETYPE for a CPU whose model OpenBLAS does not know: Debian's 0.3.21
    gives Emerald Rapids (family 6, model 0xCF) Prescott's SSE3 kernels, a fifth of its
    AVX-512 ones' speed. None where OpenBLAS picks kernels as wide as the CPU's vectors."""
    core = (openblas_own_core(env) or "").lower()
    if not core:
        return None
    flags = cpu_flags()
    if has_avx512() and core not in OPENBLAS_AVX512_CORES:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags and core not in OPENBLAS_AVX2_CORES:
        return "Haswell"
    return None


def wanted_environment(args):
    """The variables torch must see at import: thread counts, no forced OpenBLAS core,
    ATen's AVX-512 kernels where the CPU has them (unless chosen otherwise), glibc
    malloc kept from returning memory and the OpenMP wait policy (see README.md)."""
    env = dict(os.environ, **{name: str(args.threads) for name in THREAD_VARIABLES})
    env.pop("OPENBLAS_CORETYPE", None)
    core = openblas_core_override(env)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    if "ATEN_CPU_CAPABILITY" not in env and has_avx512():
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    for name, value in MALLOC_TUNING.items():
        if args.glibc_malloc_defaults:
            env.pop(name, None)
        else:
            env[name] = value
    if args.omp_wait_policy == "unset":
        env.pop("OMP_WAIT_POLICY", None)
    else:
        env["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
    return env


def ensure_environment(args):
    """Re-executes this script once unless the environment is already as wanted."""
    env = wanted_environment(args)
    if env != dict(os.environ):
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def import_torch():
    try:
        import torch
    except ImportError:
        print("PyTorch not found: apt-get install python3-torch libopenblas0-pthread "
              f"(this is {sys.executable}; Debian's torch is for /usr/bin/python3)", file=sys.stderr)
        sys.exit(2)
    return torch


def blas_in_use(torch):
    """The BLAS libraries mapped into this process (after a matmul has loaded them),
    and where Debian's libblas.so.3 alternative points."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    with open("/proc/self/maps") as maps:
        mapped = sorted({line.split()[-1] for line in maps if "blas" in line.split()[-1]})
    alternative = os.path.realpath(BLAS_ALTERNATIVE) if os.path.exists(BLAS_ALTERNATIVE) else None
    return {"blas_alternative": alternative, "blas_mapped": mapped, "openblas_core": openblas_core()}


def cpu_capability(torch):
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip()
    return None


def environment_report(torch):
    return {"cpu_capability": cpu_capability(torch),
            "malloc": "glibc defaults" if "MALLOC_MMAP_MAX_" not in os.environ else "glibc, no mmap, no trim",
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            **blas_in_use(torch)}


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def paper_schedule(d_model, warmup=4000, factor=1.0):
    """models/optimizer.h: lr(step) = factor d^-0.5 min(step^-0.5, step warmup^-1.5), step from 1;
    LambdaLR counts from 0."""
    def lr(index):
        step = index + 1
        return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
    return lr


def bench(args, torch, tm):
    if args.ranks > 1:
        return bench_ranks(args, torch)
    return bench_rank(args, torch, tm)


def bench_ranks(args, torch):
    """--ranks N: N processes under DistributedDataParallel (gloo), rank 0's result."""
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(ddp_worker, args=(args, port, results), nprocs=args.ranks, join=True)
    return results.get()


def ddp_worker(rank, args, port, results):
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_model as tm
    torch.set_num_threads(args.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    result = bench_rank(args, torch, tm, rank)
    dist.destroy_process_group()
    if rank == 0:
        results.put(result)


def bench_rank(args, torch, tm, rank=0):
    batch = args.batch or (16 if args.config == "base" else 32)
    c = tm.preset(args.config, args.vocab)
    torch.manual_seed(1)
    model = tm.Transformer(c).train()
    loss_of = model.loss
    if args.ranks > 1:  # DDP calls forward, whose hooks start the gradients' allreduces in backward
        model.forward = model.loss
        loss_of = torch.nn.parallel.DistributedDataParallel(model)
    # models/optimizer.h: betas (0.9, 0.98), eps 1e-9 added to sqrt(v_hat).
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, paper_schedule(c["d_model"]))
    g = torch.Generator().manual_seed(1 + rank)
    src, tgt_in, tgt_out = (torch.randint(1, args.vocab, (batch, n), generator=g)
                            for n in (args.src_len, args.tgt_len, args.tgt_len))

    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_of(src, tgt_in, tgt_out)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    ms = []
    while len(ms) < args.repeats and (len(ms) < 3 or sum(ms) < args.max_ms):
        start = time.perf_counter()
        step()
        ms.append((time.perf_counter() - start) * 1000)
    median = statistics.median(ms)
    flops = tm.train_step_flops(c, batch, args.src_len, args.tgt_len) * args.ranks
    tokens = batch * args.ranks * (args.src_len + args.tgt_len)
    return {
        "framework": "torch", "version": torch.__version__, "config": args.config, "threads": torch.get_num_threads(),
        "ranks": args.ranks, "precision": args.precision,
        "batch": batch, "src_len": args.src_len, "tgt_len": args.tgt_len, "vocab": args.vocab,
        "runs": len(ms), "median_ms": round(median, 3), "min_ms": round(min(ms), 3),
        "tokens_per_step": tokens, "tokens_per_s": round(tokens / median * 1000, 1),
        "flops_per_step": flops, "gflops": round(flops / median / 1e6, 2), "peak_rss_mib": round(peak_rss_mib(), 1),
        **environment_report(torch),
    }


def read_batches(torch, path):
    """kiln's batch file (models/tasks/batch_file.h): (src, tgt_in, tgt_out) long tensors per line."""
    out = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            try:
                b = json.loads(line)
                out.append(tuple(torch.tensor(b[k], dtype=torch.long) for k in ("src", "tgt_in", "tgt_out")))
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{number}: not a kiln batch: {e}") from e
    if not out:
        raise ValueError(f"{path}: no batches")
    return out


def dev_loss(torch, model, batches, pad_id):
    """The loss per target token over the dev batches (dropout off), as kiln's trainer reports it."""
    model.eval()
    total = tokens = 0.0
    with torch.no_grad():
        for src, tgt_in, tgt_out in batches:
            n = float((tgt_out != pad_id).sum())
            total += model.loss(src, tgt_in, tgt_out).item() * n
            tokens += n
    model.train()
    return total / tokens


def train_config(args, tm):
    """The preset with kiln train's overrides: sizes, dropout, label smoothing."""
    c = tm.preset(args.config, args.vocab)
    overrides = {"d_model": args.d_model, "heads": args.heads, "d_ff": args.d_ff, "enc_layers": args.layers,
                 "dec_layers": args.layers, "dropout": args.dropout, "label_smoothing": args.label_smoothing}
    c.update((k, v) for k, v in overrides.items() if v is not None)
    return c


def train(args, torch, tm):
    """Trains on kiln's batches for --minutes of training time (dev evaluations and
    saves not counted, as kiln's trainer counts them); prints a JSON line per dev
    evaluation and, with --save, writes a kiln checkpoint there at each."""
    c = train_config(args, tm)
    torch.manual_seed(0)
    model = tm.Transformer(c).train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, paper_schedule(c["d_model"], args.warmup, args.lr_factor))
    dev = read_batches(torch, args.dev_batches)
    epochs = [read_batches(torch, path) for path in args.batches]  # read before the clock starts
    start, paused = time.perf_counter(), 0.0
    minutes = lambda: (time.perf_counter() - start - paused) / 60
    step, tokens, evals = 0, 0, 0

    def evaluate(window):
        nonlocal paused, evals
        began = time.perf_counter()
        evals += 1
        point = {"minutes": round(minutes(), 2), "step": step, "train_loss": round(sum(window) / len(window), 4),
                 "dev_loss": round(dev_loss(torch, model, dev, c["pad_id"]), 4)}
        if args.save:
            point["checkpoint"] = f"{args.save}/step-{step:08d}"
            tm.save_kiln_checkpoint(model, args.template, point["checkpoint"])
        print(json.dumps(point), flush=True)
        paused += time.perf_counter() - began
        return point

    last, window, passes = None, [], 0  # window: the train losses since the last evaluation
    while minutes() < args.minutes:
        passes += 1
        for batches in epochs:
            for src, tgt_in, tgt_out in batches:
                opt.zero_grad(set_to_none=True)
                loss = model.loss(src, tgt_in, tgt_out)
                loss.backward()
                opt.step()
                sched.step()
                step += 1
                tokens += int((tgt_out != c["pad_id"]).sum())
                window.append(loss.item())
                if minutes() >= min((evals + 1) * args.eval_minutes, args.minutes):
                    last, window = evaluate(window), []
                if minutes() >= args.minutes:
                    break
            if minutes() >= args.minutes:
                break
    return {"framework": "torch", "config": args.config, "steps": step, "passes_over_batch_files": passes,
            "minutes": last["minutes"],
            "target_tokens_per_s": round(tokens / (last["minutes"] * 60), 1), "dev_loss": last["dev_loss"],
            **environment_report(torch)}


def read_ids(path):
    sources, references = [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            try:
                src = [int(x) for x in fields[0].split()]
                references.append([int(x) for x in fields[1].split()] if len(fields) > 1 else None)
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
            if not src:
                raise ValueError(f"{path}:{number}: no source ids")
            sources.append(src)
    return sources, references


def greedy_batch(torch, tm, model, sources, limits, args):
    """Greedy decoding of one batch; returns each row's tokens up to its eos or limit."""
    pad = model.c["pad_id"]
    src = torch.full((len(sources), max(map(len, sources))), pad, dtype=torch.long)
    for row, s in enumerate(sources):
        src[row, :len(s)] = torch.tensor(s)
    src_mask = tm.padding_mask(src, pad)
    memory = model.encode(src, src_mask)
    prefix = torch.full((len(sources), 1), args.bos, dtype=torch.long)
    caches = model.start_decoding(memory) if args.decoding == "kv" else None
    out = [[] for _ in sources]
    done = [limit <= 0 for limit in limits]
    for t in range(max(limits)):
        if all(done):
            break
        if caches is not None:
            hidden = model.decode_step(prefix[:, -1:], t, caches, src_mask)[:, -1]
        else:
            hidden = model.decode(prefix, memory, src_mask)[:, -1]
        best = torch.log_softmax(model.logits(hidden), dim=-1).argmax(dim=-1)  # ties: the lowest id
        for row, token in enumerate(best.tolist()):
            if not done[row]:
                out[row].append(token)
                done[row] = token == args.eos or len(out[row]) >= limits[row]
        prefix = torch.cat([prefix, best.unsqueeze(1)], dim=1)
    return out


def length_penalty(length, alpha):
    """GNMT's lp(len) = ((5 + len) / 6)^alpha (models/decode/beam.cpp)."""
    return ((5.0 + length) / 6.0) ** alpha


class SentenceBeam:
    """One sentence's beam search over its k decoder rows, as models/decode/beam.cpp's
    SentenceBeam: live[r] = (tokens, log_prob) is the hypothesis row r extends; rows
    past len(live) are fillers (fed bos, results unread). log_probs are Python floats
    (doubles), summed from the f32 log-probs as kiln sums them."""

    def __init__(self, max_len, k, alpha, eos):
        self.max_len, self.k, self.alpha, self.eos = max_len, k, alpha, eos
        self.live = [((), 0.0)] if max_len > 0 else []
        self.finished = []  # (score, tokens, log_prob), best score first

    def done(self):
        return not self.live

    def advance(self, candidates):
        """candidates: (log_prob, row, token) extending live[row] by token, at least the
        2k most likely of the sentence's (each live row's k most likely tokens), which is
        all the walk below reads (at most k of them end in eos). Returns, for each of the
        k rows, the row it continues from."""
        k = self.k
        # Higher log-prob first; equal ones by their tokens, lexicographically.
        extended = sorted(((lp, self.live[row][0] + (token,), row) for lp, row, token in candidates),
                          key=lambda c: (-c[0], c[1]))
        # Among the k best candidates, those ending in eos (or at the length limit)
        # finish; the k best others stay live, each on its own row.
        self.live, parents = [], [0] * k
        for i, (lp, tokens, row) in enumerate(extended):
            if tokens[-1] == self.eos or len(tokens) >= self.max_len:
                if i < k:
                    self.finished.append((lp / length_penalty(len(tokens), self.alpha), tokens, lp))
            elif len(self.live) < k:
                parents[len(self.live)] = row
                self.live.append((tokens, lp))
        self.finished.sort(key=lambda f: (-f[0], f[1]))
        # Done when the k best finished cannot be beaten: a live hypothesis scores at
        # most log_prob / lp(max_len), since log-probs only fall.
        if len(self.finished) >= k and self.live:
            if self.finished[k - 1][0] >= self.live[0][1] / length_penalty(self.max_len, self.alpha):
                self.live = []
        return parents

    def next_token(self, row, bos):
        return self.live[row][0][-1] if row < len(self.live) else bos

    def live_log_prob(self, row):
        return self.live[row][1] if row < len(self.live) else float("-inf")

    def best(self):
        return list(self.finished[0][1]) if self.finished else []


def beam_batch(torch, tm, model, sources, limits, never, args):
    """Beam search over one batch, kiln's algorithm (models/decode/beam.cpp): sentence b
    on decoder rows b k .. b k + k - 1, all rows in one model call per step; returns each
    sentence's best hypothesis (ending with eos if it finished that way)."""
    k, n, pad = args.beam, len(sources), model.c["pad_id"]
    rows = n * k
    src = torch.full((n, max(map(len, sources))), pad, dtype=torch.long)
    for row, s in enumerate(sources):
        src[row, :len(s)] = torch.tensor(s)
    src_mask = tm.padding_mask(src, pad)
    memory = model.encode(src, src_mask)
    # Each source on k consecutive rows (kiln's Decoder::start(src, k, ...)). A row's
    # parent is always one of its own sentence's rows, which share the memory and the
    # source mask, so only the self-attention caches (or prefixes) need reordering.
    src_mask = src_mask.repeat_interleave(k, dim=0)
    if args.decoding == "kv":
        caches = model.start_decoding(memory)
        for cache in caches:
            cache[1] = tuple(x.repeat_interleave(k, dim=0) for x in cache[1])
    else:
        memory = memory.repeat_interleave(k, dim=0)
    beams = [SentenceBeam(limit, k, args.length_penalty, args.eos) for limit in limits]
    fed = torch.full((rows, 1), args.bos, dtype=torch.long)
    prefix = fed
    never = torch.tensor(never, dtype=torch.long)
    pool = min(2 * k, k * k)  # candidates per sentence that the walk can read
    for t in range(max(limits)):  # every sentence stops by its limit
        if all(b.done() for b in beams):
            break
        if args.decoding == "kv":
            hidden = model.decode_step(fed, t, caches, src_mask)[:, -1]
        else:
            hidden = model.decode(prefix, memory, src_mask)[:, -1]
        log_probs = torch.log_softmax(model.logits(hidden), dim=-1).index_fill_(1, never, float("-inf"))
        top_lp, top_ids = log_probs.topk(k, dim=-1)  # each row's k most likely tokens, [rows, k]
        # Each candidate's log-prob (f64, as kiln sums them); -inf for fillers and
        # stopped sentences' rows (and masked tokens), which are then left out. Equal
        # log-probs at a row's k-th token: torch.topk's pick, kiln's the lower id.
        live_lp = torch.tensor([b.live_log_prob(r) for b in beams for r in range(k)], dtype=torch.float64)
        cand = (live_lp.unsqueeze(1) + top_lp.double()).view(n, k * k)
        best_lp, best = cand.topk(pool, dim=1)
        best_token = top_ids.view(n, k * k).gather(1, best)
        parents = list(range(rows))
        for b, (beam, lps, picks, tokens) in enumerate(zip(beams, best_lp.tolist(), best.tolist(),
                                                            best_token.tolist())):
            if beam.done():
                continue  # a stopped sentence's rows keep their place
            within = beam.advance([(lp, pick // k, token) for lp, pick, token in zip(lps, picks, tokens)
                                   if lp != float("-inf")])
            parents[b * k:(b + 1) * k] = [b * k + r for r in within]
        if all(b.done() for b in beams):
            break
        index = torch.tensor(parents, dtype=torch.long)
        fed = torch.tensor([[b.next_token(r, args.bos)] for b in beams for r in range(k)], dtype=torch.long)
        if args.decoding == "kv":
            for cache in caches:
                cache[0][:] = [x.index_select(0, index) for x in cache[0]]
        else:
            prefix = torch.cat([prefix.index_select(0, index), fed], dim=1)
    return [b.best() for b in beams]


def never_generated(args, meta, pad):
    """The ids kiln never generates (Task::never_generated, models/tasks/): padding,
    unknown (1) and bos; with the text task's separate vocabularies also the source
    vocabulary's own ids (4 up to its size). Beam search masks them as kiln does."""
    ids = [pad, 1, args.bos]
    if meta.get("task") == "text":
        with open(f"{args.checkpoint}/corpus.json") as f:
            corpus = json.load(f)
        if corpus.get("vocab") == "separate":
            ids += range(4, corpus["source_vocab"])
    return sorted(set(ids))


def output_limit(args, meta):
    """Each sentence's cap on generated tokens as the checkpoint's task sets it
    (max_output_len in models/tasks/): de-en min(64, 2 len + 8), text min(the
    prepared corpus's max_len, 2 len + 10); --max-len replaces the first term."""
    task = meta.get("task")
    if task == "de-en":
        cap, slack = 64, 8
    elif task == "text":
        with open(f"{args.checkpoint}/corpus.json") as f:
            cap, slack = json.load(f)["max_len"], 10
    else:
        raise ValueError(f"{args.checkpoint}: translate knows de-en and text checkpoints, not {task!r}")
    cap = args.max_len or cap
    return lambda source: min(cap, 2 * len(source) + slack)


def translate(args, torch, tm):
    start = time.perf_counter()
    model, meta = tm.load_kiln_checkpoint(args.checkpoint)
    limit = output_limit(args, meta)
    model.eval()
    sources, references = read_ids(args.ids)
    loaded = time.perf_counter()
    # Sorted by source length (stable), batches of --batch (models/decode/decode_all.cpp
    # groups by padded lengths into power-of-two batches that fit its --batch-tokens).
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    hyps = [None] * len(sources)
    never = never_generated(args, meta, model.c["pad_id"]) if args.beam > 1 else None
    with torch.inference_mode():
        for begin in range(0, len(order), args.batch):
            ids = order[begin:begin + args.batch]
            batch, limits = [sources[i] for i in ids], [limit(sources[i]) for i in ids]
            if args.beam > 1:
                rows = beam_batch(torch, tm, model, batch, limits, never, args)
            else:
                rows = greedy_batch(torch, tm, model, batch, limits, args)
            for i, tokens in zip(ids, rows):
                hyps[i] = tokens[:-1] if tokens and tokens[-1] == args.eos else tokens
    end = time.perf_counter()
    if args.output:
        with open(args.output, "w") as f:
            f.writelines(" ".join(map(str, h)) + "\n" for h in hyps)
    scored = [(h, r) for h, r in zip(hyps, references) if r is not None]
    return {
        "framework": "torch", "version": torch.__version__, "mode": "translate", "task": meta.get("task"),
        "decoding": (f"beam {args.beam}, " if args.beam > 1 else "greedy, ")
        + ("incremental (KV cache)" if args.decoding == "kv" else "full re-run of the prefix"),
        "beam": args.beam, "length_penalty": args.length_penalty if args.beam > 1 else None,
        "threads": torch.get_num_threads(), "sentences": len(sources), "batch": args.batch,
        "generated_tokens": sum(map(len, hyps)), "load_s": round(loaded - start, 3),
        "decode_s": round(end - loaded, 3), "sentences_per_s": round(len(sources) / (end - loaded), 2),
        "wall_s": round(end - start, 3),
        "exact_match": round(sum(h == r for h, r in scored) / len(scored), 4) if scored else None,
        "peak_rss_mib": round(peak_rss_mib(), 1), **environment_report(torch),
    }


def main():
    args = parse_args()
    ensure_environment(args)
    torch = import_torch()
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_model as tm
    try:
        result = {"bench": bench, "translate": translate, "train": train}[args.mode](args, torch, tm)
    except (OSError, ValueError, KeyError, IndexError) as e:  # a missing or foreign checkpoint, bad ids
        sys.exit(f"torch_transformer.py: error: {e}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch peer of kiln's language model (kiln train --model lm, kiln generate).

The same model as models/lm/lm.cpp: byte tokens, pre-norm blocks of causal
self-attention and a GELU (tanh) feed-forward, rotary (or learned) positions,
a final LayerNorm and the output projection tied to the embeddings; Adam
(0.9, 0.98, 1e-9) on kiln's schedule with its peak at the end of the warm-up
(factor = lr sqrt(d_model warmup)); the same initial distributions (N(0, 0.02)
embeddings, Glorot matrices, zero biases). Attention is written out as
PyTorch 1.13's nn.MultiheadAttention computes it: the [T, T] scores and a
causal mask materialized (1.13 has no fused attention on the CPU).

  torch_lm.py train --train FILE --valid FILE --minutes M [--eval-minutes E] [sizes]
      trains on random windows of the file (seeded; the same distribution as
      kiln's, not the same draws) and prints a JSON line at each dev evaluation
      (the same dev windows as kiln: evenly spread over the dev file).
  torch_lm.py step --context T [--batch B] [sizes]
      times training steps at context T; one JSON line: ms per step, peak RSS.
  torch_lm.py generate --max-tokens N [sizes]
      generates N tokens at batch 1 over a KV cache (random params); one JSON line
      with tokens per second.

Threads and BLAS are set up as torch_transformer.py does (its environment).
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_transformer as tt  # noqa: E402  (the environment: threads, OpenBLAS core, malloc)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    train = sub.add_parser("train")
    train.add_argument("--train", required=True)
    train.add_argument("--valid", required=True)
    train.add_argument("--minutes", type=float, required=True)
    train.add_argument("--eval-minutes", type=float, default=1.0)
    train.add_argument("--dev-windows", type=int, default=256)
    train.add_argument("--seed", type=int, default=0)
    step = sub.add_parser("step")
    step.add_argument("--steps", type=int, default=5)
    gen = sub.add_parser("generate")
    gen.add_argument("--max-tokens", type=int, default=256)
    for sp in (train, step, gen):
        sp.add_argument("--context", type=int, default=256)
        sp.add_argument("--batch", type=int, default=32)
        sp.add_argument("--d-model", type=int, default=128)
        sp.add_argument("--heads", type=int, default=4)
        sp.add_argument("--d-ff", type=int, default=512)
        sp.add_argument("--layers", type=int, default=4)
        sp.add_argument("--positions", choices=("rope", "learned"), default="rope")
        sp.add_argument("--lr", type=float, default=1e-3)
        sp.add_argument("--warmup", type=int, default=100)
        sp.add_argument("--threads", type=int, default=os.cpu_count())
        sp.add_argument("--glibc-malloc-defaults", action="store_true")
        sp.add_argument("--omp-wait-policy", choices=("passive", "active", "unset"), default="passive")
    return p.parse_args()


def make_model(torch, args):
    nn, F = torch.nn, torch.nn.functional
    d, h, dh = args.d_model, args.heads, args.d_model // args.heads

    def rope_tables(length):
        # kiln's sinusoidal table of the head size: sin at 2i, cos at 2i + 1 of pos * 10000^(-2i/dh).
        pos = torch.arange(length, dtype=torch.float64)[:, None]
        freq = 10000.0 ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)
        angle = pos * freq
        return torch.sin(angle).float(), torch.cos(angle).float()

    def rotate(x, sin, cos):  # x [B, T, H, dh]; sin, cos [T, dh/2]: GPT-NeoX's halves, as kiln
        x1, x2 = x[..., : dh // 2], x[..., dh // 2:]
        sin, cos = sin[:, None, :], cos[:, None, :]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.w1, self.w2 = nn.Linear(d, args.d_ff), nn.Linear(args.d_ff, d)

        def attend(self, x, sin, cos, cache=None, pos=0):
            b, t, _ = x.shape
            q, k, v = (m(x).view(b, t, h, dh) for m in (self.q, self.k, self.v))
            if sin is not None:
                q, k = rotate(q, sin, cos), rotate(k, sin, cos)
            if cache is not None:  # generation: keys and values of positions 0..pos
                cache[0][:, pos:pos + t], cache[1][:, pos:pos + t] = k, v
                k, v = cache[0][:, :pos + t], cache[1][:, :pos + t]
            q, k, v = (a.transpose(1, 2) for a in (q, k, v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
            if cache is None:
                scores = scores + torch.full((t, t), float("-inf")).triu(1)
            y = torch.softmax(scores, dim=-1) @ v
            return self.o(y.transpose(1, 2).reshape(b, t, d))

        def forward(self, x, sin, cos, cache=None, pos=0):
            x = x + self.attend(self.ln1(x), sin, cos, cache, pos)
            return x + self.w2(F.gelu(self.w1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(256, d)
            self.pos = nn.Embedding(args.context, d) if args.positions == "learned" else None
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.ln_f = nn.LayerNorm(d)
            self.sin, self.cos = rope_tables(4 * args.context)
            for name, p in self.named_parameters():
                if name.startswith(("embed", "pos")):
                    nn.init.normal_(p, std=0.02)
                elif p.dim() == 2:
                    nn.init.xavier_uniform_(p)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def rows(self, tokens, caches=None, pos=0):
            t = tokens.shape[1]
            x = self.embed(tokens)
            sin = cos = None
            if self.pos is not None:
                x = x + self.pos.weight[pos:pos + t]
            else:
                sin, cos = self.sin[pos:pos + t], self.cos[pos:pos + t]
            for i, blk in enumerate(self.blocks):
                x = blk(x, sin, cos, None if caches is None else caches[i], pos)
            return self.ln_f(x)

        def forward(self, tokens):  # tokens [B, T+1] -> mean next-token loss
            x = self.rows(tokens[:, :-1])
            logits = x @ self.embed.weight.t()
            return F.cross_entropy(logits.reshape(-1, 256), tokens[:, 1:].reshape(-1))

    return GPT()


def optimizer(torch, model, args):
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    factor = args.lr * math.sqrt(args.d_model * args.warmup)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, tt.paper_schedule(args.d_model, args.warmup, factor))


def windows(torch, data, starts, length):
    index = torch.as_tensor(starts)[:, None] + torch.arange(length + 1)[None, :]
    return data[index].long()


def dev_batches(torch, data, rows, length, max_windows):
    """kiln's dev_batches (models/lm/byte_corpus.cpp): whole batches of evenly spread windows."""
    all_windows = (len(data) - 1) // length
    per_batch = min(rows, all_windows)
    n = min(all_windows, max(max_windows, per_batch)) // per_batch * per_batch
    starts = [i * all_windows // n * length for i in range(n)]
    return [windows(torch, data, starts[i:i + per_batch], length) for i in range(0, n, per_batch)]


def read_bytes(torch, path):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8)


def train(args, torch):
    torch.manual_seed(args.seed)
    data, valid = read_bytes(torch, args.train), read_bytes(torch, args.valid)
    dev = dev_batches(torch, valid, args.batch, args.context, args.dev_windows)
    model = make_model(torch, args)
    opt, schedule = optimizer(torch, model, args)
    gen = torch.Generator().manual_seed(args.seed)
    start, step, next_eval, recent = time.monotonic(), 0, args.eval_minutes * 60, []
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= next_eval or elapsed >= args.minutes * 60:
            paused = time.monotonic()
            model.eval()
            with torch.no_grad():
                loss = sum(model(b).item() for b in dev) / len(dev)
            model.train()
            train_loss = sum(recent) / len(recent) if recent else loss
            print(json.dumps({"minutes": elapsed / 60, "step": step, "dev_loss": loss, "train_loss": train_loss}),
                  flush=True)
            start += time.monotonic() - paused  # evaluations are not training time, as kiln's clock
            next_eval += args.eval_minutes * 60
            if elapsed >= args.minutes * 60:
                break
        starts = torch.randint(0, len(data) - args.context, (args.batch,), generator=gen)
        loss = model(windows(torch, data, starts, args.context))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        schedule.step()
        step += 1
        recent = (recent + [loss.item()])[-20:]


def step(args, torch):
    model = make_model(torch, args)
    opt, schedule = optimizer(torch, model, args)
    tokens = torch.randint(0, 256, (args.batch, args.context + 1))
    times = []
    for i in range(args.steps + 1):
        t0 = time.perf_counter()
        loss = model(tokens)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        schedule.step()
        if i > 0:
            times.append(1000 * (time.perf_counter() - t0))
    times.sort()
    print(json.dumps({"context": args.context, "batch": args.batch, "ms_per_step": times[len(times) // 2],
                      "peak_rss_mib": tt.peak_rss_mib(), "threads": args.threads}))


def generate(args, torch):
    torch.manual_seed(0)
    model = make_model(torch, args).eval()
    length = 1 + args.max_tokens
    dh = args.d_model // args.heads
    with torch.no_grad():
        caches = [(torch.zeros(1, length, args.heads, dh), torch.zeros(1, length, args.heads, dh))
                  for _ in range(args.layers)]
        token = torch.tensor([[10]])
        t0 = time.perf_counter()
        for pos in range(args.max_tokens):
            x = model.rows(token, caches, pos)
            logits = x[:, -1] @ model.embed.weight.t()
            token = torch.argmax(logits, dim=-1, keepdim=True)
        seconds = time.perf_counter() - t0
    print(json.dumps({"tokens": args.max_tokens, "tokens_per_second": args.max_tokens / seconds,
                      "threads": args.threads}))


def main():
    args = parse_args()
    tt.ensure_environment(args)
    torch = tt.import_torch()
    {"train": train, "step": step, "generate": generate}[args.mode](args, torch)


if __name__ == "__main__":
    main()

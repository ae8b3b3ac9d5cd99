#!/usr/bin/python3
"""Checks that torch_model.py computes what kiln computes: the same params (kiln's
init, exported with `kiln run --save`), the same padded batch, dropout off; then the
loss, five Adam steps with the warm-up schedule, and the params after them must agree.

  tools/bench/check_peer.py [--kiln build/kiln]

Exits non-zero on a mismatch. Needs torch and numpy (Debian: python3-torch).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

CONFIG = dict(config="tiny", batch=4, src_len=7, tgt_len=6, vocab=50, warmup=4, steps=5)


def kiln(exe, *args):
    out = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kiln {' '.join(map(str, args))} failed:\n{out.stderr}")
    return out.stdout


def token_batches(np):
    """Random tokens 1..V-1 with padding (0) at the ends of some rows: masks and the
    ignored targets take part."""
    rng = np.random.default_rng(7)
    b, s, t, v = CONFIG["batch"], CONFIG["src_len"], CONFIG["tgt_len"], CONFIG["vocab"]
    src = rng.integers(1, v, (b, s), dtype=np.int32)
    tgt_in = rng.integers(1, v, (b, t), dtype=np.int32)
    tgt_out = rng.integers(1, v, (b, t), dtype=np.int32)
    for row, pad in enumerate((0, 2, 3, 1)):
        if pad:
            src[row, s - pad:] = 0
            tgt_in[row, t - pad + 1:] = 0  # tgt_in keeps one more real token (bos + tgt)
            tgt_out[row, t - pad:] = 0
    return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default="build/kiln")
    args = p.parse_args()
    os.environ.pop("OPENBLAS_CORETYPE", None)
    try:
        import numpy as np
        import torch
    except ImportError:
        sys.exit("PyTorch not found: apt-get install python3-torch libopenblas0-pthread")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_model as tm
    from torch_transformer import paper_schedule

    c = dict(tm.preset(CONFIG["config"], CONFIG["vocab"]), dropout=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        kiln(args.kiln, "export", "--model", "transformer", "--config", CONFIG["config"],
             "--batch", CONFIG["batch"], "--src-len", CONFIG["src_len"], "--tgt-len", CONFIG["tgt_len"],
             "--vocab", CONFIG["vocab"], "--dropout", 0, "--warmup", CONFIG["warmup"], "-o", f"{tmp}/graphs")
        batch = token_batches(np)
        bindings = []
        for name, value in batch.items():
            np.save(f"{tmp}/{name}.npy", value)
            bindings += ["-i", f"{name}={tmp}/{name}.npy"]
        out = kiln(args.kiln, "run", f"{tmp}/graphs/loss.kir", *bindings, "-o", f"{tmp}/out", "--save", f"{tmp}/init")
        kiln_loss = float(re.search(r"%loss : f32\[\] = (\S+)", out).group(1))
        out = kiln(args.kiln, "run", f"{tmp}/graphs/train_step.kir", *bindings, "--load", f"{tmp}/init",
                   "--steps", CONFIG["steps"], "-o", f"{tmp}/out", "--save", f"{tmp}/after")
        kiln_steps = [(float(a), float(b)) for a, b in re.findall(r"step \d+: loss=(\S+) lr=(\S+)", out)]
        load = lambda d: {f[:-4]: np.load(f"{d}/{f}") for f in os.listdir(d) if f.endswith(".npy")}
        init, after = load(f"{tmp}/init"), load(f"{tmp}/after")

    model = tm.Transformer(c)
    tm.load_kiln_params(model, init, "kiln's initial params")
    tokens = {k: torch.from_numpy(v).long() for k, v in batch.items()}
    loss = lambda: model.loss(tokens["src"], tokens["tgt_in"], tokens["tgt_out"])
    with torch.no_grad():
        torch_loss = loss().item()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, paper_schedule(c["d_model"], CONFIG["warmup"]))
    torch_steps = []
    for _ in range(CONFIG["steps"]):
        opt.zero_grad()
        value = loss()
        value.backward()
        torch_steps.append((value.item(), opt.param_groups[0]["lr"]))  # the lr this step uses
        opt.step()
        sched.step()
    # Adam turns rounding noise into whole steps of +-lr where the true gradient is
    # 0 or tiny: the key biases (softmax ignores a shift common to a query's scores)
    # and the odd element at a ReLU's kink. So count the elements apart, skip bk.
    apart = total = 0
    for name, param in model.named_parameters():
        source, transposed = tm.kiln_name(name)
        if source.endswith(".bk"):
            continue
        theirs = torch.from_numpy(after[source])
        apart += ((param.detach() - (theirs.t() if transposed else theirs)).abs() > 1e-3).sum().item()
        total += param.numel()
    print(f"loss, dropout off: kiln {kiln_loss:.6f}  torch {torch_loss:.6f}")
    for i, ((k, k_lr), (t, t_lr)) in enumerate(zip(kiln_steps, torch_steps), 1):
        print(f"step {i}: loss kiln {k:.6f} torch {t:.6f}, lr kiln {k_lr:.6g} torch {t_lr:.6g}")
    print(f"params after {CONFIG['steps']} steps: {apart} of {total} elements differ by more than 1e-3 "
          "(key biases skipped)")
    close = lambda a, b: abs(a - b) <= 1e-5 * max(1.0, abs(a))
    ok = (close(kiln_loss, torch_loss) and len(kiln_steps) == CONFIG["steps"]
          and all(close(a, b) for k, t in zip(kiln_steps, torch_steps) for a, b in zip(k, t)) and apart <= total // 1000)
    print("same computation" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

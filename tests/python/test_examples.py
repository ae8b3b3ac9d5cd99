# The Python examples run as a user runs them (examples/python/), on small settings.
import os
import subprocess
import sys

from conftest import EXAMPLES

import kiln


def run_example(name, *args, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(kiln.__file__))  # the module under test
    return subprocess.run([sys.executable, str(EXAMPLES / "python" / name), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_own_corpus_example(tmp_path):
    # From made-up text files to a trained model, its BLEU, a translated file and an average.
    work = tmp_path / "own"
    r = run_example("own_corpus.py", str(work), "--quick", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "trained steps 1..10" in r.stdout
    assert "best: BLEU = " in r.stdout
    assert "averaged: BLEU = " in r.stdout
    assert len((work / "test.hyp.en").read_text().splitlines()) == 30
    assert (work / "averaged" / "checkpoint.safetensors").exists()

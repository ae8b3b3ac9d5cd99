# The kiln module's tests: PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python
# (CTest's `python` test runs them so). Without numpy they are skipped.
import pathlib

import pytest

np = pytest.importorskip("numpy", reason="the kiln module's tests need numpy (Debian: python3-numpy)")
kiln = pytest.importorskip("kiln", reason="build the module (ninja kiln_python) and set PYTHONPATH=build/python")

SOURCE_DIR = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = SOURCE_DIR / "examples"


@pytest.fixture
def mlp():
    """examples/mlp.kir: inputs x f32[8,16] and labels i32[8]; outputs loss and logits."""
    return kiln.load(str(EXAMPLES / "mlp.kir"))


@pytest.fixture
def mlp_inputs():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((8, 16)).astype(np.float32),
            "labels": rng.integers(0, 4, size=8).astype(np.int32)}


@pytest.fixture
def kiln_binary():
    """The kiln command built beside the module (build/kiln), for comparing messages."""
    path = pathlib.Path(kiln.__file__).resolve().parents[1] / "kiln"
    if not path.exists():
        pytest.skip(f"no kiln command at {path}")
    return str(path)

"""Writes ONNX's backend node tests (model.onnx, test_data_set_0/input_*.pb and
output_*.pb per test) under DIR/node, with the case generators of the installed
onnx package: python3 generate_node_tests.py DIR.

onnx 1.12's generators use numpy's aliases np.float, np.int, np.bool and
np.object, which numpy 1.24 removed: they are put back before onnx is imported.
"""
import sys

import numpy as np

for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if not hasattr(np, alias):
        setattr(np, alias, builtin)

from onnx.backend.test import cmd_tools  # noqa: E402  (after the aliases)

if len(sys.argv) != 2:
    sys.exit("usage: generate_node_tests.py DIR")
sys.argv = [sys.argv[0], "generate-data", "-o", sys.argv[1]]
cmd_tools.main()

"""Reads a Python file of data (top-level NAME = literal assignments) without importing or
running it: the loader of the generators that turn python/codemcp_rt's shared data into C
headers (src/catalog/gen_redact_rules.py, src/common/gen_limits.py, sdkgen/gen_verbs.py)."""

import ast


def load(path):
    """NAME -> value of each top-level `NAME = literal` of the file (ast.literal_eval)."""
    values = {}
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return values

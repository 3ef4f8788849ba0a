"""embed.py: the generated C table holds every runtime module byte for byte, and the
package works when imported from such source strings (no files, no __file__)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
ROOT = os.path.join(PYDIR, "codemcp_rt")
EMBED = os.path.join(PYDIR, "embed.py")

DUMP_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "codemcp_embedded.h"
int main(void)
{
    const struct codemcp_embedded_module *m;
    for (m = codemcp_embedded_modules; m->name; m++) {
        printf("%s %d %zu\n", m->name, m->is_package, strlen(m->source));
        fwrite(m->source, 1, strlen(m->source), stdout);
        printf("\n");
    }
    return 0;
}
"""

IMPORT_FROM_STRINGS = r"""
import importlib.abc, importlib.util, json, sys
table = json.load(open(sys.argv[1]))

class Loader(importlib.abc.Loader):
    def __init__(self, name): self.name = name
    def create_module(self, spec): return None
    def exec_module(self, module):
        source, _ = table[self.name]
        exec(compile(source, "<%s>" % self.name, "exec"), module.__dict__)

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in table:
            return None
        return importlib.util.spec_from_loader(name, Loader(name), is_package=bool(table[name][1]))

sys.meta_path.insert(0, Finder())
for name in sorted(table):
    importlib.import_module(name)
    assert getattr(sys.modules[name], "__file__", None) is None, name
from codemcp_rt import runner
env = runner.run({"code": "import json\nresult = json.dumps(gather(Pending.of(1)))"})
print(json.dumps(env))
"""


def run_embed(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, EMBED, *args], capture_output=True, text=True)


def sources() -> list[str]:
    out = []
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        out += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in files if f.endswith(".py")]
    return sorted(out)


class EmbedTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="codemcp-embed-")

    def tearDown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def generate(self) -> str:
        out = os.path.join(self.tmp, "table.c")
        files = [os.path.join(ROOT, f) for f in sources()]
        proc = run_embed("--package", "codemcp_rt", "--root", ROOT, "--output", out, *files)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return out

    def test_list(self) -> None:
        proc = run_embed("--list", ROOT)
        self.assertEqual(proc.stdout.split(), sources())
        self.assertIn("__init__.py", proc.stdout.split())

    def test_table_round_trips_through_a_c_compiler(self) -> None:
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            self.skipTest("no C compiler")
        table = self.generate()
        main = os.path.join(self.tmp, "main.c")
        with open(main, "w") as f:
            f.write(DUMP_MAIN)
        exe = os.path.join(self.tmp, "dump")
        subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", PYDIR, "-o", exe, main, table], check=True)
        data = subprocess.run([exe], capture_output=True, check=True).stdout
        found = {}
        pos = 0
        while pos < len(data):
            nl = data.index(b"\n", pos)
            name, is_pkg, size = data[pos:nl].decode().split()
            start = nl + 1
            found[name] = (int(is_pkg), data[start:start + int(size)])
            pos = start + int(size) + 1
        expected = {}
        for rel in sources():
            parts = rel[:-3].split(os.sep)
            pkg = parts[-1] == "__init__"
            name = ".".join(["codemcp_rt"] + (parts[:-1] if pkg else parts))
            with open(os.path.join(ROOT, rel), "rb") as f:
                expected[name] = (int(pkg), f.read())
        self.assertEqual(found, expected)
        self.assertEqual(found["codemcp_rt"][0], 1)

    def test_package_imports_from_strings(self) -> None:
        table = {}
        for rel in sources():
            parts = rel[:-3].split(os.sep)
            pkg = parts[-1] == "__init__"
            name = ".".join(["codemcp_rt"] + (parts[:-1] if pkg else parts))
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                table[name] = (f.read(), pkg)
        path = os.path.join(self.tmp, "table.json")
        with open(path, "w") as f:
            json.dump(table, f)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        proc = subprocess.run([sys.executable, "-I", "-c", IMPORT_FROM_STRINGS, path], capture_output=True,
                              text=True, cwd=self.tmp, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        envelope = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(envelope, {"ok": True, "result": '[{"ok": true, "value": 1}]', "calls": 0})

    def test_unlisted_module_fails_the_build(self) -> None:
        files = [os.path.join(ROOT, f) for f in sources() if f != "errors.py"]
        proc = run_embed("--package", "codemcp_rt", "--root", ROOT, "--output", os.path.join(self.tmp, "x.c"), *files)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("new: errors.py", proc.stderr)
        self.assertIn("reconfigure", proc.stderr)

    def test_syntax_error_fails_the_build(self) -> None:
        root = os.path.join(self.tmp, "pkg")
        os.mkdir(root)
        with open(os.path.join(root, "bad.py"), "w") as f:
            f.write("def (:\n")
        proc = run_embed("--package", "pkg", "--root", root, "--output", os.path.join(self.tmp, "y.c"),
                         os.path.join(root, "bad.py"))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("bad.py:1", proc.stderr)


if __name__ == "__main__":
    unittest.main()

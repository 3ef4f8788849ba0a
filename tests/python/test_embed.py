"""embed.py: the generated C table holds every runtime module byte for byte, and the
package works when imported from such source strings (no files, no __file__)."""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
ROOT = os.path.join(PYDIR, "codemcp_rt")
EMBED = os.path.join(PYDIR, "embed.py")
WORKER = os.path.normpath(os.path.join(HERE, "..", "..", "src", "worker"))

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

# A host for src/worker/importer.c: the worker's finder over a generated table, with the
# two lookups pymod.c exposes as _codemcp.embedded_source / embedded_code.
IMPORT_HOST = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "importer.h"

static PyObject *source(PyObject *self, PyObject *arg)
{
    const char *s;
    int pkg;
    (void)self;
    if (imp_lookup(PyUnicode_AsUTF8(arg), &s, &pkg) < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(sO)", s, pkg ? Py_True : Py_False);
}

static PyObject *code(PyObject *self, PyObject *arg)
{
    const unsigned char *c;
    size_t n;
    (void)self;
    if (imp_code(PyUnicode_AsUTF8(arg), &c, &n) < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)c, (Py_ssize_t)n);
}

static PyMethodDef methods[] = {{"embedded_source", source, METH_O, NULL},
                                {"embedded_code", code, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_codemcp", NULL, -1, methods};
static PyObject *init(void) { return PyModule_Create(&def); }

int main(void)
{
    PyImport_AppendInittab("_codemcp", init);
    Py_Initialize();
    if (imp_install(NULL) < 0) {
        PyErr_Print();
        return 2;
    }
    int rc = PyRun_SimpleString("import _codemcp, codemcp_rt.errors as e\n"
                                "print(e.ToolError.__name__, e.__spec__.origin,\n"
                                "      _codemcp.embedded_code('codemcp_rt.errors') is not None)\n");
    return Py_FinalizeEx() < 0 ? 3 : rc ? 1 : 0;
}
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

    def import_through_the_worker_finder(self, other_magic: bool) -> subprocess.CompletedProcess:
        """The worker's importer over a table whose code objects are all bad marshal data, with
        the magic number of this Python or another."""
        cc = shutil.which("cc") or shutil.which("gcc")
        include = sysconfig.get_config_var("INCLUDEPY")
        if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
            self.skipTest("no C compiler or no Python headers")
        with open(self.generate()) as f:
            table = f.read()
        table, n = re.subn(r"(codemcp_code_\d+\[\] = \{\n    )0x[0-9a-f]{2}", r"\g<1>0x00", table)
        self.assertGreater(n, 10)
        if other_magic:
            table, n = re.subn(r"(codemcp_embedded_magic\[4\] = \{0x)([0-9a-f]{2})",
                               lambda m: m.group(1) + "%02x" % (int(m.group(2), 16) ^ 0xff), table)
            self.assertEqual(n, 1)
        for name, text in (("table.c", table), ("host.c", IMPORT_HOST)):
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)
        exe = os.path.join(self.tmp, "host")
        libdir = sysconfig.get_config_var("LIBDIR")
        subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-DCODEMCP_HAVE_EMBEDDED", "-I", PYDIR, "-I", WORKER,
                        "-I", include, "-o", exe, os.path.join(self.tmp, "host.c"), os.path.join(self.tmp, "table.c"),
                        os.path.join(WORKER, "importer.c"), "-L", libdir, "-Wl,-rpath," + libdir,
                        "-lpython" + sysconfig.get_config_var("LDVERSION")], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        return subprocess.run([exe], capture_output=True, text=True, cwd=self.tmp, env=env)

    def test_the_embedded_code_is_loaded_when_the_magic_matches(self) -> None:
        proc = self.import_through_the_worker_finder(other_magic=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("bad marshal data", proc.stderr)

    def test_another_pythons_magic_compiles_the_source(self) -> None:
        proc = self.import_through_the_worker_finder(other_magic=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.split(), ["ToolError", "<codemcp-worker>/codemcp_rt/errors.py", "False"])

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

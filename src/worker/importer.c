/* importer — the embedded-source importer for codemcp_rt; see importer.h.
 *
 * The table comes from python/embed.py (generated C, declared in codemcp_embedded.h). The
 * finder itself is a few lines of Python kept here as a string: it loads the code object
 * embed.py compiled at build time (_codemcp.embedded_code), or, when this interpreter's magic
 * number differs, compiles _codemcp.embedded_source(name), both with a pseudo file name
 * ("<codemcp-worker>/codemcp_rt/x.py") so tracebacks stay readable; the loader's
 * get_source() lets linecache show those lines too. Runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "importer.h"

#include <string.h>

#ifdef CODEMCP_HAVE_EMBEDDED
#include "codemcp_embedded.h"
#endif

int imp_lookup(const char *name, const char **source, int *is_package)
{
#ifdef CODEMCP_HAVE_EMBEDDED
    for (const struct codemcp_embedded_module *m = codemcp_embedded_modules; m->name; m++) {
        if (strcmp(m->name, name) == 0) {
            *source = m->source;
            *is_package = m->is_package != 0;
            return 0;
        }
    }
#else
    (void)name;
    (void)source;
    (void)is_package;
#endif
    return -1;
}

int imp_code(const char *name, const unsigned char **code, size_t *len)
{
#ifdef CODEMCP_HAVE_EMBEDDED
    long magic = PyImport_GetMagicNumber(); /* the 4 bytes, little-endian */
    const unsigned char *m = codemcp_embedded_magic;
    if (magic != (long)((unsigned long)m[0] | (unsigned long)m[1] << 8 | (unsigned long)m[2] << 16 |
                        (unsigned long)m[3] << 24))
        return -1;
    for (const struct codemcp_embedded_module *e = codemcp_embedded_modules; e->name; e++) {
        if (strcmp(e->name, name) == 0 && e->code) {
            *code = e->code;
            *len = e->code_len;
            return 0;
        }
    }
#else
    (void)name;
    (void)code;
    (void)len;
#endif
    return -1;
}

int imp_count(void)
{
    int n = 0;
#ifdef CODEMCP_HAVE_EMBEDDED
    for (const struct codemcp_embedded_module *m = codemcp_embedded_modules; m->name; m++)
        n++;
#endif
    return n;
}

/* Executed once in a private namespace; `_install(dev_path)` does the work. */
static const char imp_finder_source[] =
    "import marshal\n"
    "import sys\n"
    "import _codemcp\n"
    "from importlib.machinery import ModuleSpec\n"
    "\n"
    "class EmbeddedImporter:\n"
    "    \"\"\"Finds and loads modules whose source is compiled into codemcp-worker.\"\"\"\n"
    "\n"
    "    @staticmethod\n"
    "    def _filename(name, is_package):\n"
    "        path = name.replace('.', '/')\n"
    "        return '<codemcp-worker>/' + (path + '/__init__.py' if is_package else path +\n"
    "                                      '.py')\n"
    "\n"
    "    @classmethod\n"
    "    def _lookup(cls, name):\n"
    "        found = _codemcp.embedded_source(name)\n"
    "        if found is None:\n"
    "            raise ImportError('no embedded module ' + repr(name), name=name)\n"
    "        return found\n"
    "\n"
    "    @classmethod\n"
    "    def find_spec(cls, fullname, path=None, target=None):\n"
    "        found = _codemcp.embedded_source(fullname)\n"
    "        if found is None:\n"
    "            return None\n"
    "        spec = ModuleSpec(fullname, cls, origin=cls._filename(fullname, found[1]),\n"
    "                          is_package=found[1])\n"
    "        return spec\n"
    "\n"
    "    @staticmethod\n"
    "    def create_module(spec):\n"
    "        return None\n"
    "\n"
    "    @classmethod\n"
    "    def exec_module(cls, module):\n"
    "        exec(cls.get_code(module.__spec__.name), module.__dict__)\n"
    "\n"
    "    @classmethod\n"
    "    def get_source(cls, fullname):\n"
    "        return cls._lookup(fullname)[0]\n"
    "\n"
    "    @classmethod\n"
    "    def is_package(cls, fullname):\n"
    "        return cls._lookup(fullname)[1]\n"
    "\n"
    "    @classmethod\n"
    "    def get_code(cls, fullname):\n"
    "        code = _codemcp.embedded_code(fullname)\n"
    "        if code is not None:\n"
    "            return marshal.loads(code)\n"
    "        source, is_package = cls._lookup(fullname)\n"
    "        return compile(source, cls._filename(fullname, is_package), 'exec',\n"
    "                       dont_inherit=True)\n"
    "\n"
    "def _install(dev_path):\n"
    "    if dev_path:\n"
    "        # Development: the filesystem wins, the embedded copy is the fallback.\n"
    "        dirs = [d for d in dev_path.split(':') if d]\n"
    "        sys.path[0:0] = dirs\n"
    "        sys.meta_path.append(EmbeddedImporter)\n"
    "    else:\n"
    "        # Production: nothing on disk may shadow the runtime.\n"
    "        sys.meta_path.insert(0, EmbeddedImporter)\n";

int imp_install(const char *dev_path)
{
    int rc = -1;
    PyObject *ns = NULL, *builtins = NULL, *res = NULL, *name = NULL;

    ns = PyDict_New();                                /* new ref */
    name = PyUnicode_FromString("_codemcp_importer"); /* new ref; classes' __module__ */
    if (!ns || !name)
        goto fail;
    builtins = PyEval_GetBuiltins(); /* borrowed */
    if (PyDict_SetItemString(ns, "__builtins__", builtins) < 0 ||
        PyDict_SetItemString(ns, "__name__", name) < 0)
        goto fail;
    res = PyRun_String(imp_finder_source, Py_file_input, ns, ns); /* new ref */
    if (!res)
        goto fail;
    Py_CLEAR(res);
    PyObject *install = PyDict_GetItemString(ns, "_install"); /* borrowed */
    if (!install) {
        PyErr_SetString(PyExc_RuntimeError, "importer bootstrap lost _install");
        goto fail;
    }
    res = PyObject_CallFunction(install, "s", dev_path); /* new ref; NULL dev_path -> None */
    if (!res)
        goto fail;
    rc = 0;
fail:
    Py_XDECREF(res);
    Py_XDECREF(name);
    Py_XDECREF(ns);
    return rc;
}

/* pypending — `_codemcp.PendingBase`, the C core of codemcp_rt.pending.Pending.
 *
 * It owns a Pending's state — the wait/poll/block callables, the label, the outcome — the
 * two methods every SDK value goes through, result() and done(), and the commonest way a text
 * value is read, str() and format(). pending.py subclasses it (the rest of the value
 * forwarding: __getitem__, __iter__, operators... stays in Python) and keeps a
 * Python twin of this class for plain python3; both behave the same (tests/python and
 * tests/e2e/twins.test.mjs check it).
 *
 * Must not: do I/O, know about calls or the transport (the wait callable does that), or trust
 * its fields: a program can set every one of them (`p._state = 9`, `p._wait = 5`, `del
 * p._value`), call __init__ again while another thread waits, or read the Pending from inside
 * its own wait(). Each of those gets a Python exception or the Python twin's answer, never a
 * crash. Called with the GIL held; the GIL is dropped only while another thread is inside
 * this Pending's wait(). */
#ifndef CODEMCP_PYPENDING_H
#define CODEMCP_PYPENDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds PendingBase to the module `m`. 0, or -1 with an exception set. */
int pyp_add_type(PyObject *m);

#endif

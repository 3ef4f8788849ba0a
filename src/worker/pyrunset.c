/* pyrunset — see pyrunset.h. Reads runner's and capture's module state the way their Python
 * twins do (the same objects, through references taken at init); never stores a reference
 * agent code could reach into anything but those objects. */
#include "pyrunset.h"
#include "fdcap.h"
#include "pyfast.h"

#include <stdio.h>
#include <string.h>
#include <structmember.h>

static struct {
    PyObject *namespace; /* runner._namespace(session, reset, snap) */
    PyObject *rn_dict;   /* runner's module dict: "_fresh_for", "_injected" */
    PyObject *sessions;  /* runner._sessions (an OrderedDict) */
    PyObject *runstate;  /* the RunState class */
    PyObject *stream;    /* capture._stream(i, name, limit) */
    PyObject *last;      /* capture._last: the last run's two streams */
    PyObject *capped;    /* capture.CappedStream */
    PyObject *k_fresh_for, *k_injected, *k_result, *k_move_to_end, *k_name, *k_limit;
    PyObject *k_names[2], *k_parts, *k_cut;
    Py_ssize_t slot[PYRS_NSLOTS]; /* offsets of RunState's slots in an instance */
    PyObject *descr[PYRS_NSLOTS]; /* their member descriptors (owned) */
    PyObject *k_slot[PYRS_NSLOTS];
    unsigned int tag; /* RunState's version tag when its slots were last found intact */
} R;

static PyObject *places; /* session -> (fresh, bytes of Py_ssize_t places): see below */

static const char *const STATE[PYRS_NSLOTS] = {"run_id",          "run_id_json", "made",
                                               "mutations",       "writes",      "interruptible",
                                               "early_interrupt", "finished",    "interrupted"};

static int take(PyObject *hooks, const char *name, PyObject **out)
{
    PyObject *v = PyDict_GetItemString(hooks, name); /* borrowed */
    if (!v) {
        PyErr_Format(PyExc_KeyError, "serve(): hook %s missing", name);
        return -1;
    }
    *out = Py_NewRef(v);
    return 0;
}

static int intern(PyObject **out, const char *s)
{
    return (*out = PyUnicode_InternFromString(s)) ? 0 : -1;
}

int pyrs_init(PyObject *hooks)
{
    if (take(hooks, "namespace", &R.namespace) < 0 || take(hooks, "rn_dict", &R.rn_dict) < 0 ||
        take(hooks, "sessions", &R.sessions) < 0 || take(hooks, "runstate", &R.runstate) < 0 ||
        take(hooks, "stream", &R.stream) < 0 || take(hooks, "last", &R.last) < 0 ||
        take(hooks, "capped", &R.capped) < 0)
        return -1;
    if (!PyDict_Check(R.rn_dict) || !PyDict_Check(R.sessions) || !PyType_Check(R.runstate) ||
        !PyList_CheckExact(R.last) || !PyType_Check(R.capped)) {
        PyErr_SetString(PyExc_TypeError, "serve(): a run set-up hook has the wrong type");
        return -1;
    }
    if (!(places = PyDict_New()) || intern(&R.k_fresh_for, "_fresh_for") < 0 ||
        intern(&R.k_injected, "_injected") < 0 || intern(&R.k_result, "result") < 0 ||
        intern(&R.k_move_to_end, "move_to_end") < 0 || intern(&R.k_name, "name") < 0 ||
        intern(&R.k_limit, "limit") < 0 || intern(&R.k_parts, "_parts") < 0 ||
        intern(&R.k_cut, "_cut") < 0 || intern(&R.k_names[0], "stdout") < 0 ||
        intern(&R.k_names[1], "stderr") < 0)
        return -1;
    /* RunState's slots are member descriptors in its dict when the class is made; their
     * offsets into an instance are fixed by its layout. A slot is read or stored directly
     * while the class still resolves the name to that descriptor with the generic
     * getattr/setattr (what `state.x` does then); otherwise through getattr/setattr. */
    for (int i = 0; i < PYRS_NSLOTS; i++) {
        if (intern(&R.k_slot[i], STATE[i]) < 0)
            return -1;
        PyObject *d = _PyType_Lookup((PyTypeObject *)R.runstate, R.k_slot[i]); /* borrowed */
        PyMemberDef *m =
            d && Py_IS_TYPE(d, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)d)->d_member : NULL;
        if (!m || m->type != T_OBJECT_EX || m->offset <= 0 ||
            m->offset + (Py_ssize_t)sizeof(PyObject *) >
                ((PyTypeObject *)R.runstate)->tp_basicsize) {
            PyErr_Format(PyExc_TypeError, "serve(): RunState.%s is not a slot", STATE[i]);
            return -1;
        }
        R.slot[i] = m->offset;
        R.descr[i] = Py_NewRef(d);
    }
    return 0;
}

/* Does state.<slot i> still mean the slot itself? The whole class is checked once and then
 * again only when its version tag changed (CPython clears the tag on any change to the
 * class: an attribute set or deleted, __getattribute__/__setattr__ assigned). */
static int intact(PyObject *state, int i)
{
    PyTypeObject *t = Py_TYPE(state);
    if (!R.descr[i] || t != (PyTypeObject *)R.runstate)
        return 0;
    if (R.tag && t->tp_version_tag == R.tag && PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG))
        return 1;
    R.tag = 0;
    if (t->tp_getattro != PyObject_GenericGetAttr || t->tp_setattro != PyObject_GenericSetAttr)
        return 0;
    for (int j = 0; j < PYRS_NSLOTS; j++)
        if (_PyType_Lookup(t, R.k_slot[j]) != R.descr[j]) /* (it assigns a tag) */
            return 0;
    if (PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG))
        R.tag = t->tp_version_tag;
    return 1;
}

PyTypeObject *pyrs_state_type(void)
{
    return (PyTypeObject *)R.runstate;
}

PyObject *pyrs_get(PyObject *state, int which)
{
    PyObject *v = intact(state, which) ? *(PyObject **)((char *)state + R.slot[which]) : NULL;
    if (v)
        return Py_NewRef(v);
    return R.k_slot[which] ? PyObject_GetAttr(state, R.k_slot[which])
                           : PyObject_GetAttrString(state, STATE[which]);
}

int pyrs_set(PyObject *state, int which, PyObject *v)
{
    if (!intact(state, which))
        return R.k_slot[which] ? PyObject_SetAttr(state, R.k_slot[which], v)
                               : PyObject_SetAttrString(state, STATE[which], v);
    Py_XSETREF(*(PyObject **)((char *)state + R.slot[which]), Py_NewRef(v));
    return 0;
}

/* ---- the injected names' places ---------------------------------------------------------
 * runner._namespace puts every injected name back with ns.update(fresh) on every run (~220
 * instructions a name, 22 names for one server, thousands for a large catalog), because the
 * last run may have rebound or deleted one. Here each namespace remembers where in its entry
 * order each injected name sat after the last injection (PyDict_Next positions, in fresh's
 * order); the next run looks at those entries (~40 instructions a name) and updates only when
 * one of them no longer holds fresh's key with fresh's object. The check reads the live dicts
 * only: whatever agent code did meanwhile (rebinding, deleting, resizing the namespace,
 * changing fresh itself), a stale place fails the check and the run updates as before. */

#define PYRS_MAX_PLACES 4096 /* namespaces remembered (runner.MAX_SESSIONS) */

/* Is nk the key k (the same object, or an equal exact str)? */
static int same_key(PyObject *nk, PyObject *k)
{
    return nk == k ||
           (PyUnicode_CheckExact(nk) && PyUnicode_CheckExact(k) && PyUnicode_Compare(nk, k) == 0);
}

/* A dict's version (CPython 3.11: globally unique, changed by every change to the dict, so the
 * same dict object with the same tag holds the same pairs); 0 (never a valid tag) where the
 * field is gone or deprecated. */
static unsigned long long dict_tag(PyObject *d)
{
#if PY_VERSION_HEX < 0x030C0000
    return ((PyDictObject *)d)->ma_version_tag;
#else
    (void)d;
    return 0;
#endif
}

/* 1 when every (k, v) of fresh is bound in ns, as the recorded places say; 0 otherwise. */
static int injected_in_place(PyObject *ns, PyObject *fresh, PyObject *session)
{
    PyObject *h = PyDict_GetItemWithError(places, session), *k, *v, *nk, *nv; /* borrowed */
    if (!h) {
        PyErr_Clear();
        return 0;
    }
    PyObject *b = PyTuple_GET_ITEM(h, 1), *kv = PyTuple_GET_ITEM(h, 2);
    Py_ssize_t n = PyBytes_GET_SIZE(b) / (Py_ssize_t)sizeof(Py_ssize_t), i = 0, fpos = 0;
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(b);
    if (PyTuple_GET_ITEM(h, 0) != fresh || n != PyDict_GET_SIZE(fresh))
        return 0;
    if (kv != Py_None && dict_tag(fresh) == PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(h, 3))) {
        /* fresh unchanged since the places were taken: its pairs as they were then */
        for (i = 0; i < n; i++) {
            Py_ssize_t pos = at[i];
            if (!PyDict_Next(ns, &pos, &nk, &nv) || nv != PyTuple_GET_ITEM(kv, 2 * i + 1) ||
                !same_key(nk, PyTuple_GET_ITEM(kv, 2 * i)))
                return 0;
        }
        return 1;
    }
    while (PyDict_Next(fresh, &fpos, &k, &v)) {
        /* the live entry at (or after) the place: when it is k bound to v, ns[k] is v */
        Py_ssize_t pos = i < n ? at[i] : -1;
        if (pos < 0 || !PyDict_Next(ns, &pos, &nk, &nv) || nv != v || !same_key(nk, k))
            return 0;
        i++;
    }
    return i == n;
}

/* ---- the proof after the answer ---------------------------------------------------------
 * injected_in_place() walks every injected name: O(names), on the way into every run. The
 * walk's answer depends only on ns, fresh and the session's places, so it is taken once the
 * last run's answer has gone out (pyrs_check_namespace, called by pyafter.c) and noted with
 * both dicts' versions. The next run takes the noted answer instead of walking when it is the
 * same session, ns and fresh are the same dicts and neither version moved: then neither dict
 * changed since (dict_tag), and the places did not either (only pyrs_namespace changes them,
 * and every call of it consumes the note). Anything else, e.g. an agent thread left running
 * that rebound a name meanwhile, another namespace, a reset or a new SDK, walks as before.
 * The dicts are noted by address and never dereferenced: a dict freed meanwhile and another
 * made at the same address cannot match, as a new dict takes a new version. */
static struct {
    PyObject *session; /* owned: the exact str of the run that was checked, or NULL */
    const void *ns, *fresh;
    unsigned long long ns_tag, fresh_tag;
    int in_place;
} note;

void pyrs_check_namespace(PyObject *session, PyObject *ns)
{
    Py_CLEAR(note.session);
    /* A strong reference first: the lookup may run a key's __eq__ (agent code). */
    PyObject *fresh_for = Py_XNewRef(PyDict_GetItemWithError(R.rn_dict, R.k_fresh_for));
    PyObject *fresh = fresh_for && PyTuple_CheckExact(fresh_for) && PyTuple_GET_SIZE(fresh_for) == 2
                          ? PyTuple_GET_ITEM(fresh_for, 1)
                          : NULL;
    if (fresh && PyDict_CheckExact(fresh) && PyDict_CheckExact(ns) &&
        PyUnicode_CheckExact(session) && dict_tag(ns) && dict_tag(fresh)) {
        /* No Python code runs from here to the tags: they are those of the dicts walked. */
        note.in_place = injected_in_place(ns, fresh, session);
        note.ns = ns;
        note.fresh = fresh;
        note.ns_tag = dict_tag(ns);
        note.fresh_tag = dict_tag(fresh);
        note.session = Py_NewRef(session);
    }
    PyErr_Clear();
    Py_XDECREF(fresh_for);
}

/* Do two str objects hold the same text? (Read directly: no __eq__ of a subclass runs.) */
static int same_text(PyObject *a, PyObject *b)
{
    return a == b || (PyUnicode_GET_LENGTH(a) == PyUnicode_GET_LENGTH(b) &&
                      PyUnicode_KIND(a) == PyUnicode_KIND(b) &&
                      memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b),
                             (size_t)PyUnicode_GET_LENGTH(a) * PyUnicode_KIND(a)) == 0);
}

/* injected_in_place(ns, fresh, session), from the note when it holds (see above). */
static int in_place(PyObject *ns, PyObject *fresh, PyObject *session, PyObject *noted)
{
    if (noted && note.ns == ns && note.fresh == fresh && note.ns_tag == dict_tag(ns) &&
        note.fresh_tag == dict_tag(fresh) && same_text(noted, session))
        return note.in_place;
    return injected_in_place(ns, fresh, session);
}

/* Records where fresh's names sit in ns (just updated with fresh). The usual order is fresh's
 * own (the first injection appends them in it); when it is not, a map of ns's keys to their
 * places is built. Nothing is recorded when a name is missing (the next run updates). */
static void record_places(PyObject *ns, PyObject *fresh, PyObject *session)
{
    Py_ssize_t n = PyDict_GET_SIZE(fresh), fpos = 0, npos = 0, i = 0;
    PyObject *b = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(Py_ssize_t));
    PyObject *map = NULL, *h = NULL, *kv = NULL, *k, *v, *nk, *nv;
    if (!b)
        goto done;
    Py_ssize_t *at = (Py_ssize_t *)PyBytes_AS_STRING(b);
    while (PyDict_Next(fresh, &fpos, &k, &v)) {
        int found = 0;
        while (!map && !found && PyDict_Next(ns, &npos, &nk, &nv))
            found = same_key(nk, k);
        if (found) {
            at[i++] = npos - 1; /* the entry PyDict_Next just gave */
            continue;
        }
        if (!map) { /* not in fresh's order: ns's key -> place */
            Py_ssize_t p = 0;
            if (!(map = PyDict_New()))
                goto done;
            while (PyDict_Next(ns, &p, &nk, &nv)) {
                if (!PyUnicode_CheckExact(nk))
                    continue; /* (a key of another type could run code when hashed) */
                PyObject *where = PyLong_FromSsize_t(p - 1);
                if (!where || PyDict_SetItem(map, nk, where) < 0) {
                    Py_XDECREF(where);
                    goto done;
                }
                Py_DECREF(where);
            }
        }
        PyObject *where = PyUnicode_CheckExact(k) ? PyDict_GetItemWithError(map, k) : NULL;
        if (!where)
            goto done;
        at[i++] = PyLong_AsSsize_t(where);
    }
    if (i != n)
        goto done;
    if (PyDict_GET_SIZE(places) >= PYRS_MAX_PLACES)
        PyDict_Clear(places);
    unsigned long long tag = dict_tag(fresh);
    if (tag && (kv = PyTuple_New(2 * n))) { /* fresh's pairs, for while its tag holds */
        fpos = 0;
        for (i = 0; i < n && PyDict_Next(fresh, &fpos, &k, &v); i++) {
            PyTuple_SET_ITEM(kv, 2 * i, Py_NewRef(k));
            PyTuple_SET_ITEM(kv, 2 * i + 1, Py_NewRef(v));
        }
        if (i != n)
            Py_CLEAR(kv);
    }
    PyObject *t = PyLong_FromUnsignedLongLong(tag);
    if (t && (h = PyTuple_Pack(4, fresh, b, kv ? kv : Py_None, t)))
        PyDict_SetItem(places, session, h);
    Py_XDECREF(t);
done:
    if (!h && PyDict_DelItem(places, session) < 0)
        PyErr_Clear();
    PyErr_Clear();
    Py_XDECREF(h);
    Py_XDECREF(kv);
    Py_XDECREF(map);
    Py_XDECREF(b);
}

/* runner._sessions is in least-recently-used order, for its safety valve (runner.MAX_SESSIONS:
 * the oldest namespaces go first once there are too many). The session moved to its end last
 * is noted with the dict's version then: while the version holds, no namespace was added,
 * removed or replaced since, so the same session is still at the end and the move is skipped.
 * Only agent code calling move_to_end itself could have reordered the dict meanwhile; that
 * changes no more than which of its own namespaces the valve would drop first. */
static struct {
    PyObject *session; /* owned exact str, or NULL */
    unsigned long long tag;
} moved;

static int at_end(PyObject *session)
{
    PyObject *m = moved.session;
    return m && moved.tag && moved.tag == dict_tag(R.sessions) && PyUnicode_CheckExact(session) &&
           same_text(m, session);
}

static void moved_to_end(PyObject *session)
{
    Py_XSETREF(moved.session, PyUnicode_CheckExact(session) ? Py_NewRef(session) : NULL);
    moved.tag = dict_tag(R.sessions);
}

int pyrs_drop_result(PyObject *ns)
{
    /* a lookup first: a KeyError costs more than the run */
    PyObject *res = Py_XNewRef(PyDict_GetItemWithError(ns, R.k_result));
    if (!res)
        return PyErr_Occurred() ? -1 : 0;
    int rc = 0;
    if (PyDict_DelItem(ns, R.k_result) < 0) {
        rc = PyErr_ExceptionMatches(PyExc_KeyError) ? 0 : -1; /* else gone meanwhile (an __eq__) */
        if (rc == 0)
            PyErr_Clear();
    }
    int last = Py_REFCNT(res) == 1;
    Py_DECREF(res);
    return rc < 0 ? -1 : last;
}

/* runner._namespace's usual case: the namespace exists, is not reset, and already has the
 * names of this SDK snapshot injected: move it to the end of the LRU order, put back the
 * injected names (only when one is not in place), drop `result`. Otherwise runner._namespace
 * itself. */
PyObject *pyrs_namespace(PyObject *session, int reset, PyObject *snap)
{
    /* Strong references before any lookup: a key's __eq__ (agent code can put any key in
     * these dicts) may drop the namespace or the tuple from them while we look. */
    PyObject *fresh_for = Py_XNewRef(PyDict_GetItemWithError(R.rn_dict, R.k_fresh_for));
    PyObject *injected = Py_XNewRef(PyDict_GetItemWithError(R.rn_dict, R.k_injected));
    PyObject *ns = NULL, *fresh = NULL, *inj = NULL, *out = NULL;
    PyObject *noted = note.session; /* owned here: the note holds for this call only */
    note.session = NULL;
    if (PyErr_Occurred())
        goto out;
    if (!reset && fresh_for && PyTuple_CheckExact(fresh_for) && PyTuple_GET_SIZE(fresh_for) == 2 &&
        PyTuple_GET_ITEM(fresh_for, 0) == snap && injected && PyDict_CheckExact(injected)) {
        fresh = PyTuple_GET_ITEM(fresh_for, 1); /* held by fresh_for */
        ns = Py_XNewRef(PyDict_GetItemWithError(R.sessions, session));
        inj = ns ? PyDict_GetItemWithError(injected, session) : NULL; /* compared only */
        if (PyErr_Occurred())
            goto out;
    }
    if (!ns || !PyDict_CheckExact(ns) || !PyDict_CheckExact(fresh) || inj != fresh) {
        out = PyObject_CallFunctionObjArgs(R.namespace, session, reset ? Py_True : Py_False, snap,
                                           NULL);
        /* _namespace used this snapshot's fresh (the one _fresh_for now holds) */
        Py_XSETREF(fresh_for,
                   out ? Py_XNewRef(PyDict_GetItemWithError(R.rn_dict, R.k_fresh_for)) : NULL);
        if (out && PyDict_CheckExact(out) && fresh_for && PyTuple_CheckExact(fresh_for) &&
            PyTuple_GET_SIZE(fresh_for) == 2 && PyDict_CheckExact(PyTuple_GET_ITEM(fresh_for, 1)))
            record_places(out, PyTuple_GET_ITEM(fresh_for, 1), session);
        if (out)
            PyErr_Clear();
        goto out;
    }
    PyObject *r = at_end(session) ? Py_NewRef(Py_None)
                                  : PyObject_CallMethodOneArg(R.sessions, R.k_move_to_end, session);
    if (r)
        moved_to_end(session);
    int update = r && !in_place(ns, fresh, session, noted);
    if (!r || (update && PyDict_Update(ns, fresh) < 0)) {
        Py_XDECREF(r);
        goto out;
    }
    Py_DECREF(r);
    if (update)
        record_places(ns, fresh, session);
    /* Usually gone already: a plain run's `result` is dropped after its answer (pyafter.c). */
    int dropped = pyrs_drop_result(ns);
    if (dropped == 1) {
        /* The last run's value freed here: its __del__ (agent code) wrote to the worker's own
         * fds 1/2, and this run's fd capture, which starts in a moment, would take it from
         * the pipe before the drain thread logs it. It is the log's now. */
        fflush(stdout);
        fdcap_settle();
    }
    if (dropped >= 0)
        out = Py_NewRef(ns);
out:
    Py_XDECREF(noted);
    Py_XDECREF(ns);
    Py_XDECREF(fresh_for);
    Py_XDECREF(injected);
    return out;
}

/* ---- the run state, reused --------------------------------------------------------------
 * A plain run's RunState comes back after the answer (pyrs_state_done): its call records are
 * dropped there (release(): they point back at it) and it is kept as the spare. The next run
 * takes the spare instead of a new one when nothing can tell the two apart: this file holds
 * the only reference (a Pending, a _Call, agent code that took it would hold one), it has no
 * weak reference, its class still resolves every slot to itself (intact()), and its three
 * containers are exact, empty and held by it alone. Its slots are then set to what a new
 * RunState(run_id) holds. Anything else: a new one, as before; the spare is dropped. */
static PyObject *spare_state; /* owned, or NULL */

static PyObject **slot_at(PyObject *st, int i)
{
    return (PyObject **)((char *)st + R.slot[i]);
}

static int sole_empty(PyObject *o, PyTypeObject *t)
{
    return o && Py_IS_TYPE(o, t) && Py_REFCNT(o) == 1 &&
           (t == &PyList_Type ? PyList_GET_SIZE(o) : PyDict_GET_SIZE(o)) == 0;
}

static int reusable(PyObject *st)
{
    PyTypeObject *t = Py_TYPE(st);
    return Py_REFCNT(st) == 1 && intact(st, 0) && t->tp_weaklistoffset > 0 &&
           !*(PyObject **)((char *)st + t->tp_weaklistoffset) &&
           sole_empty(*slot_at(st, PYRS_MADE), &PyList_Type) &&
           sole_empty(*slot_at(st, PYRS_MUTATIONS), &PyList_Type) &&
           sole_empty(*slot_at(st, PYRS_WRITES), &PyDict_Type);
}

/* release() for one of the state's containers (slot i, of type t): emptied in place when the
 * state alone holds it (nobody can see the difference), else replaced by a new one, as
 * release() does. */
static void release_slot(PyObject *st, int i, PyTypeObject *t)
{
    PyObject *c = intact(st, i) ? *slot_at(st, i) : NULL; /* borrowed */
    if (c && Py_IS_TYPE(c, t) && Py_REFCNT(c) == 1) {
        if (t == &PyDict_Type) {
            PyDict_Clear(c);
            return;
        }
        if (PyList_SetSlice(c, 0, PyList_GET_SIZE(c), NULL) == 0)
            return;
    }
    PyObject *fresh = t == &PyList_Type ? PyList_New(0) : PyDict_New();
    if (fresh)
        pyrs_set(st, i, fresh);
    Py_XDECREF(fresh);
    PyErr_Clear();
}

void pyrs_state_done(PyObject *st)
{
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    release_slot(st, PYRS_MADE, &PyList_Type);
    release_slot(st, PYRS_WRITES, &PyDict_Type);
    Py_XSETREF(spare_state, st);
    PyErr_Restore(et, ev, etb);
}

/* RunState(run_id) for a str run_id, its slots set as __init__ sets them: the spare reset, or
 * a new instance. */
PyObject *pyrs_state(PyObject *run_id)
{
    PyObject *st = spare_state, *v[PYRS_NSLOTS] = {NULL}; /* new refs */
    spare_state = NULL;
    int reuse = st && reusable(st);
    if (!reuse) {
        Py_XDECREF(st);
        PyTypeObject *t = (PyTypeObject *)R.runstate;
        if (!(st = t->tp_alloc(t, 0)))
            return NULL;
        if (!intact(st, 0)) { /* the class was changed: its own __init__ */
            Py_DECREF(st);
            return PyObject_CallOneArg(R.runstate, run_id);
        }
        v[PYRS_MADE] = PyList_New(0);
        v[PYRS_MUTATIONS] = PyList_New(0);
        v[PYRS_WRITES] = PyDict_New();
    } else { /* its own empty containers, as reusable() found them */
        v[PYRS_MADE] = Py_NewRef(*slot_at(st, PYRS_MADE));
        v[PYRS_MUTATIONS] = Py_NewRef(*slot_at(st, PYRS_MUTATIONS));
        v[PYRS_WRITES] = Py_NewRef(*slot_at(st, PYRS_WRITES));
    }
    v[PYRS_RUN_ID] = Py_NewRef(run_id);
    v[PYRS_RUN_ID_JSON] = pyf_scalar_json(run_id, 0);
    v[PYRS_INTERRUPTIBLE] = Py_NewRef(Py_False);
    v[PYRS_EARLY] = Py_NewRef(Py_None);
    v[PYRS_FINISHED] = Py_NewRef(Py_False);
    v[PYRS_INTERRUPTED] = Py_NewRef(Py_False);
    int ok = 1;
    for (int i = 0; i < PYRS_NSLOTS; i++) {
        ok = ok && v[i];
        Py_XSETREF(*slot_at(st, i), v[i]); /* the reference moves into the slot */
    }
    if (!ok) {
        Py_DECREF(st);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "run_id is not valid text");
        return NULL;
    }
    return st;
}

/* Is d (a stream's instance dict) already what a reset gives: exactly name -> name and
 * limit -> limit, with this file's own key objects (compared by address: no key's __eq__ runs)?
 * Then a run that printed nothing left its stream as a reset would, and it is taken as it is. */
static int pristine(PyObject *d, int i, Py_ssize_t limit)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    int seen = 0;
    if (PyDict_GET_SIZE(d) != 2)
        return 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (k == R.k_name && v == R.k_names[i])
            seen |= 1;
        else if (k == R.k_limit && PyLong_CheckExact(v) && PyLong_AsSsize_t(v) == limit)
            seen |= 2;
        else {
            PyErr_Clear(); /* an exact int beyond Py_ssize_t: not equal, and no error kept */
            return 0;
        }
    }
    return seen == 3;
}

/* capture._stream(i, name, limit): the last run's stream, reset, when nothing but _last holds
 * it (no other reference, no weak reference, its class not swapped); else Python's. */
static PyObject *stream(int i, Py_ssize_t limit)
{
    PyObject *s = PyList_GET_SIZE(R.last) == 2 ? PyList_GET_ITEM(R.last, i) : NULL; /* borrowed */
    PyTypeObject *t = s ? Py_TYPE(s) : NULL;
    if (s && t == (PyTypeObject *)R.capped && Py_REFCNT(s) == 1 && t->tp_weaklistoffset > 0 &&
        !*(PyObject **)((char *)s + t->tp_weaklistoffset)) {
        /* Held across the clear: a value's __del__ may empty _last (and free s with it). */
        s = Py_NewRef(s);
        Py_ssize_t cap = limit < 0 ? 0 : limit;
        PyObject *d = PyObject_GenericGetDict(s, NULL), *lim = NULL;
        int rc = d && PyDict_CheckExact(d) ? 0 : -1;
        if (rc == 0 && !pristine(d, i, cap)) {
            PyDict_Clear(d);
            rc = !(lim = PyLong_FromSsize_t(cap)) ||
                         PyDict_SetItem(d, R.k_name, R.k_names[i]) < 0 ||
                         PyDict_SetItem(d, R.k_limit, lim) < 0
                     ? -1
                     : 0;
        }
        Py_XDECREF(d);
        Py_XDECREF(lim);
        if (rc < 0)
            Py_CLEAR(s);
        return s;
    }
    return PyObject_CallFunction(R.stream, "iOn", i, R.k_names[i], limit);
}

PyObject *pyrs_streams(Py_ssize_t limit)
{
    PyObject *out = stream(0, limit), *err = out ? stream(1, limit) : NULL;
    PyObject *pair = err ? PyTuple_Pack(2, out, err) : NULL;
    Py_XDECREF(out);
    Py_XDECREF(err);
    return pair;
}

/* Nothing was printed to the stream and no write was counted: getattr(s, "_parts") is None
 * and getattr(s, "_cut") == 0. A CappedStream whose instance dict holds neither and whose
 * class still has the defaults is read here; anything else through getattr. */
int pyrs_silent(PyObject *s)
{
    PyTypeObject *t = Py_TYPE(s);
    PyObject *d = t == (PyTypeObject *)R.capped && t->tp_getattro == PyObject_GenericGetAttr
                      ? PyObject_GenericGetDict(s, NULL)
                      : NULL; /* new ref */
    PyObject *cp = d ? _PyType_Lookup(t, R.k_parts) : NULL,
             *cc = d ? _PyType_Lookup(t, R.k_cut) : NULL;
    if (d && PyDict_CheckExact(d) && cp == Py_None && cc && PyLong_CheckExact(cc) &&
        PyLong_AsLong(cc) == 0 && !PyDict_GetItemWithError(d, R.k_parts) &&
        !PyDict_GetItemWithError(d, R.k_cut) && !PyErr_Occurred()) {
        Py_DECREF(d);
        return 1;
    }
    Py_XDECREF(d);
    PyErr_Clear();
    PyObject *parts = PyObject_GetAttr(s, R.k_parts), *cut = PyObject_GetAttr(s, R.k_cut);
    int silent = parts == Py_None && cut && PyLong_CheckExact(cut) && PyLong_AsLong(cut) == 0;
    Py_XDECREF(parts);
    Py_XDECREF(cut);
    PyErr_Clear();
    return silent;
}

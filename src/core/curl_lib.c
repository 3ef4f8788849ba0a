/* curl_lib — see curl_lib.h. Each libcurl function codemcp calls is defined here under its own
 * name and forwards to libcurl's, looked up once by dlopen()/dlsym() on the first call of any
 * of them (pthread_once). The binary does not export these definitions (no -rdynamic), so
 * libcurl's calls to itself never come back here.
 *
 * The variadic setters take exactly one argument whose type the option's number range says
 * (CURLOPTTYPE_*: long, pointer, function pointer, curl_off_t, blob pointer); it is read as that
 * type and passed on, as libcurl itself reads it. getinfo's argument is always a pointer.
 *
 * When libcurl cannot be loaded every function fails as libcurl does when it cannot start
 * (NULL handles, CURLE_FAILED_INIT), and curl_easy_strerror() says why, so each caller's
 * existing error path reports it. */
#define CURL_DISABLE_TYPECHECK /* this file defines the functions the checks wrap */
#include "curl_lib.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt

/* The soname Debian's libcurl4 (OpenSSL flavour) and its -dev link against. */
#define CURL_LIB_SONAME "libcurl.so.4"

/* Every function forwarded: X(name, return type, parameter list). One place for the table. */
#define CURL_LIB_FUNCS(X)                                                                          \
    X(curl_global_init, CURLcode, (long))                                                          \
    X(curl_global_cleanup, void, (void))                                                           \
    X(curl_easy_init, CURL *, (void))                                                              \
    X(curl_easy_setopt, CURLcode, (CURL *, CURLoption, ...))                                       \
    X(curl_easy_perform, CURLcode, (CURL *))                                                       \
    X(curl_easy_getinfo, CURLcode, (CURL *, CURLINFO, ...))                                        \
    X(curl_easy_reset, void, (CURL *))                                                             \
    X(curl_easy_cleanup, void, (CURL *))                                                           \
    X(curl_easy_strerror, const char *, (CURLcode))                                                \
    X(curl_slist_append, struct curl_slist *, (struct curl_slist *, const char *))                 \
    X(curl_slist_free_all, void, (struct curl_slist *))                                            \
    X(curl_multi_init, CURLM *, (void))                                                            \
    X(curl_multi_setopt, CURLMcode, (CURLM *, CURLMoption, ...))                                   \
    X(curl_multi_add_handle, CURLMcode, (CURLM *, CURL *))                                         \
    X(curl_multi_remove_handle, CURLMcode, (CURLM *, CURL *))                                      \
    X(curl_multi_socket_action, CURLMcode, (CURLM *, curl_socket_t, int, int *))                   \
    X(curl_multi_info_read, CURLMsg *, (CURLM *, int *))                                           \
    X(curl_multi_strerror, const char *, (CURLMcode))                                              \
    X(curl_multi_cleanup, CURLMcode, (CURLM *))

#define CURL_LIB_FIELD(name, ret, params) ret(*name) params;
static struct {
    CURL_LIB_FUNCS(CURL_LIB_FIELD)
} fn;
#undef CURL_LIB_FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[300];

static void load(void)
{
    void *h = dlopen(CURL_LIB_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof(why), "libcurl could not be loaded (%s): install libcurl4", dlerror());
        return;
    }
#define CURL_LIB_SYM(name, ret, params)                                                            \
    if (!(*(void **)&fn.name = dlsym(h, #name))) {                                                 \
        snprintf(why, sizeof(why), "libcurl (%s) has no %s", CURL_LIB_SONAME, #name);              \
        return;                                                                                    \
    }
    CURL_LIB_FUNCS(CURL_LIB_SYM)
#undef CURL_LIB_SYM
    loaded = 1;
}

static int ready(void)
{
    pthread_once(&once, load);
    return loaded;
}

int curl_lib_load(char *err, size_t errlen)
{
    if (ready())
        return 0;
    snprintf(err, errlen, "%s", why);
    return -1;
}

CURLcode curl_global_init(long flags)
{
    return ready() ? fn.curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
    if (ready())
        fn.curl_global_cleanup();
}

CURL *curl_easy_init(void)
{
    return ready() ? fn.curl_easy_init() : NULL;
}

/* rc = setter(handle, opt, <the one argument in ap, read as opt's CURLOPTTYPE_* range says>):
 * easy and multi options share the ranges. */
#define CURL_LIB_FORWARD_OPT(rc, setter, handle, opt, ap)                                          \
    do {                                                                                           \
        if ((opt) < CURLOPTTYPE_OBJECTPOINT)                                                       \
            rc = setter(handle, opt, va_arg(ap, long));                                            \
        else if ((opt) < CURLOPTTYPE_FUNCTIONPOINT)                                                \
            rc = setter(handle, opt, va_arg(ap, void *));                                          \
        else if ((opt) < CURLOPTTYPE_OFF_T)                                                        \
            rc = setter(handle, opt, va_arg(ap, void (*)(void)));                                  \
        else if ((opt) < CURLOPTTYPE_BLOB)                                                         \
            rc = setter(handle, opt, va_arg(ap, curl_off_t));                                      \
        else                                                                                       \
            rc = setter(handle, opt, va_arg(ap, void *));                                          \
    } while (0)

CURLcode curl_easy_setopt(CURL *e, CURLoption opt, ...)
{
    if (!ready())
        return CURLE_FAILED_INIT;
    va_list ap;
    CURLcode rc;
    va_start(ap, opt);
    CURL_LIB_FORWARD_OPT(rc, fn.curl_easy_setopt, e, opt, ap);
    va_end(ap);
    return rc;
}

CURLcode curl_easy_perform(CURL *e)
{
    return ready() ? fn.curl_easy_perform(e) : CURLE_FAILED_INIT;
}

CURLcode curl_easy_getinfo(CURL *e, CURLINFO info, ...)
{
    if (!ready())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = fn.curl_easy_getinfo(e, info, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

void curl_easy_reset(CURL *e)
{
    if (ready())
        fn.curl_easy_reset(e);
}

void curl_easy_cleanup(CURL *e)
{
    if (ready())
        fn.curl_easy_cleanup(e);
}

const char *curl_easy_strerror(CURLcode rc)
{
    return ready() ? fn.curl_easy_strerror(rc) : why;
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
    return ready() ? fn.curl_slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
    if (ready())
        fn.curl_slist_free_all(list);
}

CURLM *curl_multi_init(void)
{
    return ready() ? fn.curl_multi_init() : NULL;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
    if (!ready())
        return CURLM_BAD_HANDLE;
    va_list ap;
    CURLMcode rc;
    va_start(ap, opt);
    CURL_LIB_FORWARD_OPT(rc, fn.curl_multi_setopt, m, opt, ap);
    va_end(ap);
    return rc;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *e)
{
    return ready() ? fn.curl_multi_add_handle(m, e) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *e)
{
    return ready() ? fn.curl_multi_remove_handle(m, e) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
    return ready() ? fn.curl_multi_socket_action(m, s, ev, running) : CURLM_BAD_HANDLE;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
    return ready() ? fn.curl_multi_info_read(m, left) : NULL;
}

const char *curl_multi_strerror(CURLMcode rc)
{
    return ready() ? fn.curl_multi_strerror(rc) : why;
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
    return ready() ? fn.curl_multi_cleanup(m) : CURLM_BAD_HANDLE;
}

/* curl_lib — libcurl, loaded the first time something needs it.
 *
 * libcurl and what it links (GnuTLS, Kerberos, LDAP, RTMP, SSH, p11-kit: some 27 libraries)
 * cost every process start ~6 ms of loading and constructors (bench/results/coldstart.md),
 * while most gateways never make an outgoing HTTP request: stdio upstreams only, no OTLP
 * collector, no OAuth, no Docker. So codemcp does not link libcurl: curl_lib.c defines the
 * libcurl functions codemcp calls, and the first call of any of them dlopen()s libcurl and
 * forwards to it from then on. Callers include <curl/curl.h> and call libcurl as usual (its
 * compile-time option type checks included); curl_lib_load() is for the places that can say
 * why libcurl is missing before they need it. Thread-safe. */
#ifndef CODEMCP_CURL_LIB_H
#define CODEMCP_CURL_LIB_H

#include <stddef.h>

/* 0 once libcurl is loaded (loading it if it was not); -1 with why in err when it cannot be. */
int curl_lib_load(char *err, size_t errlen);

#endif

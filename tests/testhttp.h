/*
 * testhttp.h: the tests' HTTP client under the names bench/sync-bench.c
 * still uses. The client is tests/lib/httpc.c; the benchmark does not link
 * testlib, so the client's sources are compiled into it from here.
 *
 * Not for tests. Remove this file once bench/meson.build links testlib_dep
 * (declared in tests/meson.build) and sync-bench.c includes "lib/httpc.h"
 * with the names below.
 */
#ifndef QUIRE_TESTHTTP_H
#define QUIRE_TESTHTTP_H

#include "lib/httpc.c"
#include "lib/test.c" /* now_s() */

#define th_resp resp
#define th_request fetch_request
#define th_resp_free resp_free
#define th_json_u64 body_u64

#endif

/*
 * searchapi.h: search over HTTP.
 *
 *	GET /api/search?q=&limit=&offset=   JSON (see search.h)
 *	GET /search?q=                      the same results as a themed page,
 *	                                    which works without JavaScript
 *
 * Each serving thread queries through its own read-only connection, opened
 * the first time the thread needs it. A token bucket per client address
 * answers 429 with Retry-After when one client asks too fast. Each
 * query's time goes into a histogram (searchapi_metrics()).
 */
#ifndef QUIRE_SEARCHAPI_H
#define QUIRE_SEARCHAPI_H

struct http_server;
struct layout_site;
struct searchapi;

/*
 * A search front for the index at db_path, rendering its page with the
 * site settings in layout (copied), allowing each address per_sec queries a
 * second with bursts of burst. The caller frees it with searchapi_free()
 * after the server has stopped.
 */
struct searchapi *searchapi_new(const char *db_path, const struct layout_site *layout,
				double per_sec, double burst);
void searchapi_free(struct searchapi *api);

/* Registers /api/search and /search on srv. 0 or -1. */
int searchapi_register(struct searchapi *api, struct http_server *srv);

/*
 * Appends the histogram of query times and the count of rate-limited
 * searches to a /metrics answer (http_server_add_metrics()'s hook; ctx is
 * the searchapi). Thread-safe.
 */
struct buf;
void searchapi_metrics(void *ctx, struct buf *out);

#endif

/*
 * dav.h: WebDAV (RFC 4918, classes 1 and 2) at /dav/, so that editors'
 * sync tools (Remotely Save, rclone, davfs2, the network drives of
 * Windows and macOS) can write the vault.
 *
 * It is a second front on the sync API (syncapi.h): the same token (as
 * HTTP Basic's password, any user name, or as a Bearer token), the same
 * per-address failure limit, the same job threads, busy paths, durable
 * writes, hash cache (an ETag is the file's quoted SHA-256, as the sync
 * API's) and loader notification. Unlike the sync API it stores dot-files
 * and dot-folders (.obsidian/, .trash/), which are never read into the
 * site, and never shows quire's data folder or temporary files.
 *
 * Dead properties are kept in <data dir>/davprops; locks live in memory
 * (a restart ends them, as their timeouts allow).
 *
 * Ownership: borrows the sync API, which must outlive it; owns its
 * properties and locks.
 */
#ifndef QUIRE_DAV_H
#define QUIRE_DAV_H

struct http_server;
struct syncapi;

struct dav;

/*
 * Opens the WebDAV front on api; url_prefix ("" or "/docs") is the
 * site's, for the hrefs it writes. NULL on failure (logged).
 */
struct dav *dav_new(struct syncapi *api, const char *url_prefix);

/* Registers /dav/ (and its body policy) on srv, before it runs. 0 or -1. */
int dav_register(struct dav *dav, struct http_server *srv);

/*
 * Without a token: /dav/ answers 404 to every method (instead of the
 * site's 405 to the methods it does not take), so that a client pointed
 * at a server without WebDAV is told so plainly. 0 or -1.
 */
int dav_register_off(struct http_server *srv);

/*
 * Frees the front. Call it after syncapi_free() (whose threads run its
 * jobs) has returned. Accepts NULL.
 */
void dav_free(struct dav *dav);

#endif

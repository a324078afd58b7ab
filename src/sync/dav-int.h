/*
 * dav-int.h: internal to the WebDAV front (src/sync/dav*.c), not for other
 * folders, which include dav.h.
 *
 * The front is cut by responsibility: dav.c (routes, requests, the jobs
 * of each method), dav-fs.c (the vault as collections: stat, list, copy,
 * remove trees), dav-xml.c (request bodies through libexpat), dav-props.c
 * (dead properties, kept in the data folder), dav-locks.c (write locks
 * and the If header) and dav-propfind.c (the multistatus answers).
 */
#ifndef QUIRE_DAV_INT_H
#define QUIRE_DAV_INT_H

#ifndef QUIRE_DAV_H
#error "include sync/dav.h before sync/dav-int.h"
#endif

#include "site/loader.h"
#include "util/buf.h"
#include "util/hash.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

struct http_deferred;
struct job;
struct syncapi;
struct upload;

#define DAV_PREFIX "/dav/"
#define DAV_MAX_BODY (1024 * 1024) /* the largest XML body taken */
#define DAV_MAX_DEPTH 32	   /* elements nested in an XML body */
#define DAV_MAX_NODES 20000	   /* elements in an XML body */
#define DAV_XML_TYPE "application/xml; charset=utf-8"

/* ---- dav-xml.c: request bodies ---- */

/* An element of a request body: namespace and local name, text, children. */
struct xnode {
	char *ns; /* "" when in no namespace */
	char *name;
	struct buf text; /* its character data (direct children's text) */
	char *lang;	 /* xml:lang, or NULL */
	struct xnode *child, *last, *next, *parent;
};

/*
 * Parses an XML body (len bytes; namespace-aware) into a tree. DOCTYPE
 * and entity declarations, bodies over DAV_MAX_BODY, nesting deeper than
 * DAV_MAX_DEPTH and more than DAV_MAX_NODES elements are refused. Returns
 * the root, which the caller frees with xnode_free(); NULL with why (a
 * static string) for anything not well-formed or refused.
 */
struct xnode *dav_xml_parse(const char *body, size_t len, const char **why);

/* Frees a tree. Accepts NULL. */
void xnode_free(struct xnode *n);

/* Whether n is the element {ns}name. */
int xnode_is(const struct xnode *n, const char *ns, const char *name);

/* The first child of n that is {ns}name, or NULL. */
struct xnode *xnode_child(const struct xnode *n, const char *ns, const char *name);

/*
 * Appends n as XML, namespace declarations included, so that it stands on
 * its own anywhere: the form in which dead properties are kept and sent.
 */
void xnode_write(struct buf *b, const struct xnode *n);

/* Appends s with &, <, > and quotes escaped. */
void dav_xml_escape(struct buf *b, const char *s, size_t len);

/* ---- dav-props.c: dead properties ---- */

struct dav_prop {
	char *path; /* the resource, vault-relative ("" the root) */
	char *ns, *name;
	char *xml; /* the whole element, as xnode_write() writes it */
};

struct dav_props;

/*
 * Opens the dead properties kept in file (missing: none). NULL on failure
 * (logged). Thread-safe afterwards; free with dav_props_free().
 */
struct dav_props *dav_props_open(const char *file);
void dav_props_free(struct dav_props *p);

/*
 * Calls fn for each property of path (under the store's lock: fn must not
 * call back into the store).
 */
void dav_props_each(struct dav_props *p, const char *path,
		    void (*fn)(const struct dav_prop *prop, void *ctx), void *ctx);

/* One change of a PROPPATCH: set (xml not NULL) or remove. */
struct dav_prop_change {
	const char *ns, *name, *xml;
};

/*
 * Applies n changes to path, all or none, and saves the store durably.
 * 0, or -1 when it could not be saved (nothing changed then).
 */
int dav_props_apply(struct dav_props *p, const char *path, const struct dav_prop_change *c,
		    size_t n);

/*
 * The properties of path and everything under it: dropped (to NULL),
 * moved to to, or copied to to. Saved durably; 0 or -1 (logged).
 */
int dav_props_move(struct dav_props *p, const char *from, const char *to);
int dav_props_copy(struct dav_props *p, const char *from, const char *to);
int dav_props_drop(struct dav_props *p, const char *path);

/* ---- dav-locks.c: write locks and the If header ---- */

#define DAV_TOKEN_SIZE 64

struct dav_lock {
	char token[DAV_TOKEN_SIZE]; /* "opaquelocktoken:<uuid>" */
	char *path;		    /* the lock's root */
	int infinite;		    /* Depth: infinity */
	int shared;
	char *owner;  /* the owner element as sent (xnode_write), or NULL */
	long timeout; /* seconds */
	time_t expires;
};

struct dav_locks;

struct dav_locks *dav_locks_new(void);
void dav_locks_free(struct dav_locks *l);

/*
 * Creates a lock on path. 0 with the lock copied into *out (its strings
 * the caller frees with dav_lock_release()); 423 when a lock conflicts.
 */
int dav_locks_add(struct dav_locks *l, const char *path, int infinite, int shared,
		  const char *owner, long timeout, struct dav_lock *out);

/*
 * Refreshes the lock token (which must cover path) to timeout. 0 with the
 * lock in *out, or -1 when there is no such lock on path.
 */
int dav_locks_refresh(struct dav_locks *l, const char *path, const char *token, long timeout,
		      struct dav_lock *out);

/* Removes every lock whose root is path or under it (the resources are gone). */
void dav_locks_drop(struct dav_locks *l, const char *path);

/* Removes the lock token covering path. 0, or -1 when there is none. */
int dav_locks_remove(struct dav_locks *l, const char *path, const char *token);

/*
 * The live locks that cover path (its own, and infinite ones above it),
 * copied into *out (n of them); free with dav_locks_list_free().
 */
size_t dav_locks_covering(struct dav_locks *l, const char *path, struct dav_lock **out);
void dav_locks_list_free(struct dav_lock *v, size_t n);
void dav_lock_release(struct dav_lock *k);

/*
 * Whether a write to path (with tree, to anything under it too) is
 * allowed for a request that submitted tokens (n of them): every lock
 * covering what is written must be among them. 0, or 423 with the path
 * that is locked in locked (may be NULL).
 */
int dav_locks_may_write(struct dav_locks *l, const char *path, int tree, char *const *tokens,
			size_t n, struct buf *locked);

/* The If header, parsed (RFC 4918 §10.4). */
struct if_cond {
	int not ;
	int etag;    /* an entity tag, else a state token */
	char *value; /* the token, or the etag with its quotes */
};

struct if_list {
	char *path; /* a tagged list's resource (vault path), NULL untagged */
	struct if_cond *conds;
	size_t n;
	int broken; /* cut off by the header's end: never holds (dav-locks.c) */
};

struct if_header {
	struct if_list *lists;
	size_t n;
	char **tokens; /* every state token it names: the tokens submitted */
	size_t ntokens;
};

/*
 * Parses an If header; tagged resources are turned into vault paths with
 * resolve(ctx, url, out) (0, or -1 when the URL is not under /dav/).
 * 0, or -1 when it does not parse (400).
 */
int dav_if_parse(const char *v, struct if_header *h,
		 int (*resolve)(void *ctx, const char *url, struct buf *out), void *ctx);
void dav_if_release(struct if_header *h);

/*
 * Evaluates h for the request on path: true (1) when some list holds.
 * etag_of(ctx, path, out) gives a resource's entity tag (quoted) or
 * returns -1 when it has none.
 */
int dav_if_eval(const struct if_header *h, struct dav_locks *l, const char *path,
		int (*etag_of)(void *ctx, const char *path, struct buf *out), void *ctx);

/* ---- dav-fs.c: the vault as collections ---- */

/* What a path is: missing, a file or a folder (a symlink or special file counts as missing). */
enum dav_kind { DAV_NONE, DAV_FILE, DAV_DIR };

struct dav_entry {
	char *path; /* vault-relative, "" the root */
	enum dav_kind kind;
	struct stat st;
};

/* Whether vault path is root or under it ("" is the root, above everything). */
int dav_path_under(const char *path, const char *root);

/* What path is, its stat in *st. */
enum dav_kind dav_fs_stat(struct syncapi *api, const char *path, struct stat *st);

/* Whether path's parent folder exists (the root's children always have one). */
int dav_fs_parent_exists(struct syncapi *api, const char *path);

/* The entity tag of a file, quoted, into out (the SHA-256, as the sync API's). 0 or -1. */
int dav_fs_etag(struct syncapi *api, const char *path, struct buf *out);

/* Reads the file at path into out. 0, or -1 with errno. */
int dav_fs_read(struct syncapi *api, const char *path, struct buf *out);

/*
 * Lists the folder path (not the hidden names: see dav_hidden()) into
 * *out, sorted by name; n entries. Free with dav_fs_list_free().
 */
size_t dav_fs_list(struct syncapi *api, const char *path, struct dav_entry **out,
		   int (*hidden)(void *ctx, const char *path), void *ctx);
/* The same for the hidden test of the WebDAV front. */
int dav_fs_copy(struct syncapi *api, const char *from, const char *to, int infinite,
		int (*hidden)(void *ctx, const char *path), void *ctx);
void dav_fs_list_free(struct dav_entry *v, size_t n);

/* Makes the folder path, durably. 0, or -1 with errno. */
int dav_fs_mkdir(struct syncapi *api, const char *path);

/* Removes path and all under it, durably. 0, or -1 with errno (some may be gone). */
int dav_fs_remove(struct syncapi *api, const char *path);

/*
 * dav_fs_copy copies from to to (a file, or a folder with everything
 * under it but hidden names when infinite, else the folder alone), every
 * file durably. 0, or -1 with errno.
 */

/* Renames from to to (which must not exist), durably. 0, or -1 with errno. */
int dav_fs_rename(struct syncapi *api, const char *from, const char *to);

/* ---- dav.c ---- */

struct dav {
	struct syncapi *api; /* borrowed */
	char *data_rel;	     /* the data folder relative to the vault, or NULL when outside */
	char *base;	     /* the URL prefix and "/dav" */
	struct dav_props *props;
	struct dav_locks *locks;
};

/* Whether path is quire's own (the data folder, temporary files): never reachable or listed. */
int dav_hidden(void *dav, const char *path);

/*
 * A URL (absolute, or a path with the URL prefix) of a resource under
 * /dav/ as a checked vault path into out: 0, or -1 when it is not one.
 */
int dav_resolve_url(void *dav, const char *url, struct buf *out);

/* A request, as the methods' jobs need it (copied off the loop). */
struct dav_req {
	struct dav *dav;
	struct http_deferred *d;
	int method; /* enum http_method */
	char *path; /* checked vault path; "" the root */
	int slash;  /* the URL ended with '/' */
	char *dest; /* COPY, MOVE: the Destination's vault path */
	int depth;  /* 0, 1, -1 for infinity */
	int overwrite;
	char *if_hdr, *if_match, *if_none_match, *lock_token, *timeout; /* or NULL */
	struct buf body;             /* in memory (an XML body always is by dav_run()) */
	struct upload *up;           /* or spooled (a PUT's large body), else NULL */
	const char *method_name;     /* static, for the log */
	struct change_origin origin; /* the client and when its request came */
};

/* Whether a WebDAV method changes the vault or its state (a refusal is logged). */
int dav_method_writes(int method);

/* ---- dav-methods.c ---- */

/* The job of a WebDAV request on the sync API's pool (struct job's run): works and answers. */
void dav_run(struct syncapi *api, struct job *j);

/* ---- dav-propfind.c: answers ---- */

/*
 * A PROPFIND's request: allprop (with include), propname, or the listed
 * properties.
 */
enum dav_find { FIND_ALL, FIND_NAMES, FIND_PROPS };

struct dav_propfind {
	enum dav_find mode;
	struct xnode *props; /* FIND_PROPS: the <prop> element (borrowed) */
};

/*
 * Answers d with the multistatus for find of e and, with depth 1, its
 * members, with depth -1 (infinity) everything under it, streamed in
 * pieces as the folders are read.
 */
void dav_propfind_answer(struct dav *dav, struct http_deferred *d, const struct dav_propfind *find,
			 const struct dav_entry *e, int depth);

/*
 * Appends the href of vault path (collection: a trailing '/') to b,
 * percent-encoded, under /dav/ and the URL prefix.
 */
void dav_href(const struct dav *dav, struct buf *b, const char *path, int collection);

/* The media type of a file, from its extension (application/octet-stream when unknown). */
const char *dav_content_type(const char *path);

/* Appends a <D:lockdiscovery> holding the locks (n) to b. */
void dav_write_lockdiscovery(const struct dav *dav, struct buf *b, const struct dav_lock *v,
			     size_t n);

#endif

/*
 * hosts.h: custom domains. Notes that claim routes on other hosts, the
 * pages those hosts serve, and how a request's Host picks them.
 *
 * A note claims routes with frontmatter:
 *
 *	route: docs.example.com/intro
 *	routes: [example.com/, docs.example.com/guide/intro, /extra/path]
 *
 * A route with a host part puts the note on that host at that path; one
 * without (it starts with '/') is an extra path on the main site. The main
 * site is base_url's host and every host that no route or quire.yml names.
 * quire.yml may give hosts settings: `hosts: {docs.example.com: {open:
 * true, title: Docs, base_url: https://docs.example.com}}`.
 *
 * What a host H serves, in this order: its routes (each pre-rendered for
 * H when its note changes); its own /sitemap.xml, /robots.txt, /rss.xml,
 * /atom.xml, /_quire/tree.json; the theme's assets and the published
 * attachments (the same on every host); then, when H is open, every other
 * page of the main site at its usual path, rendered for H on the first
 * request and kept until the snapshot is replaced; else H's 404 page. A
 * request for www.H, when no route names www.H, is a 301 to H.
 *
 * Rendering for H is a rewrite of the main site's finished page, not a
 * second render: every root-relative URL in it (href, src, action, the
 * explorer's data-tree, JSON "url" values) and every absolute URL on the
 * main site is looked up. A path that H serves stays on H (root-relative,
 * at H's route for a routed note); any other becomes an absolute URL on the
 * main site. The site title in the head, header and footer becomes H's
 * title. So a page for H costs a scan and a gzip, depends only on its main
 * page and on H's table of routes, and a note without a route on H is never
 * rendered for H at load.
 *
 * Loader side: hosts_update() runs at the end of site_apply(); it keeps the
 * routes, re-derives the routed pages whose main page or host table
 * changed, and reports route conflicts (the first claimant in path order
 * wins, as in a full load). hosts_snapshot() gives each new snapshot its
 * hosts. Serving side: hosts_find() and hosts_page().
 */
#ifndef QUIRE_HOSTS_H
#define QUIRE_HOSTS_H

#include <stddef.h>

#include "site/snapshot.h"
#include "util/buf.h"
#include "util/map.h"

struct site;
struct site_note;

/*
 * Splits a route as written in frontmatter into a host (lowercased, port
 * and trailing dots dropped; "" for the main site) and a path (starting
 * with '/', no trailing '/' except for the root). Both are malloc'd for the
 * caller. Returns 0, or -1 with *why set to a static reason.
 */
int host_route_parse(const char *spec, char **host, char **path, const char **why);

/* The loader's hosts and routes (one per site). */
struct hosts *hosts_new(void);
void hosts_free(struct hosts *hs);

/* How many strict hosts (not open: only their routes) the routes and quire.yml name. */
size_t hosts_strict(const struct hosts *hs);

/*
 * Brings routes and routed pages up to date after site_apply() changed the
 * notes in changed[] (parsed or removed ones; removed ones are still
 * allocated). Routed pages whose note's page was composed again, and every
 * routed page of a host whose routes changed, are derived again.
 */
void hosts_update(struct site *s, struct site_note *const *changed, size_t n);

/* Gives snap (built by site_snapshot) the hosts as they are now. */
void hosts_snapshot(struct site *s, struct snapshot *snap);

/* Longest host name kept from a Host header (DNS allows 253 bytes). */
#define HOST_NAME_MAX_LEN 256

/*
 * The host a request's Host header names, normalized into out: lowercase,
 * no port, no trailing dot. NULL gives "". Returns its length.
 */
size_t host_from_header(const char *header, char out[HOST_NAME_MAX_LEN]);

enum host_match {
	HOST_MAIN,     /* the main site */
	HOST_CUSTOM,   /* *h is the host to serve from */
	HOST_WWW,      /* a 301 to *h's origin (www.H where H is a host) */
};

/* Which site a normalized host name asks for in snap. */
enum host_match hosts_find(const struct snapshot *snap, const char *name,
			   struct snapshot_host **h);

/*
 * The page host h serves at a decoded path, or NULL (then h->not_found).
 * Pages rendered on request are kept in h until snap goes: concurrent
 * first requests render once. Borrowed for as long as the caller holds snap.
 */
struct page *hosts_page(const struct snapshot *snap, struct snapshot_host *h, const char *path,
			size_t len);

/*
 * Appends to out the bytes s (HTML or JSON the main site made on request:
 * search answers, the search page) rewritten for host h as its pages are:
 * links to what h serves stay on h, at their routes; others go to the main
 * site; the site title becomes h's.
 */
void hosts_rewrite(const struct snapshot *snap, const struct snapshot_host *h, const char *s,
		   size_t len, struct buf *out);

/* The main site's extra routes (routes without a host), or NULL. Borrowed. */
struct page *hosts_main_route(const struct snapshot *snap, const char *path, size_t len);

#endif

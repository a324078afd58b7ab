/*
 * sitesearch.c: the site's rows in the search index.
 *
 * site_apply() stages the rows of what it changed (sitesearch_stage());
 * they are written once the snapshot is live (site_search_flush()). The
 * index is filled in steps after a load (site_search_start(),
 * site_search_fill()).
 */
#include "search/search.h"
#include "site/derived.h"
#include "site/hosts.h"
#include "site/render.h"
#include "site/site.h"
#include "site/site-int.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/gzip.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/unicode.h"
#include "util/xalloc.h"
#include "vault/resolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Whether n's plain text is still wanted: the search index is being
 * filled (or will be) and the fill has not put n's row yet.
 */
int sitesearch_text_wanted(const struct site *s, const struct site_note *n)
{
	return s->keep_text && (!s->search_fill || strcmp(n->note.path, s->search_fill) > 0);
}

/*
 * Puts a note's row, or deletes the row of a note that left or moved (the
 * URL its row is under, n->surl, which only this file keeps). has_text
 * says whether n->md.text holds the note's text (rendered in this change,
 * or kept for the fill); a note that only moved has not: its row moves
 * with the text the index has (search_move()).
 */
static int index_note(struct site *s, struct site_note *n, int has_text)
{
	struct buf headings = BUF_INIT, tags = BUF_INIT;
	int listed = n->published && !n->removed, ret = 0;
	size_t k;

	if (listed && !has_text && n->surl && strcmp(n->surl, n->url) == 0)
		return 0; /* nothing its row holds changed */
	if (n->surl && (!listed || (has_text && strcmp(n->surl, n->url) != 0))) {
		ret = search_delete(s->search, n->surl);
		if (ret == 0) {
			free(n->surl);
			n->surl = NULL;
		}
	}
	if (listed && ret == 0) {
		for (k = 0; k < n->md.nheadings; k++) {
			buf_adds(&headings, n->md.headings[k].text);
			buf_addc(&headings, '\n');
		}
		for (k = 0; k < n->note.tags.n; k++)
			buf_addf(&tags, "%s ", n->note.tags.v[k]);
		for (k = 0; k < n->md.ntags; k++)
			buf_addf(&tags, "%s ", n->md.tags[k]);
		if (has_text) {
			ret = search_put(s->search, n->url, n->note.title, headings.ptr, tags.ptr,
					 n->md.text.ptr);
			if (ret == 0 && !n->surl)
				n->surl = xstrdup(n->url);
		} else if (!n->surl) {
			log_warn("search: no row for %s and no text to put: it is found again once "
				 "it changes", n->note.path);
		} else {
			int moved = search_move(s->search, n->surl, n->url, n->note.title,
						headings.ptr, tags.ptr);
			if (moved == 0)
				log_warn("search: the row of %s was not under %s: it is found again "
					 "once it changes", n->note.path, n->surl);
			if (moved >= 0) {
				free(n->surl);
				n->surl = moved ? xstrdup(n->url) : NULL;
			}
			ret = moved < 0 ? -1 : 0;
		}
	}
	buf_release(&headings);
	buf_release(&tags);
	return ret;
}

void sitesearch_stage(struct site *s, struct site_note *const *changed, size_t n)
{
	size_t k;
	int ok;

	if (!s->search || !n)
		return;
	ok = s->search_tx || search_begin(s->search) == 0;
	s->search_tx = ok;
	for (k = 0; ok && k < n; k++) {
		struct site_note *x = changed[k];
		int has_text = (x->rerender && !x->vanished) || sitesearch_text_wanted(s, x);
		ok = index_note(s, x, has_text) == 0;
	}
	if (!ok) {
		search_rollback(s->search);
		s->search_tx = 0;
		log_error("search index not updated; it catches up on the next change");
	}
}

int site_search_flush(struct site *s)
{
	if (!s->search || !s->search_tx)
		return 0;
	s->search_tx = 0;
	if (search_commit(s->search) < 0) {
		search_rollback(s->search);
		return log_error("search rows not written; they catch up on the next change");
	}
	return 0;
}

static int keep_url(void *ctx, const char *url)
{
	const struct page *p = map_gets(&((struct site *)ctx)->pages, url);
	return p && p->kind == PAGE_NOTE;
}

int site_search_start(struct site *s, struct search *search)
{
	size_t i;
	int ok;

	s->search = search;
	s->search_fill = xstrdup("");
	ok = search_begin(search) == 0 && search_prune(search, keep_url, s) == 0;
	/*
	 * The rows the prune kept are under the notes' URLs: a note that moves
	 * before the fill reaches it drops the row under its old one.
	 */
	for (i = 0; ok && i < s->nnotes; i++) {
		struct site_note *n = s->notes[i];
		if (n->published && !n->surl)
			n->surl = xstrdup(n->url);
	}
	if (!ok || search_commit(search) < 0) {
		search_rollback(search);
		return log_error("cannot prune the search index");
	}
	/* words first: the substring index, most of a fresh fill's work, follows */
	search_defer_substrings(search, 1);
	return 0;
}

int site_search_fill(struct site *s, size_t batch)
{
	size_t i, done = 0;
	int ok;

	/* every note is in the word index: the substring index catches up */
	if (!s->search_fill)
		return s->search ? search_fill_substrings(s->search, batch) : 1;
	/*
	 * The notes array may have changed since the last batch: continue
	 * after the last path filled, not at an index.
	 */
	ok = search_begin(s->search) == 0;
	for (i = site_note_index(s, s->search_fill); ok && i < s->nnotes && done < batch; i++) {
		struct site_note *n = s->notes[i];
		if (s->search_fill[0] && strcmp(n->note.path, s->search_fill) <= 0)
			continue;
		if (n->published)
			ok = index_note(s, n, 1) == 0;
		/* the row has a copy: the texts go as the fill passes, not all at its end */
		buf_release(&n->md.text);
		done++;
		free(s->search_fill);
		s->search_fill = xstrdup(n->note.path);
	}
	if (!ok || search_commit(s->search) < 0) {
		search_rollback(s->search);
		search_defer_substrings(s->search, 0);
		free(s->search_fill);
		s->search_fill = NULL;
		s->keep_text = 0;
		return log_error("cannot fill the search index");
	}
	if (i < s->nnotes)
		return 0;
	/* filled: the texts kept for it can go; changes from now on go to both indexes */
	search_defer_substrings(s->search, 0);
	free(s->search_fill);
	s->search_fill = NULL;
	s->keep_text = 0;
	for (i = 0; i < s->nnotes; i++)
		buf_release(&s->notes[i]->md.text);
	site_heap_trim();
	return 0;
}

int site_attach_search(struct site *s, struct search *search, int fresh)
{
	int rc;

	if (site_search_start(s, search) < 0)
		return -1;
	while ((rc = site_search_fill(s, SIZE_MAX)) == 0)
		;
	if (rc < 0)
		return -1;
	if (fresh)
		search_optimize(search);
	return 0;
}


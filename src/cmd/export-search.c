/*
 * export-search.c: the static search index of an export (not written yet).
 */
#include "cmd/export-int.h"

void export_collect_search(struct export_list *l, const struct snapshot *snap, const char *base)
{
	(void)l;
	(void)snap;
	(void)base;
}

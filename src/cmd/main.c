/*
 * main.c: the command line. Each command parses its flags and calls into
 * the library; nothing else lives here.
 */
#include "cmd/commands.h"
#include "cmd/export.h"
#include "cmd/progress.h"
#include "cmd/serve.h"
#include "markdown/markdown.h"
#include "site/site.h"
#include "site/snapshot.h"
#include "sync/synccli.h"
#include "util/diag.h"
#include "util/log.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_diags(struct diag_list *d)
{
	size_t i;

	diag_sort(d);
	for (i = 0; i < d->n; i++) {
		const struct diag *x = &d->items[i];
		if (x->line > 0)
			printf("%s:%d: %s: %s\n", x->path, x->line,
			       x->level == DIAG_ERROR ? "error" : "warning", x->msg);
		else
			printf("%s: %s: %s\n", x->path, x->level == DIAG_ERROR ? "error" : "warning",
			       x->msg);
	}
}

static void print_loaded(const struct site *s)
{
	fprintf(stderr, "loaded %zu notes in %.0f ms (%.0f notes/s)\n", s->nnotes, s->load_ms,
		s->load_ms > 0 ? (double)s->nnotes * 1000.0 / s->load_ms : 0.0);
}

static void print_summary(const struct site *s)
{
	struct site_stats st;

	site_stats(s, &st);
	printf("%zu notes, %zu attachments, %zu links (%zu broken", st.notes, st.attachments,
	       st.links + st.embeds - st.outside, st.broken);
	if (st.outside)
		printf(", %zu more point outside the vault", st.outside);
	printf("), %zu errors, %zu warnings\n", s->diags.nerrors, s->diags.nwarnings);
}

static void read_progress(void *ctx, size_t *notes, size_t *of)
{
	site_progress_read(ctx, notes, of);
}

/* site_load() with its progress shown on a terminal (progress.h). */
static struct site *load(const char *vault, struct site_options *so)
{
	struct site_progress sp = { 0 };
	struct progress *p;
	struct site *s;

	so->progress = &sp;
	p = progress_start("loading", read_progress, &sp, 0);
	s = site_load(vault, so);
	progress_stop(p);
	so->progress = NULL;
	return s;
}

static int cmd_check(int argc, char **argv)
{
	const char *vault = ".";
	int strict = 0, quiet = 0, c, failed;
	struct site_options so = { 0 };
	struct site *s;

	while ((c = getopt_long(argc, argv, "", check_options, NULL)) != -1) {
		switch (c) {
		case 'v': vault = optarg; break;
		case 's': strict = 1; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(check_usage, stdout); return 0;
		default: fputs(check_usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "quire check: unexpected argument '%s'\n%s", argv[optind], check_usage);
		return 2;
	}
	s = load(vault, &so);
	if (!s)
		return 1;
	print_loaded(s);
	if (!quiet)
		print_diags(&s->diags);
	if (site_base_url_note(s)) /* not a problem (a site on trial needs none): what is left out */
		printf("quire.yml: note: %s\n", site_base_url_note(s));
	print_summary(s);
	failed = s->diags.nerrors > 0 || (strict && s->diags.nwarnings > 0);
	site_free(s);
	return failed ? 1 : 0;
}

static int cmd_export(int argc, char **argv)
{
	const char *vault = ".", *out = NULL;
	struct site_options so = { .base_url = NULL, .search = 1 }; /* the search box: the static index answers it */
	struct export_options eo = { 0, NULL, "" };
	struct export_stats st;
	struct snapshot *snap;
	struct site *s;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", export_options, NULL)) != -1) {
		switch (c) {
		case 'v': vault = optarg; break;
		case 'o': out = optarg; break;
		case 'i': out = optarg, eo.incremental = 1, eo.log = stdout; break;
		case 'b': so.base_url = optarg; break;
		case 'h': fputs(export_usage, stdout); return 0;
		default: fputs(export_usage, stderr); return 2;
		}
	}
	if (!out || optind < argc) {
		fprintf(stderr, "quire export: %s\n%s",
			out ? "unexpected argument" : "--out DIR is required", export_usage);
		return 2;
	}
	s = load(vault, &so);
	if (!s)
		return 1;
	print_loaded(s);
	snap = site_snapshot(s, NULL);
	if (s->diags.nerrors || s->diags.nwarnings)
		fprintf(stderr, "%zu errors, %zu warnings: run quire check --vault %s\n",
			s->diags.nerrors, s->diags.nwarnings, vault);
	if (site_base_url_note(s))
		fprintf(stderr, "quire.yml: note: %s\n", site_base_url_note(s));
	eo.prefix = s->cfg.url_prefix;
	ret = export_site(snap, out, &eo, &st);
	if (ret == 0)
		fprintf(stderr, "exported %zu pages and %zu attachments to %s: %zu files written "
			"(%.1f MB), %zu unchanged, %zu removed\n",
			snap->nnotes, snap->nattachments, out, st.files, (double)st.bytes / 1e6,
			st.unchanged, st.removed);
	snapshot_unref(snap);
	site_free(s);
	return ret < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	char *help[4] = { NULL, NULL, "--help", NULL };
	const char *cmd;

	if (argc < 2) {
		commands_usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "help") == 0 && argc == 3) {
		/* quire help CMD is quire CMD --help: one text, one path */
		if (!command_find(argv[2])) {
			fprintf(stderr, "quire: no command '%s'\n", argv[2]);
			commands_usage(stderr);
			return 2;
		}
		help[0] = argv[0];
		help[1] = argv[2];
		argv = help;
		cmd = argv[1];
	} else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
		   strcmp(cmd, "help") == 0) {
		commands_usage(stdout);
		return argc == 2 ? 0 : 2;
	}
	if (strcmp(cmd, "--version") == 0) {
		commands_version(stdout);
		return 0;
	}
	md_global_init();
	if (strcmp(cmd, "serve") == 0)
		return serve_main(argc - 1, argv + 1);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(cmd, "export") == 0)
		return cmd_export(argc - 1, argv + 1);
	if (strcmp(cmd, "sync") == 0)
		return sync_main(argc - 1, argv + 1);
	fprintf(stderr, "quire: unknown command '%s'\n", cmd);
	commands_usage(stderr);
	return 2;
}

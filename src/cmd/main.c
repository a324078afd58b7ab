/*
 * main.c: the command line. Each command parses its flags and calls into
 * the library; nothing else lives here.
 */
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

static const char usage[] =
	"usage: quire COMMAND [options]\n"
	"\n"
	"Publishes a folder of Markdown notes (an Obsidian vault) as a website.\n"
	"\n"
	"commands:\n"
	"  serve   render the vault and serve it over HTTP\n"
	"  check   lint the vault: broken links and embeds, bad frontmatter, ...\n"
	"  export  write the rendered site as static files\n"
	"  sync    sync a vault with a running server, both ways, through its sync API\n"
	"\n"
	"quire COMMAND --help shows a command's options; quire --version its version.\n";

static const char check_usage[] =
	"usage: quire check [--vault DIR] [--strict]\n"
	"\n"
	"Loads the vault and prints one line per problem, path:line: level: message,\n"
	"then a summary. Exits 1 when there are errors (with --strict, warnings too).\n"
	"\n"
	"  --vault DIR   the vault (default: the current folder)\n"
	"  --strict      treat warnings as errors\n"
	"  --quiet       print only the summary\n";

static const char export_usage[] =
	"usage: quire export [--vault DIR] (--out DIR | --incremental DIR) [--base-url URL]\n"
	"\n"
	"Writes everything the server serves as it would send it: <url>.html or\n"
	"<url>/index.html, a .gz beside each, published attachments, theme assets,\n"
	"feeds, sitemaps, the explorer's data, redirects (HTML pages, redirects.map\n"
	"for nginx, _redirects), the static search index under _quire/search/, and\n"
	"each custom domain under _hosts/<name>/. DIR/.quire-export lists what was\n"
	"written; files of the last export that are gone are removed.\n"
	"\n"
	"  --vault DIR        the vault (default: the current folder)\n"
	"  --out DIR          where to write (created if missing)\n"
	"  --incremental DIR  write only the files whose bytes changed since the\n"
	"                     export in DIR, and print each file written or removed\n"
	"  --base-url URL     overrides base_url of quire.yml\n";

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
	static const struct option opts[] = {
		{ "vault", required_argument, NULL, 'v' },
		{ "strict", no_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *vault = ".";
	int strict = 0, quiet = 0, c, failed;
	struct site_options so = { 0 };
	struct site *s;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
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
	print_summary(s);
	failed = s->diags.nerrors > 0 || (strict && s->diags.nwarnings > 0);
	site_free(s);
	return failed ? 1 : 0;
}

static int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vault", required_argument, NULL, 'v' },
		{ "out", required_argument, NULL, 'o' },
		{ "incremental", required_argument, NULL, 'i' },
		{ "base-url", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *vault = ".", *out = NULL;
	struct site_options so = { .base_url = NULL, .search = 1 }; /* the search box: the static index answers it */
	struct export_options eo = { 0, NULL, "" };
	struct export_stats st;
	struct snapshot *snap;
	struct site *s;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
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
	const char *cmd;

	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("quire %s\n", QUIRE_VERSION);
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
	fprintf(stderr, "quire: unknown command '%s'\n%s", cmd, usage);
	return 2;
}

/*
 * commands.c: the table of commands, `quire --help` and `quire --version`.
 *
 * Each command's text lives beside its options table: serve's in serve.c,
 * sync's in sync/synccli.c, check's and export's (whose code is main.c's)
 * here. The table only points at them, so that `--help`, `quire help`,
 * the list of commands and, at build time, the man pages and completions
 * all read the same bytes (commands.h).
 *
 * --version names each library as linked, from its own version function
 * where it has one (what runs, which a shared library upgraded under the
 * binary may change), else from its header at build time (libdeflate,
 * jemalloc) or pkg-config (gumbo, which has neither: build-info.h).
 */
#include "cmd/commands.h"
#include "cmd/build-info.h"
#include "cmd/serve.h"
#include "sync/synccli.h"

#include <cmark-gfm.h>
#include <event2/event.h>
#include <expat.h>
#include <git2/common.h>
#include <libdeflate.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>
#include <yaml.h>
#include <zlib.h>

const char check_usage[] =
	"usage: quire check [--vault DIR] [--strict] [--quiet]\n"
	"\n"
	"Loads the vault and prints one line per problem, path:line: level: message,\n"
	"then a summary. Exits 1 when there are errors (with --strict, warnings too).\n"
	"\n"
	"  --vault DIR   the vault (default: the current folder)\n"
	"  --strict      treat warnings as errors\n"
	"  --quiet       print only the summary\n"
	"\n"
	"Exit status: 0 no errors (with --strict, no warnings either); 1 errors, or the\n"
	"vault could not be read; 2 usage.\n";

const struct option check_options[] = {
	{ "vault", required_argument, NULL, 'v' },
	{ "strict", no_argument, NULL, 's' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const char export_usage[] =
	"usage: quire export [--vault DIR] (--out DIR | --incremental DIR) [--base-url URL]\n"
	"\n"
	"Writes everything the server serves as it would send it: <url>.html or\n"
	"<url>/index.html, a .gz beside each, published attachments, theme assets,\n"
	"feeds, sitemaps, the explorer's data, redirects (HTML pages, redirects.map\n"
	"for nginx, _redirects), the static search index under _quire/search/, and\n"
	"each custom domain under _hosts/<name>/, with hosts.map and\n"
	"redirects-hosts.map for one nginx server that serves them all\n"
	"(deploy/nginx-export.conf). DIR/.quire-export lists what was written; files\n"
	"of the last export that are gone are removed.\n"
	"\n"
	"  --vault DIR        the vault (default: the current folder)\n"
	"  --out DIR          where to write (created if missing)\n"
	"  --incremental DIR  write only the files whose bytes changed since the\n"
	"                     export in DIR, and print each file written or removed\n"
	"  --base-url URL     overrides base_url of quire.yml\n"
	"\n"
	"Exit status: 0 exported; 1 the vault could not be read or a file not written;\n"
	"2 usage.\n";

const struct option export_options[] = {
	{ "vault", required_argument, NULL, 'v' },
	{ "out", required_argument, NULL, 'o' },
	{ "incremental", required_argument, NULL, 'i' },
	{ "base-url", required_argument, NULL, 'b' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct command commands[] = {
	{ "serve", "render the vault and serve it over HTTP", serve_usage, serve_options },
	{ "check", "lint the vault: broken links and embeds, bad frontmatter, ...", check_usage,
	  check_options },
	{ "export", "write the rendered site as static files", export_usage, export_options },
	{ "sync", "sync a vault with a running server, both ways, through its sync API",
	  sync_usage, sync_options },
	{ NULL, NULL, NULL, NULL },
};

const struct command *command_find(const char *name)
{
	const struct command *c;

	for (c = commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void commands_usage(FILE *out)
{
	const struct command *c;

	fputs("usage: quire COMMAND [options]\n"
	      "\n"
	      "Publishes a folder of Markdown notes (an Obsidian vault) as a website.\n"
	      "\n"
	      "commands:\n", out);
	for (c = commands; c->name; c++)
		fprintf(out, "  %-7s %s\n", c->name, c->summary);
	fputs("\n"
	      "quire help COMMAND (or quire COMMAND --help) shows a command's options;\n"
	      "quire --version the version and the libraries it runs with.\n", out);
}

/*
 * jemalloc's version, from malloc-conf.c: linked into the programs that
 * use jemalloc (not the sanitizer builds, nor the tests), so a weak
 * reference, NULL without it.
 */
extern const char quire_malloc_version[] __attribute__((weak));

void commands_version(FILE *out)
{
	unsigned xxh = XXH_versionNumber();
	int gmaj = 0, gmin = 0, grev = 0;

	git_libgit2_version(&gmaj, &gmin, &grev);
	fprintf(out, "quire %s\n", QUIRE_VERSION);
	fprintf(out, "  cmark-gfm %s\n", cmark_version_string());
	fprintf(out, "  libevent %s\n", event_get_version());
	fprintf(out, "  SQLite %s\n", sqlite3_libversion());
	fprintf(out, "  libyaml %s\n", yaml_get_version_string());
	fprintf(out, "  zlib %s\n", zlibVersion());
	fprintf(out, "  libdeflate %s\n", LIBDEFLATE_VERSION_STRING);
	fprintf(out, "  libgit2 %d.%d.%d\n", gmaj, gmin, grev);
	fprintf(out, "  utf8proc %s\n", utf8proc_version());
	fprintf(out, "  xxHash %u.%u.%u\n", xxh / 10000, xxh / 100 % 100, xxh % 100);
#ifdef OPENSSL_VERSION_STRING
	fprintf(out, "  OpenSSL %s\n", OpenSSL_version(OPENSSL_VERSION_STRING));
#else
	fprintf(out, "  %s\n", OpenSSL_version(OPENSSL_VERSION));
#endif
	fprintf(out, "  gumbo %s\n", QUIRE_GUMBO_VERSION);
	fprintf(out, "  expat %s\n", XML_ExpatVersion() + strcspn(XML_ExpatVersion(), "0123456789"));
	if (quire_malloc_version)
		fprintf(out, "  jemalloc %s\n", quire_malloc_version);
	else
		fputs("  malloc: the C library's (or the sanitizers')\n", out);
}

/*
 * test-usage.c: what `--help` says is what the command takes.
 *
 * For every command of the table (cmd/commands.h), against its own
 * getopt_long() table:
 *	- the usage line (the synopsis, up to the first blank line) names
 *	  every option, with an argument (an upper-case word after it) exactly
 *	  when the option takes one;
 *	- the option list has an entry "  --name" for every option;
 *	- every --word the text mentions is an option of the command;
 *	- `quire --help` lists the command;
 * and, running $QUIRE_BIN: `quire help CMD` prints the same bytes as
 * `quire CMD --help`, which are the table's text, both exiting 0; an
 * unknown command is exit 2; `quire --version` names the version and each
 * library with a version number.
 *
 * The man pages and completions are generated from these texts at build
 * time (scripts/gen-manual.py); tests/test-install.py checks them.
 */
#include "cmd/commands.h"
#include "lib/test.h"
#include "util/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Where --name occurs in text as a whole option (not a prefix of --name-more), or NULL. */
static const char *find_option(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *p = text;

	while ((p = strstr(p, "--"))) {
		if (strncmp(p + 2, name, n) == 0 && !isalnum((unsigned char)p[2 + n]) &&
		    p[2 + n] != '-')
			return p;
		p += 2;
	}
	return NULL;
}

static int takes_argument(const char *at, const char *name)
{
	const char *p = at + 2 + strlen(name);

	if (*p == '=' || *p == ' ')
		p++;
	return isupper((unsigned char)*p) != 0;
}

static void check_command(const struct command *c)
{
	const char *blank = strstr(c->usage, "\n\n");
	char *synopsis = strndup(c->usage, blank ? (size_t)(blank - c->usage) : strlen(c->usage));
	const struct option *o;
	const char *p;
	char head[64], entry[64];

	snprintf(head, sizeof(head), "usage: quire %s", c->name);
	if (strncmp(c->usage, head, strlen(head)) != 0) {
		fprintf(stderr, "  %s: its text does not start with '%s'\n", c->name, head);
		test_current_failed = 1;
	}
	for (o = c->options; o->name; o++) {
		const char *at;
		if (strcmp(o->name, "help") == 0)
			continue;
		at = find_option(synopsis, o->name);
		if (!at) {
			fprintf(stderr, "  quire %s: the usage line leaves out --%s\n", c->name, o->name);
			test_current_failed = 1;
		} else if (takes_argument(at, o->name) != (o->has_arg == required_argument)) {
			fprintf(stderr, "  quire %s: the usage line shows --%s %s an argument\n", c->name,
				o->name, o->has_arg == required_argument ? "without" : "with");
			test_current_failed = 1;
		}
		snprintf(entry, sizeof(entry), "\n  --%s", o->name);
		at = strstr(c->usage, entry);
		if (!at || (at[strlen(entry)] != ' ' && at[strlen(entry)] != '\n')) {
			fprintf(stderr, "  quire %s: no entry for --%s in the option list\n", c->name,
				o->name);
			test_current_failed = 1;
		}
	}
	/* and nothing the command does not take */
	for (p = c->usage; (p = strstr(p, "--")); p += 2) {
		size_t n = 0;
		char name[64];
		while (n < sizeof(name) - 1 && (isalnum((unsigned char)p[2 + n]) || p[2 + n] == '-'))
			n++;
		memcpy(name, p + 2, n);
		name[n] = '\0';
		for (o = c->options; o->name && strcmp(o->name, name) != 0; o++)
			;
		if (n && !o->name) {
			fprintf(stderr, "  quire %s: its text names --%s, which it does not take\n",
				c->name, name);
			test_current_failed = 1;
		}
	}
	free(synopsis);
}

static void test_every_option_listed(void)
{
	const struct command *c;
	size_t n = 0;

	for (c = commands; c->name; c++, n++)
		check_command(c);
	CHECK(n >= 4);
}

static void test_commands_listed(void)
{
	const struct command *c;
	char *text = NULL, line[128];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	commands_usage(f);
	fclose(f);
	for (c = commands; c->name; c++) {
		snprintf(line, sizeof(line), "\n  %-7s %s\n", c->name, c->summary);
		CHECK(strstr(text, line) != NULL);
		CHECK(command_find(c->name) == c);
	}
	CHECK(command_find("nope") == NULL);
	free(text);
}

/* The stdout of `$QUIRE_BIN args` into out; returns the exit status (or -1). */
static int run(const char *args, struct buf *out)
{
	struct buf cmd = BUF_INIT;
	char chunk[4096];
	size_t n;
	FILE *p;
	int st;

	buf_reset(out);
	buf_addf(&cmd, "'%s' %s 2>/dev/null", getenv("QUIRE_BIN"), args);
	p = popen(cmd.ptr, "r");
	buf_release(&cmd);
	if (!p)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		buf_add(out, chunk, n);
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_help_command(void)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	const struct command *c;
	char args[64];

	for (c = commands; c->name; c++) {
		snprintf(args, sizeof(args), "help %s", c->name);
		CHECK_INT(run(args, &a), 0);
		snprintf(args, sizeof(args), "%s --help", c->name);
		CHECK_INT(run(args, &b), 0);
		CHECK_STR(a.ptr, b.ptr);
		CHECK_STR(a.ptr, c->usage);
	}
	CHECK_INT(run("help", &a), 0);
	CHECK(strstr(a.ptr, "usage: quire COMMAND") == a.ptr);
	CHECK_INT(run("--help", &b), 0);
	CHECK_STR(a.ptr, b.ptr);
	CHECK_INT(run("help no-such-command", &a), 2);
	CHECK_INT(run("no-such-command", &a), 2);
	buf_release(&a);
	buf_release(&b);
}

static void test_version(void)
{
	static const char *const libs[] = { "cmark-gfm", "libevent", "SQLite", "libyaml", "zlib",
					    "libdeflate", "libgit2", "utf8proc", "xxHash",
					    "OpenSSL", "gumbo", "expat" };
	struct buf out = BUF_INIT;
	char want[128];
	size_t i;

	CHECK_INT(run("--version", &out), 0);
	snprintf(want, sizeof(want), "quire %s\n", QUIRE_VERSION);
	CHECK(strncmp(out.ptr, want, strlen(want)) == 0);
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		const char *at;
		snprintf(want, sizeof(want), "\n  %s ", libs[i]);
		at = strstr(out.ptr, want);
		if (!at || !isdigit((unsigned char)at[strlen(want)])) {
			fprintf(stderr, "  --version names no version of %s:\n%s", libs[i], out.ptr);
			test_current_failed = 1;
		}
	}
	buf_release(&out);
}

int main(void)
{
	RUN(test_every_option_listed);
	RUN(test_commands_listed);
	RUN(test_help_command);
	RUN(test_version);
	return test_done();
}

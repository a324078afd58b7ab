/*
 * fuzz-config.c: a libFuzzer target for quire.yml (src/vault/config.c
 * over libyaml through src/util/yml.c).
 *
 * config_load() reads <vault>/quire.yml, so each input is written to that
 * file in a temporary folder made once per process (under $TMPDIR, removed
 * at exit) and loaded: YAML parsing, every setting, sizes, base URLs, hosts
 * and the diagnostics for what is wrong. An invalid file gives at least
 * one error. A valid one is then checked the way the rest of quire relies
 * on it: strings set, base_url empty or http(s) without a trailing slash,
 * url_prefix empty or "/..." without one, every host name lowercase, and
 * nothing that goes into a header (host names, base URLs, purgers' URLs
 * and headers, the CSP) with a control character. Also config_parse_size()
 * and config_set_base_url() on the raw input.
 */
#include "fuzz.h"

#include "util/buf.h"
#include "util/diag.h"
#include "vault/config.h"

#include <fcntl.h>
#include <unistd.h>

static char dir[64], file[96];

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/quire-fuzz-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(file, sizeof(file), "%s/quire.yml", dir);
	atexit(cleanup);
}

static void write_file(const uint8_t *data, size_t size)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
		abort();
}

/* s has no byte below 0x20 (tab aside) nor 0x7f: it can go into a header line. */
static void one_line(const char *s)
{
	if (s)
		fuzz_assert(config_header_value_ok(s, strlen(s)));
}

static void check(const struct config *cfg)
{
	size_t i, n;
	const char *p;

	one_line(cfg->base_url);
	one_line(cfg->csp);
	one_line(cfg->frame_src);
	for (i = 0; i < cfg->npurgers; i++) {
		one_line(cfg->purgers[i].url);
		one_line(cfg->purgers[i].header);
	}
	for (i = 0; i < cfg->nhosts; i++) {
		one_line(cfg->hosts[i].name);
		one_line(cfg->hosts[i].base_url);
		fuzz_assert(!cfg->hosts[i].base_url ||
			    config_check_url(cfg->hosts[i].base_url, 1) == 0);
	}

	fuzz_assert(cfg->title && cfg->base_url && cfg->url_prefix && cfg->language &&
		    cfg->frame_src);
	n = strlen(cfg->base_url);
	fuzz_assert(n == 0 || strncmp(cfg->base_url, "http://", 7) == 0 ||
		    strncmp(cfg->base_url, "https://", 8) == 0);
	fuzz_assert(n == 0 || cfg->base_url[n - 1] != '/');
	n = strlen(cfg->url_prefix);
	fuzz_assert(n == 0 || (cfg->url_prefix[0] == '/' && cfg->url_prefix[n - 1] != '/'));
	/* a note over it is never read: from 1K to 1G, whatever the file said */
	fuzz_assert(cfg->max_note_size >= 1024 && cfg->max_note_size <= (size_t)1 << 30);
	for (i = 0; i < cfg->nignore; i++)
		fuzz_assert(cfg->ignore[i] != NULL);
	for (i = 0; i < cfg->nhosts; i++) {
		fuzz_assert(cfg->hosts[i].name != NULL);
		for (p = cfg->hosts[i].name; *p; p++)
			fuzz_assert(!(*p >= 'A' && *p <= 'Z'));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg;
	struct diag_list diags;
	char *s = fuzz_str(data, size);
	size_t bytes;

	if (!file[0])
		setup();
	write_file(data, size);
	diag_list_init(&diags);
	if (config_load(&cfg, dir, &diags) == 0)
		check(&cfg);
	else
		fuzz_assert(diags.nerrors > 0);
	if (config_set_base_url(&cfg, s) == 0)
		check(&cfg);
	config_release(&cfg);
	diag_list_release(&diags);
	(void)config_parse_size(s, &bytes);
	free(s);
	return 0;
}

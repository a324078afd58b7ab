/*
 * fuzz-note.c: a libFuzzer target for everything a note's bytes go
 * through: UTF-8 sanitizing, frontmatter (libyaml), the pre-pass, cmark-gfm
 * and our tree passes and renderer, raw HTML through the sanitizer.
 *
 * How to build and run the targets of tests/fuzz/: docs/security.md,
 * "Fuzzing" (tests/fuzz/run is what `make test` runs).
 */
#include "fuzz.h"

#include "util/diag.h"
#include "markdown/markdown.h"
#include "vault/note.h"

#include <stdlib.h>

static void resolve(void *ctx, size_t index, const struct md_ref *ref, struct md_target *out)
{
	(void)ctx;
	/* alternate kinds so every branch of the renderer is reached */
	switch ((index + strlen(ref->target)) % 4) {
	case 0: out->kind = MD_TARGET_BROKEN; break;
	case 1: out->kind = MD_TARGET_PLAIN; break;
	case 2: out->kind = MD_TARGET_NOTE; out->url = "/n"; break;
	default: out->kind = MD_TARGET_ATTACHMENT; out->url = "/a.png"; break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct diag_list diags;
	struct note n;
	struct md_options opt = { resolve, NULL, "/p", 1, 0, 0, 0 };
	struct md_result res = MD_RESULT_INIT;

	if (!ready) {
		md_global_init();
		ready = 1;
	}
	diag_list_init(&diags);
	memset(&n, 0, sizeof(n));
	note_parse(&n, "fuzz.md", (const char *)data, size, 0, &diags);
	opt.first_line = n.body_line;
	opt.url_slots = (int)(size & 1); /* as the site renders, or with URLs written */
	opt.highlight = (int)((size >> 1) & 1); /* code blocks highlighted, or plain */
	md_render(n.body, n.body_len, &opt, &res);
	for (size_t k = 0; k < res.nslots; k++) {
		/* in order, inside the fragment, each naming a resolved reference */
		if (res.slots[k].offset > res.html.len ||
		    (res.slots[k].ref & ~MD_SLOT_FRAGMENT) >= res.nrefs ||
		    (k && res.slots[k].offset < res.slots[k - 1].offset))
			abort();
	}
	md_result_release(&res);
	note_release(&n);
	diag_list_release(&diags);
	return 0;
}

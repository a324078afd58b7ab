/*
 * synccli.h: `quire sync VAULT URL`, the client of the sync API.
 *
 * Syncs a local vault with a server both ways without losing an edit:
 * hashes the local files (reading only those whose stat changed since the
 * last run, from VAULT/.quire/sync-cache), fetches the server's manifest
 * (bounded, every path checked as the server checks paths), and compares
 * each file with the record of the last sync (VAULT/.quire/sync-record):
 * what changed on one side is taken from it, a note changed on both sides
 * is merged three-way, and otherwise both versions are kept (a conflict
 * copy). Every write to the server carries a precondition (If-Match: the
 * hash it replaces, If-None-Match: * for a new file), every write here
 * checks the local file is still what was hashed, so nothing is
 * overwritten that was not seen. Then it waits until the server's live
 * snapshot includes every change. With --push it only sends.
 *
 * A run that was interrupted is finished by running it again: the record
 * is written only for what was synced, and a file equal on both sides
 * needs no record.
 *
 * This module and src/http/ are the only ones that include libevent; the
 * client uses evhttp's client side, one event loop, --jobs connections.
 */
#ifndef QUIRE_SYNCCLI_H
#define QUIRE_SYNCCLI_H

#include <getopt.h>

/* What `quire sync --help` prints, and the options it takes (cmd/commands.h). */
extern const char sync_usage[];
extern const struct option sync_options[];

/*
 * Runs `quire sync` with argv[0] = "sync". Returns the exit status: 0 when
 * everything is in sync, 3 when it is but conflict copies were written,
 * 1 when anything failed or was left unsynced (with --push, a conflict),
 * 2 for usage errors.
 */
int sync_main(int argc, char **argv);

#endif

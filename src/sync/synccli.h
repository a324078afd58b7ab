/*
 * synccli.h: `quire sync VAULT URL`, the client of the sync API.
 *
 * Pushes a local vault to a server: hashes the local files (reading only
 * those whose stat changed since the last run, from VAULT/.quire/sync-cache),
 * fetches the server's manifest, uploads what differs with a precondition
 * (If-Match: the server's hash, or If-None-Match: * for a new file) so that
 * an edit made on the server meanwhile is reported as a conflict instead of
 * overwritten, deletes what only the server has when asked to, and waits
 * until the server's live snapshot includes every change.
 *
 * Because each run compares against the server's manifest, a run that was
 * interrupted is finished by running it again: only what is still
 * different is sent.
 *
 * This module and src/http/ are the only ones that include libevent; the
 * client uses evhttp's client side, one event loop, --jobs connections.
 */
#ifndef QUIRE_SYNCCLI_H
#define QUIRE_SYNCCLI_H

/*
 * Runs `quire sync` with argv[0] = "sync". Returns the exit status: 0 when
 * everything was synced, 1 when anything failed or conflicted, 2 for
 * usage errors.
 */
int sync_main(int argc, char **argv);

#endif

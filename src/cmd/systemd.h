/*
 * systemd.h: what `quire serve` tells systemd, and what it takes from it,
 * when it runs as a service (deploy/quire.service, docs/deploy.md).
 *
 * Both are no-ops outside systemd: without $NOTIFY_SOCKET nothing is
 * sent, without $CREDENTIALS_DIRECTORY there is no credential.
 */
#ifndef QUIRE_SYSTEMD_H
#define QUIRE_SYSTEMD_H

#include <stddef.h>

/*
 * Sends a state to the service manager, sd_notify(3)'s protocol: the
 * printf-formatted text, newline-separated VAR=value lines ("READY=1",
 * "STOPPING=1", "STATUS=..."), as one datagram to the AF_UNIX socket
 * $NOTIFY_SOCKET names (a path, or "@name" in the abstract namespace).
 * Returns 1 when sent, 0 when there is no $NOTIFY_SOCKET, -1 when it
 * could not be sent (logged). Thread-safe.
 */
int systemd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The file of the credential called name that systemd passed in
 * ($CREDENTIALS_DIRECTORY/name, from LoadCredential= or SetCredential=)
 * into path (size bytes). Returns 0 when that file exists, -1 when there
 * is no such credential (nothing logged).
 */
int systemd_credential(const char *name, char *path, size_t size);

#endif

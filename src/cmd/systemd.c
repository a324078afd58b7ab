/*
 * systemd.c: the service manager's notify protocol and credentials,
 * spoken directly.
 *
 * Type=notify: systemd waits for READY=1 before it counts the service as
 * started (and starts what is ordered after it), and takes STOPPING=1 as
 * the start of its shutdown. The protocol is a datagram of VAR=value lines
 * sent to the AF_UNIX socket named in $NOTIFY_SOCKET: a path, or "@name"
 * for Linux's abstract namespace (sd_notify(3)). A socket is made for each
 * message: quire sends a handful in its life.
 *
 * Credentials: LoadCredential=token:/etc/quire/token puts a copy of the
 * file, readable by the service alone, in a directory systemd names in
 * $CREDENTIALS_DIRECTORY (systemd.exec(5)); the token never appears in the
 * unit, the environment or the command line.
 *
 * Rejected: libsystemd's sd_notify() (a library linked into every quire
 * for two dozen lines, and a -dev package to build it); vsock
 * addresses in $NOTIFY_SOCKET (systemd 253's, for virtual machines: not
 * where quire runs; such an address is reported and ignored).
 */
#include "cmd/systemd.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int systemd_notify(const char *fmt, ...)
{
	const char *where = getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr;
	char msg[1024];
	socklen_t len;
	size_t n;
	va_list ap;
	int fd, ret = 1;

	if (!where || !*where)
		return 0;
	n = strlen(where);
	if ((where[0] != '/' && where[0] != '@') || n >= sizeof(addr.sun_path)) {
		log_warn("NOTIFY_SOCKET=%s: not a Unix socket quire can use", where);
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, where, n);
	if (where[0] == '@')
		addr.sun_path[0] = '\0'; /* abstract: the name is the bytes after the NUL */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (where[0] == '/'));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&addr, len) < 0) {
		log_warn("cannot notify systemd at %s: %s", where, strerror(errno));
		ret = -1;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

int systemd_credential(const char *name, char *path, size_t size)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	struct stat st;
	int n;

	if (!dir || !*dir)
		return -1;
	n = snprintf(path, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control socket server: accepts up to ZL_CTL_MAX_CLIENTS clients on a Unix
 * socket, reads their request lines and queues the replies without ever
 * blocking. The lines are answered by zl_ctl_handle_line (ctl_cmd.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_priv.h"

/* Output buffers above this are freed once sent: a burst of large replies pins no memory. */
#define OUT_KEEP (64 * 1024)

/*
 * One connected client. Replies wait in out until the socket takes them
 * (never blocking): a client that does not read must not stall the others.
 */
struct client {
	int fd;
	int overflow;  /* discarding the rest of a line longer than ZL_CTL_MAX_LINE */
	int eof;       /* the client sent its last byte: close once out is sent */
	size_t len;    /* bytes in in */
	char *in;      /* ZL_CTL_MAX_LINE + 1 bytes: a longest line and its newline */
	char *out;     /* replies not yet taken by the socket: out[head, tail) */
	size_t head, tail, cap;
};

/* Reply bytes the socket has not taken yet. */
static size_t
client_pending(const struct client *c)
{
	return c->tail - c->head;
}

/* Closes the client's socket and frees its buffers; the slot is free again. */
static void
client_close(struct client *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Sends what the socket takes now; returns -1 if the client is gone. */
static int
client_flush(struct client *c)
{
	while (c->head < c->tail) {
		ssize_t w = send(c->fd, c->out + c->head, c->tail - c->head, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w <= 0)
			return -1;
		c->head += (size_t)w;
	}
	c->head = 0;
	c->tail = 0;
	if (c->cap > OUT_KEEP) {
		free(c->out);
		c->out = NULL;
		c->cap = 0;
	}
	return 0;
}

/* Appends s and a newline to the client's output; returns -1 when out of memory. */
static int
client_queue(struct client *c, const char *s)
{
	size_t n = strlen(s), need;

	if (c->head > 0 && c->tail + n + 1 > c->cap) {
		/* reuse the room of what was sent before growing */
		memmove(c->out, c->out + c->head, c->tail - c->head);
		c->tail -= c->head;
		c->head = 0;
	}
	need = c->tail + n + 1;
	if (need > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL)
			return -1;
		c->out = p;
		c->cap = cap;
	}
	memcpy(c->out + c->tail, s, n);
	c->out[c->tail + n] = '\n';
	c->tail += n + 1;
	return 0;
}

/* Queues one reply line; returns -1 to drop a client whose unsent replies pass ZL_CTL_MAX_OUT. */
static int
client_reply(struct client *c, int slot, const char *s)
{
	if (client_queue(c, s) < 0) {
		fprintf(stderr, "zlgen: control client %d dropped: out of memory for its replies\n", slot);
		return -1;
	}
	if (client_pending(c) <= ZL_CTL_MAX_OUT)
		return 0;
	/* only what the socket will not take now counts against the limit */
	if (client_flush(c) < 0)
		return -1;
	if (client_pending(c) > ZL_CTL_MAX_OUT) {
		fprintf(stderr, "zlgen: control client %d dropped: it does not read its replies "
			"(%zu bytes unsent, limit %d MiB)\n", slot, client_pending(c), ZL_CTL_MAX_OUT >> 20);
		return -1;
	}
	return 0;
}

/* Reads what a client sent and queues a reply to every complete line; returns -1 to drop it. */
static int
client_read(struct client *c, int slot, int *shutdown)
{
	size_t off = 0;
	ssize_t r;
	char *nl;

	if (c->in == NULL)
		c->in = malloc(ZL_CTL_MAX_LINE + 1);
	if (c->in == NULL)
		return -1;
	/* room for a line of exactly ZL_CTL_MAX_LINE bytes and its newline */
	r = recv(c->fd, c->in + c->len, ZL_CTL_MAX_LINE + 1 - c->len, MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (r == 0) {
		/* done sending (maybe only half-closed): it may still read its replies */
		c->eof = 1;
		return 0;
	}
	c->len += (size_t)r;
	/* lines are consumed by offset and the rest moved once: many short lines cost no quadratic copy */
	while (!*shutdown && (nl = memchr(c->in + off, '\n', c->len - off)) != NULL) {
		const char *line = c->in + off;
		size_t l = (size_t)(nl - line);
		char *out = NULL;
		int ret;

		off += l + 1;
		if (c->overflow) {
			char msg[128];

			snprintf(msg, sizeof(msg), "request line longer than %d bytes (1 MiB), the limit: "
				"send a shorter request", ZL_CTL_MAX_LINE);
			out = ctl_error_line(msg);
			c->overflow = 0;
		} else if (l > 0 && !(l == 1 && line[0] == '\r')) {
			out = zl_ctl_handle_line(line, l, shutdown);
		}
		if (out == NULL)
			continue;
		ret = client_reply(c, slot, out);
		free(out);
		if (ret < 0)
			return -1;
	}
	memmove(c->in, c->in + off, c->len - off);
	c->len -= off;
	if (c->len == ZL_CTL_MAX_LINE + 1) {
		/* one byte more than the limit and still no newline: discard up to the next one */
		c->overflow = 1;
		c->len = 0;
	}
	return client_flush(c);
}

/* Handles one client's poll events; returns -1 to close it. */
static int
client_event(struct client *c, int slot, short revents, int *shutdown)
{
	if (!c->eof && (revents & (POLLIN | POLLHUP | POLLERR))) {
		if (client_read(c, slot, shutdown) < 0)
			return -1;
	} else if (revents & (POLLHUP | POLLERR)) {
		/* done sending and gone: nobody is left to read the rest */
		return -1;
	}
	if (client_flush(c) < 0)
		return -1;
	/* a client that sent its last request leaves once it has every reply */
	return c->eof && client_pending(c) == 0 ? -1 : 0;
}

/* Tells a client beyond ZL_CTL_MAX_CLIENTS why it is refused (one try, never waiting) and closes it. */
static void
client_refuse(int fd)
{
	static char nl[] = "\n";
	char msg[128], *out;

	snprintf(msg, sizeof(msg), "too many control clients (%d connected); close one or wait until "
		"one disconnects", ZL_CTL_MAX_CLIENTS);
	fprintf(stderr, "zlgen: refused a control client: %s\n", msg);
	out = ctl_error_line(msg);
	if (out != NULL) {
		struct iovec iov[2] = { { out, strlen(out) }, { nl, 1 } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

		/* a new socket's buffer is empty: the line fits, and a full one is not waited for */
		if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			fprintf(stderr, "zlgen: could not tell the refused client: %s\n", strerror(errno));
		free(out);
	}
	close(fd);
}

/* Creates and listens on the socket at path (mode 0600); returns its fd, or -1 after one line on stderr. */
int
zl_ctl_open(const char *path)
{
	struct sockaddr_un addr;
	size_t n = strlen(path);
	struct stat st;
	mode_t old;
	int lfd;

	if (n == 0) {
		fprintf(stderr, "zlgen: --ctl needs a path for the control socket, got an empty one\n");
		return -1;
	}
	if (n >= sizeof(addr.sun_path)) {
		fprintf(stderr, "zlgen: control socket path %s is %zu bytes, longer than the %zu a UNIX "
			"socket allows: use a shorter --ctl path\n", path, n, sizeof(addr.sun_path) - 1);
		return -1;
	}
	/* a stale socket of an earlier run is replaced; anything else at path is never deleted */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "zlgen: control socket path %s exists and is not a socket: remove it or "
			"choose another --ctl path\n", path);
		return -1;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		fprintf(stderr, "zlgen: cannot create the control socket %s: %s\n", path, strerror(errno));
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, n + 1);
	unlink(path);
	/* created 0600 from the start, not chmod'ed after: no moment in which others may connect */
	old = umask(0177);
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		umask(old);
		fprintf(stderr, "zlgen: cannot bind the control socket %s: %s\n", path, strerror(errno));
		close(lfd);
		return -1;
	}
	umask(old);
	if (listen(lfd, ZL_CTL_MAX_CLIENTS) < 0) {
		fprintf(stderr, "zlgen: cannot listen on the control socket %s: %s\n", path, strerror(errno));
		zl_ctl_close(lfd, path);
		return -1;
	}
	return lfd;
}

/* Closes a socket from zl_ctl_open and removes its path. */
void
zl_ctl_close(int lfd, const char *path)
{
	close(lfd);
	unlink(path);
}

/* Serves lfd until shutdown or zl.quit, each client's request lines in turn, then closes it; returns 0 or -1. */
int
zl_ctl_serve(int lfd, const char *path)
{
	struct client cl[ZL_CTL_MAX_CLIENTS];
	struct pollfd pfd[ZL_CTL_MAX_CLIENTS + 1];
	int shutdown = 0, ret = 0, i;

	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].fd = -1;
	}
	printf("zlgen: ready, control socket %s\n", path);
	fflush(stdout);

	while (!zl.quit && !shutdown) {
		int timeout = zl_trial_active() ? zl_trial_tick_ms() : 100;

		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
			/* POLLOUT only with output waiting: a writable socket would end every poll at once */
			pfd[i + 1].fd = cl[i].fd;
			pfd[i + 1].events = (cl[i].eof ? 0 : POLLIN) | (client_pending(&cl[i]) ? POLLOUT : 0);
			pfd[i + 1].revents = 0;
		}
		if (poll(pfd, ZL_CTL_MAX_CLIENTS + 1, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "zlgen: control socket: poll failed: %s\n", strerror(errno));
			ret = -1;
			break;
		}
		zl_trial_tick();
		/* clients before the listener: a slot freed by one that left is there for one arriving */
		for (i = 0; i < ZL_CTL_MAX_CLIENTS && !shutdown; i++)
			if (cl[i].fd >= 0 && pfd[i + 1].revents != 0 &&
					client_event(&cl[i], i, pfd[i + 1].revents, &shutdown) < 0)
				client_close(&cl[i]);
		if (!shutdown && (pfd[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				for (i = 0; i < ZL_CTL_MAX_CLIENTS && cl[i].fd >= 0; i++)
					;
				if (i == ZL_CTL_MAX_CLIENTS)
					client_refuse(fd);
				else
					cl[i].fd = fd;
			}
		}
	}
	/* the last replies (shutdown's own among them) get one more try, never a wait */
	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
		if (cl[i].fd >= 0) {
			client_flush(&cl[i]);
			client_close(&cl[i]);
		}
	}
	zl_ctl_close(lfd, path);
	return ret;
}

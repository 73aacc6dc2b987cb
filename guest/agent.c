/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * zl-guest-agent: runs in the zeroloss VNF guest and relays DPDK telemetry to the host.
 *
 * Usage: zl-guest-agent PORT SOCKET
 * PORT is a virtio-serial port (/dev/vportNpM) whose host end is a unix socket; SOCKET is the
 * guest testpmd's telemetry socket (SOCK_SEQPACKET). Each line the host writes is "ID REQUEST"
 * ("7 /ethdev/stats,0"): REQUEST is sent to SOCKET, and "ID REPLY" goes back as one line, so the
 * host can drop a late reply to a request it gave up on (a paused guest answers late). A reply
 * that cannot be had (testpmd not up yet, gone) is ID {"error": "..."}, so the host never waits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define REQ_MAX 256
#define REPLY_MAX 65536

static int
tel_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char info[REPLY_MAX];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || recv(fd, info, sizeof(info), 0) <= 0) {
		close(fd);
		return -1;
	}
	return fd; /* the first message (version, pid, max_output_len) is read and dropped */
}

static int
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
reply(int port, const char *id, const char *text, size_t len)
{
	if (write_all(port, id, strlen(id)) < 0 || write_all(port, " ", 1) < 0 ||
			write_all(port, text, len) < 0 || write_all(port, "\n", 1) < 0)
		perror("zl-guest-agent: write to host");
}

static void
reply_error(int port, const char *id, const char *what)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "{\"error\": \"%s\"}", what);

	reply(port, id, buf, (size_t)n);
}

int
main(int argc, char **argv)
{
	static char out[REPLY_MAX];
	char req[REQ_MAX], *cmd;
	size_t have = 0;
	int port, tel = -1;

	if (argc != 3) {
		fprintf(stderr, "usage: zl-guest-agent PORT TELEMETRY-SOCKET\n");
		return 2;
	}
	port = open(argv[1], O_RDWR | O_CLOEXEC);
	if (port < 0) {
		perror("zl-guest-agent: open port");
		return 1;
	}
	for (;;) {
		ssize_t n = read(port, req + have, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* the host end is not connected: a virtio-serial port reads 0 then; wait for it */
			usleep(100000);
			continue;
		}
		if (req[have] != '\n') {
			if (++have == sizeof(req)) {
				have = 0;
				reply_error(port, "0", "request too long");
			}
			continue;
		}
		req[have] = '\0';
		have = 0;
		cmd = strchr(req, ' ');
		if (cmd == NULL) {
			reply_error(port, "0", "expected: ID REQUEST");
			continue;
		}
		*cmd++ = '\0';
		for (int attempt = 0; attempt < 2; attempt++) {
			if (tel < 0)
				tel = tel_connect(argv[2]);
			if (tel < 0) {
				reply_error(port, req, "testpmd telemetry not reachable");
				break;
			}
			if (send(tel, cmd, strlen(cmd), 0) >= 0) {
				ssize_t m = recv(tel, out, sizeof(out), 0);

				if (m > 0) {
					reply(port, req, out, (size_t)m);
					break;
				}
			}
			close(tel); /* testpmd restarted or went away: reconnect once */
			tel = -1;
			if (attempt == 1)
				reply_error(port, req, "testpmd telemetry closed the connection");
		}
	}
}

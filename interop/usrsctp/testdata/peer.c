/*
 * peer.c: the usrsctp side of interop/usrsctp, written for this project.
 * One process, one usrsctp stack over UDP encapsulation (RFC 6951), driven
 * line by line on stdin; it reports on stdout, one event per line.
 *
 *   peer server SCTPPORT    listens on SCTP port SCTPPORT (one-to-one
 *                           sockets), reports "accepted I" per association
 *   peer client SCTPPORT    "connect UDPPORT SCTPPORT" dials 127.0.0.1
 *
 * Both start with "port P": the UDP port usrsctp encapsulates on.
 * Commands (I is the association's index):
 *   connect UDP SCTP        -> connected I | connect-failed ERRNO
 *   send I SID U PPID SIZE COUNT SEED
 *                           COUNT messages (U=1 unordered), each SIZE
 *                           octets of gen(SEED, k) -> "sent I SID PPID
 *                           SIZE FNV" each, then "sendok I" or "senderr"
 *   reset I out|in SID...   RE-CONFIG SSN Reset Request (RFC 6525 §4.1,
 *                           §4.2) -> "resetreq I RC"
 *   hb I                    a HEARTBEAT on demand -> "hbreq I RC"
 *   shutdown I              SHUTDOWN (usrsctp_shutdown SHUT_WR)
 *   abort I                 ABORT (SCTP_ABORT send flag), reason "peer.c abort"
 *   status I                -> "status I STATE RWND UNACKED"
 *   quit
 * Events: "recv I SID U PPID SSN SIZE FNV", "assoc I STATE ERROR",
 * "shutdown-event I", "reset I FLAGS SID...", "remote-error I CAUSE",
 * "send-failed I ERROR", "eof I", "rxerr I ERRNO".
 *
 * gen(seed, k) is xorshift64* from seed*0x9E3779B97F4A7C15 + k + 1, eight
 * octets per step, little-endian; FNV is FNV-1a 64 of the message. The Go
 * side generates and hashes the same way.
 */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <usrsctp.h>

#define MAXASSOC 16
#define MAXMSG (1 << 20)

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static struct socket *socks[MAXASSOC];
static int nsocks;
static pthread_mutex_t socks_mu = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&out_mu);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_mu);
}

static uint64_t fnv(const uint8_t *b, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void gen(uint8_t *b, size_t n, uint64_t seed, uint64_t k)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ULL + k + 1;
	for (size_t i = 0; i < n; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		uint64_t v = x * 0x2545F4914F6CDD1DULL;
		for (size_t j = 0; j < 8 && i + j < n; j++)
			b[i + j] = (uint8_t)(v >> (8 * j));
	}
}

static int add_sock(struct socket *s)
{
	pthread_mutex_lock(&socks_mu);
	int i = nsocks < MAXASSOC ? nsocks++ : -1;
	if (i >= 0)
		socks[i] = s;
	pthread_mutex_unlock(&socks_mu);
	return i;
}

static struct socket *get_sock(int i)
{
	struct socket *s = NULL;
	pthread_mutex_lock(&socks_mu);
	if (i >= 0 && i < nsocks)
		s = socks[i];
	pthread_mutex_unlock(&socks_mu);
	return s;
}

static void notification(int i, const union sctp_notification *n)
{
	switch (n->sn_header.sn_type) {
	case SCTP_ASSOC_CHANGE:
		say("assoc %d %u %u", i, n->sn_assoc_change.sac_state, n->sn_assoc_change.sac_error);
		break;
	case SCTP_SHUTDOWN_EVENT:
		say("shutdown-event %d", i);
		break;
	case SCTP_REMOTE_ERROR:
		say("remote-error %d %u", i, ntohs(n->sn_remote_error.sre_error));
		break;
	case SCTP_SEND_FAILED_EVENT:
		say("send-failed %d %u", i, n->sn_send_failed_event.ssfe_error);
		break;
	case SCTP_STREAM_RESET_EVENT: {
		const struct sctp_stream_reset_event *e = &n->sn_strreset_event;
		char line[1024];
		int len = snprintf(line, sizeof line, "reset %d %u", i, e->strreset_flags);
		size_t k = (e->strreset_length - sizeof *e) / sizeof(uint16_t);
		for (size_t j = 0; j < k && len < (int)sizeof line - 8; j++)
			len += snprintf(line + len, sizeof line - len, " %u", e->strreset_stream_list[j]);
		say("%s", line);
		break;
	}
	default:
		say("notification %d %u", i, n->sn_header.sn_type);
	}
}

/* reader receives one association's messages and notifications. */
static void *reader(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct socket *s = get_sock(i);
	uint8_t *msg = malloc(MAXMSG);
	size_t have = 0;
	for (;;) {
		struct sctp_rcvinfo rcv;
		socklen_t infolen = sizeof rcv;
		unsigned int infotype = 0;
		int flags = 0;
		struct sockaddr_in6 from;
		socklen_t fromlen = sizeof from;
		if (have == MAXMSG) {
			say("rxerr %d %d", i, EMSGSIZE);
			break;
		}
		ssize_t n = usrsctp_recvv(s, msg + have, MAXMSG - have, (struct sockaddr *)&from, &fromlen,
					  &rcv, &infolen, &infotype, &flags);
		if (n < 0) {
			say("rxerr %d %d", i, errno);
			break;
		}
		if (n == 0) {
			say("eof %d", i);
			break;
		}
		if (flags & MSG_NOTIFICATION) {
			if (flags & MSG_EOR)
				notification(i, (const union sctp_notification *)msg);
			continue;
		}
		have += (size_t)n;
		if (!(flags & MSG_EOR))
			continue;
		say("recv %d %u %d %u %u %zu %llu", i, rcv.rcv_sid, (rcv.rcv_flags & SCTP_UNORDERED) != 0,
		    ntohl(rcv.rcv_ppid), rcv.rcv_ssn, have, (unsigned long long)fnv(msg, have));
		have = 0;
	}
	free(msg);
	return NULL;
}

static void start_reader(int i)
{
	pthread_t th;
	pthread_create(&th, NULL, reader, (void *)(intptr_t)i);
	pthread_detach(th);
}

static int setopts(struct socket *s)
{
	const uint16_t events[] = {SCTP_ASSOC_CHANGE, SCTP_SHUTDOWN_EVENT, SCTP_REMOTE_ERROR,
				   SCTP_SEND_FAILED_EVENT, SCTP_STREAM_RESET_EVENT};
	int on = 1;
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0 ||
	    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0)
		return -1;
	for (size_t k = 0; k < sizeof events / sizeof events[0]; k++) {
		struct sctp_event ev = {.se_assoc_id = SCTP_FUTURE_ASSOC, .se_type = events[k], .se_on = 1};
		if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof ev) < 0)
			return -1;
	}
	struct sctp_assoc_value av = {.assoc_id = SCTP_FUTURE_ASSOC, .assoc_value = SCTP_ENABLE_RESET_STREAM_REQ};
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &av, sizeof av) < 0)
		return -1;
	struct sctp_initmsg im = {.sinit_num_ostreams = 32, .sinit_max_instreams = 32};
	return usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof im);
}

static struct socket *new_socket(void)
{
	struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
	if (s == NULL || setopts(s) < 0) {
		say("fatal socket %d", errno);
		exit(1);
	}
	return s;
}

static void bind_port(struct socket *s, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (usrsctp_bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		say("fatal bind %d", errno);
		exit(1);
	}
}

static void *acceptor(void *arg)
{
	struct socket *ls = arg;
	for (;;) {
		struct sockaddr_in from;
		socklen_t len = sizeof from;
		struct socket *s = usrsctp_accept(ls, (struct sockaddr *)&from, &len);
		if (s == NULL) {
			say("accept-failed %d", errno);
			return NULL;
		}
		int i = add_sock(s);
		say("accepted %d", i);
		start_reader(i);
	}
}

/* free_udp_port returns a UDP port free on this host at the moment. */
static int free_udp_port(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		say("fatal udp-port %d", errno);
		exit(1);
	}
	close(fd);
	return ntohs(a.sin_port);
}

static void cmd_connect(int udp, int sctp, int lport)
{
	struct socket *s = new_socket();
	bind_port(s, lport);
	/* RFC 6951 §5.3: the remote UDP port of the association. */
	struct sctp_udpencaps enc;
	memset(&enc, 0, sizeof enc);
	enc.sue_address.ss_family = AF_INET6;
	enc.sue_port = htons(udp);
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof enc) < 0) {
		say("connect-failed %d", errno);
		return;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(sctp), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (usrsctp_connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		say("connect-failed %d", errno);
		return;
	}
	int i = add_sock(s);
	say("connected %d", i);
	start_reader(i);
}

static void cmd_send(int i, int sid, int u, uint32_t ppid, size_t size, int count, uint64_t seed)
{
	struct socket *s = get_sock(i);
	static uint8_t buf[MAXMSG];
	if (s == NULL || size > MAXMSG) {
		say("senderr %d %d", i, EINVAL);
		return;
	}
	for (int k = 0; k < count; k++) {
		gen(buf, size, seed, (uint64_t)k);
		struct sctp_sndinfo si = {.snd_sid = sid, .snd_flags = u ? SCTP_UNORDERED : 0, .snd_ppid = htonl(ppid)};
		ssize_t n = usrsctp_sendv(s, buf, size, NULL, 0, &si, sizeof si, SCTP_SENDV_SNDINFO, 0);
		if (n != (ssize_t)size) {
			say("senderr %d %d", i, errno);
			return;
		}
		say("sent %d %d %u %zu %llu", i, sid, ppid, size, (unsigned long long)fnv(buf, size));
	}
	say("sendok %d", i);
}

static void cmd_reset(int i, const char *dir, char *rest)
{
	struct socket *s = get_sock(i);
	uint16_t sids[64];
	int n = 0;
	for (char *tok = strtok(rest, " \n"); tok != NULL && n < 64; tok = strtok(NULL, " \n"))
		sids[n++] = (uint16_t)atoi(tok);
	size_t len = sizeof(struct sctp_reset_streams) + n * sizeof(uint16_t);
	struct sctp_reset_streams *r = calloc(1, len);
	r->srs_assoc_id = SCTP_FUTURE_ASSOC;
	r->srs_flags = strcmp(dir, "in") == 0 ? SCTP_STREAM_RESET_INCOMING : SCTP_STREAM_RESET_OUTGOING;
	r->srs_number_streams = (uint16_t)n;
	memcpy(r->srs_stream_list, sids, n * sizeof(uint16_t));
	int rc = s ? usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RESET_STREAMS, r, (socklen_t)len) : -1;
	say("resetreq %d %d", i, rc < 0 ? errno : 0);
	free(r);
}

static void cmd_hb(int i)
{
	struct socket *s = get_sock(i);
	struct sockaddr *addrs = NULL;
	int rc = -1;
	if (s != NULL && usrsctp_getpaddrs(s, 0, &addrs) > 0) {
		struct sctp_paddrparams p;
		memset(&p, 0, sizeof p);
		memcpy(&p.spp_address, addrs, sizeof(struct sockaddr_in));
		p.spp_flags = SPP_HB_DEMAND;
		rc = usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &p, sizeof p);
		usrsctp_freepaddrs(addrs);
	}
	say("hbreq %d %d", i, rc < 0 ? errno : 0);
}

static void cmd_status(int i)
{
	struct socket *s = get_sock(i);
	struct sctp_status st;
	socklen_t len = sizeof st;
	memset(&st, 0, sizeof st);
	if (s == NULL || usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0) {
		say("status %d -1 0 0", i);
		return;
	}
	say("status %d %d %u %u", i, st.sstat_state, st.sstat_rwnd, st.sstat_unackdata);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
		fprintf(stderr, "usage: peer server|client SCTPPORT\n");
		return 2;
	}
	int lport = atoi(argv[2]);
	int udp = free_udp_port();
	usrsctp_init((uint16_t)udp, NULL, NULL);
	/* Every packet carries its CRC32c, loopback or not (RFC 9260 §6.8). */
	usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
	say("port %d", udp);
	if (strcmp(argv[1], "server") == 0) {
		struct socket *ls = new_socket();
		bind_port(ls, lport);
		if (usrsctp_listen(ls, 8) < 0) {
			say("fatal listen %d", errno);
			return 1;
		}
		pthread_t th;
		pthread_create(&th, NULL, acceptor, ls);
		pthread_detach(th);
	}
	char line[4096];
	while (fgets(line, sizeof line, stdin) != NULL) {
		char cmd[32] = "", dir[8] = "";
		int i = 0, a = 0, b = 0, c = 0, off = 0;
		unsigned long long seed = 0, size = 0;
		unsigned int ppid = 0;
		if (sscanf(line, "%31s", cmd) != 1)
			continue;
		if (strcmp(cmd, "connect") == 0 && sscanf(line, "connect %d %d", &a, &b) == 2)
			cmd_connect(a, b, lport);
		else if (strcmp(cmd, "send") == 0 &&
			 sscanf(line, "send %d %d %d %u %llu %d %llu", &i, &a, &b, &ppid, &size, &c, &seed) == 7)
			cmd_send(i, a, b, ppid, (size_t)size, c, seed);
		else if (strcmp(cmd, "reset") == 0 && sscanf(line, "reset %d %7s %n", &i, dir, &off) == 2)
			cmd_reset(i, dir, line + off);
		else if (strcmp(cmd, "hb") == 0 && sscanf(line, "hb %d", &i) == 1)
			cmd_hb(i);
		else if (strcmp(cmd, "shutdown") == 0 && sscanf(line, "shutdown %d", &i) == 1)
			say("shutdownreq %d %d", i, get_sock(i) && usrsctp_shutdown(get_sock(i), SHUT_WR) == 0 ? 0 : errno);
		else if (strcmp(cmd, "abort") == 0 && sscanf(line, "abort %d", &i) == 1) {
			/* The data is the reason of the User-Initiated Abort cause. */
			static const char reason[] = "peer.c abort";
			struct sctp_sndinfo si = {.snd_flags = SCTP_ABORT};
			struct socket *s = get_sock(i);
			ssize_t n = s ? usrsctp_sendv(s, reason, sizeof reason - 1, NULL, 0, &si, sizeof si, SCTP_SENDV_SNDINFO, 0) : -1;
			say("abortreq %d %d", i, n < 0 ? errno : 0);
		} else if (strcmp(cmd, "status") == 0 && sscanf(line, "status %d", &i) == 1)
			cmd_status(i);
		else if (strcmp(cmd, "quit") == 0)
			break;
		else
			say("bad-command %s", cmd);
	}
	say("bye");
	fflush(stdout);
	_exit(0);
}

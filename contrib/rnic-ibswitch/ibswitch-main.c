/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rnic-ibswitch: the program around the switch core
 *
 * Each external port listens on a socket for one QEMU stream netdev
 * (-netdev stream,server=off,...).  QEMU frames every packet on such a
 * stream with a 4-byte big-endian length; so does this program.  A peer
 * connecting is the link coming up, a peer going away the link going
 * down, and a peer may come back (QEMU's reconnect option, a VM reboot).
 *
 *   rnic-ibswitch --ports N --listen unix:PREFIX | tcp:HOST:BASEPORT
 *                 [--credits N] [--guid GUID] [--desc TEXT]
 *                 [--stats FILE] [--pcap DIR]
 *
 * Port i listens on PREFIX.i or on BASEPORT + i - 1.  SIGUSR1 writes the
 * counters to the stats file (or stderr); SIGTERM and SIGINT write them
 * and exit.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "rnic-ib.h"
#include "ibswitch.h"

#define LINKTYPE_INFINIBAND 247
#define RBUF_SIZE           (4 * (IBSW_FRAME_MAX + 4))

typedef struct Conn {
    int lfd;                    /* listening socket */
    int fd;                     /* the peer, or -1 */
    char path[108];             /* unix socket path, to unlink at exit */
    uint8_t rbuf[RBUF_SIZE];
    size_t rlen;
    uint8_t wbuf[IBSW_FRAME_MAX + 4];
    size_t wlen, woff;
    FILE *pcap;
} Conn;

static IbSwitch sw;
static Conn conns[IBSW_MAX_PORTS + 1];
static volatile sig_atomic_t want_stats, want_exit;
static const char *stats_path;

static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "rnic-ibswitch: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1) {
        want_stats = 1;
    } else {
        want_exit = 1;
    }
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        die("fcntl: %s", strerror(errno));
    }
}

static int listen_unix(const char *path, char *saved)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        die("socket path too long: %s", path);
    }
    strcpy(sa.sun_path, path);
    strcpy(saved, path);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, 1) < 0) {
        die("listen on %s: %s", path, strerror(errno));
    }
    return fd;
}

static int listen_tcp(const char *host, unsigned port)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC,
                              .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE };
    struct addrinfo *ai;
    char svc[16];
    int fd, one = 1;

    snprintf(svc, sizeof(svc), "%u", port);
    if (getaddrinfo(*host ? host : NULL, svc, &hints, &ai)) {
        die("cannot resolve %s", host);
    }
    fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0) {
        die("socket: %s", strerror(errno));
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1) < 0) {
        die("listen on %s:%u: %s", host, port, strerror(errno));
    }
    freeaddrinfo(ai);
    return fd;
}

static void pcap_open(Conn *c, const char *dir, unsigned port)
{
    /* pcap global header: magic, v2.4, zone, sigfigs, snaplen, linktype */
    uint32_t hdr[6] = { 0xa1b2c3d4, 0x00040002, 0, 0, 65535,
                        LINKTYPE_INFINIBAND };
    char path[512];

    snprintf(path, sizeof(path), "%s/switch-port%u.pcap", dir, port);
    c->pcap = fopen(path, "wb");
    if (!c->pcap) {
        die("cannot write %s: %s", path, strerror(errno));
    }
    fwrite(hdr, sizeof(hdr), 1, c->pcap);
}

/* One record: the IB packet without the Ethernet header rnic puts on it. */
static void pcap_write(Conn *c, const uint8_t *frame, size_t len)
{
    struct timeval tv;
    uint32_t rec[4];

    if (!c->pcap || len <= 14) {
        return;
    }
    gettimeofday(&tv, NULL);
    rec[0] = tv.tv_sec;
    rec[1] = tv.tv_usec;
    rec[2] = rec[3] = len - 14;
    fwrite(rec, sizeof(rec), 1, c->pcap);
    fwrite(frame + 14, len - 14, 1, c->pcap);
    fflush(c->pcap);
}

static void write_stats(void)
{
    FILE *f = stats_path ? fopen(stats_path, "w") : stderr;
    unsigned i, d;

    if (!f) {
        return;
    }
    fprintf(f, "switch guid 0x%016llx lid %u ports %u credits %u\n",
            (unsigned long long)sw.cfg.guid, sw.port[0].lid, sw.cfg.nports,
            sw.cfg.credits);
    fprintf(f, "sma gets %llu sets %llu errors %llu traps %llu\n",
            (unsigned long long)sw.sma_gets, (unsigned long long)sw.sma_sets,
            (unsigned long long)sw.sma_errors,
            (unsigned long long)sw.traps_sent);
    for (i = 1; i <= sw.cfg.nports; i++) {
        const IbswPort *p = &sw.port[i];

        fprintf(f, "port %u state %u phys %u rx %llu tx %llu held %llu",
                i, p->state, p->phys, (unsigned long long)p->c.rx_pkts,
                (unsigned long long)p->c.tx_pkts,
                (unsigned long long)p->c.held);
        for (d = 0; d < IBSW_DROP__MAX; d++) {
            fprintf(f, " %s %llu", ibsw_drop_str(d),
                    (unsigned long long)p->c.drops[d]);
        }
        fprintf(f, "\n");
    }
    if (f != stderr) {
        fclose(f);
    }
}

static void conn_close(unsigned port)
{
    Conn *c = &conns[port];

    close(c->fd);
    c->fd = -1;
    c->rlen = c->wlen = c->woff = 0;
    ibsw_link(&sw, port, false);
}

/* Hand complete frames in the read buffer to the switch, in order. */
static void conn_feed(unsigned port)
{
    Conn *c = &conns[port];
    size_t off = 0;

    while (c->rlen - off >= 4 && !ibsw_input_held(&sw, port)) {
        uint32_t len = ntohl(*(uint32_t *)(c->rbuf + off));

        if (len > IBSW_FRAME_MAX) {
            /* Not a frame boundary any more: the stream is lost. */
            fprintf(stderr, "rnic-ibswitch: port %u: frame of %u bytes, "
                    "dropping the link\n", port, len);
            conn_close(port);
            return;
        }
        if (c->rlen - off < 4 + len) {
            break;
        }
        pcap_write(c, c->rbuf + off + 4, len);
        ibsw_input(&sw, port, c->rbuf + off + 4, len);
        off += 4 + len;
    }
    memmove(c->rbuf, c->rbuf + off, c->rlen - off);
    c->rlen -= off;
}

static void conn_read(unsigned port)
{
    Conn *c = &conns[port];
    ssize_t n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);

    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(port);
        return;
    }
    if (n > 0) {
        c->rlen += n;
        conn_feed(port);
    }
}

/* Move the next queued frame into the write buffer, returning a credit. */
static void conn_fill(unsigned port)
{
    Conn *c = &conns[port];
    const IbswFrame *f;
    uint32_t be;

    if (c->fd < 0 || c->wlen) {
        return;
    }
    f = ibsw_peek(&sw, port);
    if (!f) {
        return;
    }
    be = htonl(f->len);
    memcpy(c->wbuf, &be, 4);
    memcpy(c->wbuf + 4, f->data, f->len);
    c->wlen = 4 + f->len;
    c->woff = 0;
    pcap_write(c, f->data, f->len);
    ibsw_pop(&sw, port);
}

static void conn_write(unsigned port)
{
    Conn *c = &conns[port];
    ssize_t n;

    while (c->wlen) {
        n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                conn_close(port);
            }
            return;
        }
        c->woff += n;
        if (c->woff == c->wlen) {
            c->wlen = c->woff = 0;
            conn_fill(port);
        }
    }
}

/* A whole number (decimal, or hex with 0x), or die: no junk, no overflow. */
static uint64_t number(const char *s, uint64_t max)
{
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char *digits = hex ? s + 2 : s;
    uint64_t v = 0;
    int used = -1;

    if (strspn(digits, hex ? "0123456789abcdefABCDEF" : "0123456789") !=
            strlen(digits) || !*digits || strlen(digits) > (hex ? 16 : 20) ||
        sscanf(digits, hex ? "%" SCNx64 "%n" : "%" SCNu64 "%n",
               &v, &used) != 1 || digits[used] || v > max) {
        die("not a number up to %" PRIu64 ": %s", max, s);
    }
    return v;
}

static void usage(void)
{
    fprintf(stderr, "usage: rnic-ibswitch --ports N --listen unix:PREFIX|"
            "tcp:HOST:BASEPORT [--credits N] [--guid GUID] [--desc TEXT] "
            "[--stats FILE] [--pcap DIR]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "ports", required_argument, NULL, 'n' },
        { "listen", required_argument, NULL, 'l' },
        { "credits", required_argument, NULL, 'c' },
        { "guid", required_argument, NULL, 'g' },
        { "desc", required_argument, NULL, 'd' },
        { "stats", required_argument, NULL, 's' },
        { "pcap", required_argument, NULL, 'p' },
        { NULL, 0, NULL, 0 },
    };
    IbswConfig cfg = {
        .nports = 0, .credits = IBSW_CREDITS_DEFAULT,
        .guid = 0x0002c90300000001ull,
    };
    struct pollfd pfd[2 * (IBSW_MAX_PORTS + 1)];
    unsigned who[2 * (IBSW_MAX_PORTS + 1)];
    const char *listen_spec = NULL, *pcap_dir = NULL;
    struct sigaction sa = { .sa_handler = on_signal };
    unsigned i;
    int o;

    snprintf(cfg.desc, sizeof(cfg.desc), "rnic-ibswitch");
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            cfg.nports = number(optarg, IBSW_MAX_PORTS);
            break;
        case 'l':
            listen_spec = optarg;
            break;
        case 'c':
            cfg.credits = number(optarg, IBSW_CREDITS_MAX);
            break;
        case 'g':
            cfg.guid = number(optarg, UINT64_MAX);
            break;
        case 'd':
            snprintf(cfg.desc, sizeof(cfg.desc), "%s", optarg);
            break;
        case 's':
            stats_path = optarg;
            break;
        case 'p':
            pcap_dir = optarg;
            break;
        default:
            usage();
        }
    }
    if (!listen_spec || optind != argc) {
        usage();
    }
    if (ibsw_init(&sw, &cfg) < 0) {
        die("bad configuration: --ports 1..%u, --credits 1..%u",
            IBSW_MAX_PORTS, IBSW_CREDITS_MAX);
    }

    for (i = 1; i <= cfg.nports; i++) {
        Conn *c = &conns[i];
        char path[128];

        c->fd = -1;
        if (!strncmp(listen_spec, "unix:", 5)) {
            snprintf(path, sizeof(path), "%s.%u", listen_spec + 5, i);
            c->lfd = listen_unix(path, c->path);
        } else if (!strncmp(listen_spec, "tcp:", 4)) {
            char host[64];
            const char *colon = strrchr(listen_spec + 4, ':');

            if (!colon || colon - (listen_spec + 4) >= (int)sizeof(host)) {
                usage();
            }
            memcpy(host, listen_spec + 4, colon - (listen_spec + 4));
            host[colon - (listen_spec + 4)] = 0;
            c->lfd = listen_tcp(host, i - 1 +
                                number(colon + 1, 65535 - IBSW_MAX_PORTS));
        } else {
            usage();
        }
        set_nonblock(c->lfd);
        if (pcap_dir) {
            pcap_open(c, pcap_dir, i);
        }
    }
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    while (!want_exit) {
        unsigned n = 0;

        for (i = 1; i <= cfg.nports; i++) {
            Conn *c = &conns[i];

            if (c->fd < 0) {
                pfd[n] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
                who[n++] = i;
                continue;
            }
            conn_fill(i);
            pfd[n] = (struct pollfd){ .fd = c->fd };
            /* A held input is not read: that is the backpressure. */
            if (!ibsw_input_held(&sw, i) && c->rlen < sizeof(c->rbuf)) {
                pfd[n].events |= POLLIN;
            }
            if (c->wlen) {
                pfd[n].events |= POLLOUT;
            }
            who[n++] = i;
        }
        if (poll(pfd, n, 1000) < 0 && errno != EINTR) {
            die("poll: %s", strerror(errno));
        }
        if (want_stats) {
            want_stats = 0;
            write_stats();
        }
        for (i = 0; i < n; i++) {
            unsigned port = who[i];
            Conn *c = &conns[port];

            if (!pfd[i].revents) {
                continue;
            }
            if (pfd[i].fd == c->lfd) {
                int fd = accept(c->lfd, NULL, NULL);

                if (fd >= 0) {
                    set_nonblock(fd);
                    c->fd = fd;
                    ibsw_link(&sw, port, true);
                }
                continue;
            }
            if (pfd[i].revents & POLLOUT) {
                conn_write(port);
            }
            if (c->fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
                conn_read(port);
            }
        }
        /* Credits freed on one port may let another port's input go. */
        for (i = 1; i <= cfg.nports; i++) {
            if (conns[i].fd >= 0 && conns[i].rlen) {
                conn_feed(i);
            }
        }
    }
    write_stats();
    for (i = 1; i <= cfg.nports; i++) {
        if (conns[i].path[0]) {
            unlink(conns[i].path);
        }
        if (conns[i].pcap) {
            fclose(conns[i].pcap);
        }
    }
    ibsw_cleanup(&sw);
    return 0;
}

#include "socket_queue.h"

#ifdef __linux__
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/// Fills `id` with one endpoint pair; 0 when the addresses are not of one supported family.
static int fill_id(struct inet_diag_sockid *id, const struct sockaddr *src, const struct sockaddr *dst) {
    memset(id, 0, sizeof(*id));
    if (src->sa_family == AF_INET && dst->sa_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)src, *d = (const struct sockaddr_in *)dst;
        id->idiag_sport = s->sin_port;
        id->idiag_dport = d->sin_port;
        memcpy(id->idiag_src, &s->sin_addr, 4);
        memcpy(id->idiag_dst, &d->sin_addr, 4);
    } else if (src->sa_family == AF_INET6 && dst->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)src, *d = (const struct sockaddr_in6 *)dst;
        id->idiag_sport = s->sin6_port;
        id->idiag_dport = d->sin6_port;
        memcpy(id->idiag_src, &s->sin6_addr, 16);
        memcpy(id->idiag_dst, &d->sin6_addr, 16);
    } else {
        return 0;
    }
    id->idiag_if = 0;
    id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    return 1;
}

/// Asks for the one TCP socket `src` -> `dst`; its receive and send queues, or 0 when it is not found.
static int query(int fd, const struct sockaddr *src, const struct sockaddr *dst, unsigned *rqueue, unsigned *wqueue) {
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof(message));
    message.header.nlmsg_len = sizeof(message);
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = (unsigned char)src->sa_family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = ~0u;
    if (!fill_id(&message.request.id, src, dst)) return 0;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &message, sizeof(message), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) return 0;
    long buffer[1024];
    ssize_t length = recv(fd, buffer, sizeof(buffer), 0);
    if (length < 0) return 0;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buffer; NLMSG_OK(h, (size_t)length); h = NLMSG_NEXT(h, length)) {
        if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY) return 0;
        const struct inet_diag_msg *answer = NLMSG_DATA(h);
        *rqueue = answer->idiag_rqueue;
        *wqueue = answer->idiag_wqueue;
        return 1;
    }
    return 0;
}

long long stories_tcp_unread(const struct sockaddr *local, const struct sockaddr *remote) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -1;
    struct timeval wait = {.tv_sec = 1, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    unsigned ours_r = 0, ours_w = 0, theirs_r = 0, theirs_w = 0;
    long long unread = -1;
    if (query(fd, local, remote, &ours_r, &ours_w) && query(fd, remote, local, &theirs_r, &theirs_w)) {
        unread = (long long)ours_w + (long long)theirs_r;
    }
    close(fd);
    return unread;
}

#else

long long stories_tcp_unread(const struct sockaddr *local, const struct sockaddr *remote) {
    (void)local;
    (void)remote;
    return -1;
}

#endif

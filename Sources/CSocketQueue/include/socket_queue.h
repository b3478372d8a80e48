#ifndef STORIES_SOCKET_QUEUE_H
#define STORIES_SOCKET_QUEUE_H

#include <sys/socket.h>

/// Bytes sent on the TCP connection from `local` to `remote` that the program at `remote` has not read yet: this
/// end's unacknowledged send queue plus the receive queue of the other end, which must be a socket of this machine
/// (a loopback client). -1 when that cannot be known (another host, no socket diagnostics, not Linux).
long long stories_tcp_unread(const struct sockaddr *local, const struct sockaddr *remote);

#endif

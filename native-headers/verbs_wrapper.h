/* Input to native-headers/regenerate: the libibverbs API as rdma-core's own header declares it,
 * plus the POSIX calls that bounded waits on verbs/rdma_cm file descriptors need
 * (O_NONBLOCK via fcntl, timed readiness via poll, errno values). */
#include <infiniband/verbs.h>
#include <poll.h>
#include <fcntl.h>
#include <errno.h>

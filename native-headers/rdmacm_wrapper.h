/* Input to native-headers/regenerate: the librdmacm API as rdma-core's own header declares it. */
#include <rdma/rdma_cma.h>

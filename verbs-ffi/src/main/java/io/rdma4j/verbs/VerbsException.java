package io.rdma4j.verbs;

/**
 * A verbs or rdma_cm call failed. Carries the errno (0 when the failure was not reported
 * through errno) so callers can react to e.g. {@code EAGAIN} without parsing the message.
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    public VerbsException(String message) {
        super(message);
        this.errno = 0;
    }

    /** {@code what} names the call and its object, e.g. "ibv_reg_mr_iova2(pd of rxe0, 4096 bytes)". */
    public VerbsException(String what, int errno) {
        super(what + " failed: " + Errno.describe(errno));
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }

    /** Symbolic errno name such as "ENOSYS", or "errno N" for an unknown value. */
    public String errnoName() {
        return Errno.name(errno);
    }
}

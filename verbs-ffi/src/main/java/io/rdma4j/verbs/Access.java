package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

/** Memory and QP access bits ({@code enum ibv_access_flags}); combine with {@code |}. */
public final class Access {
    public static final int LOCAL_WRITE = Verbs.IBV_ACCESS_LOCAL_WRITE();
    public static final int REMOTE_WRITE = Verbs.IBV_ACCESS_REMOTE_WRITE();
    public static final int REMOTE_READ = Verbs.IBV_ACCESS_REMOTE_READ();
    public static final int REMOTE_ATOMIC = Verbs.IBV_ACCESS_REMOTE_ATOMIC();
    public static final int RELAXED_ORDERING = Verbs.IBV_ACCESS_RELAXED_ORDERING();
    /** Everything a peer may need for write, read and atomics, plus local write for receives. */
    public static final int ALL_REMOTE = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

    private Access() {
    }
}

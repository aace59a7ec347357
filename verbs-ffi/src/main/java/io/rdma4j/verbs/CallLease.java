package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;

/**
 * Keeps alive, for the length of a native call, the objects that the call reads through a
 * struct rather than takes as arguments (the completion queues named in a QP's init attributes,
 * the channel of a new CQ): the linker holds only its arguments' handles. The lease is their
 * child while the call runs, so a close of one of them on another thread meanwhile only marks
 * it closed and frees it when the lease ends, by which time the new object is its child too
 * (or was destroyed again). An object closed before the call starts fails the lease, naming it.
 */
final class CallLease extends NativeResource {
    CallLease(String call, NativeResource... used) {
        super(call, used);
    }

    @Override
    protected void release() {
        // holds no handle of its own
    }
}

package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.RdmaCm;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * errno-capturing handles for librdmacm: its calls report failure as -1 (or NULL) plus errno.
 * Initialising this class loads the libraries first.
 */
final class CmCalls {
    static {
        // the generated lookups below find symbols only once the libraries are loaded; callers
        // load them first (NativeLibrary.loadRdmaCm), so a missing one is never thrown from here
        NativeLibrary.loadRdmaCm();
    }

    static final MethodHandle CREATE_EVENT_CHANNEL = Downcalls.errnoCapturing(RdmaCm.rdma_create_event_channel$address(), RdmaCm.rdma_create_event_channel$descriptor());
    static final MethodHandle CREATE_ID = Downcalls.errnoCapturing(RdmaCm.rdma_create_id$address(), RdmaCm.rdma_create_id$descriptor());
    static final MethodHandle BIND_ADDR = Downcalls.errnoCapturing(RdmaCm.rdma_bind_addr$address(), RdmaCm.rdma_bind_addr$descriptor());
    static final MethodHandle RESOLVE_ADDR = Downcalls.errnoCapturing(RdmaCm.rdma_resolve_addr$address(), RdmaCm.rdma_resolve_addr$descriptor());
    static final MethodHandle RESOLVE_ROUTE = Downcalls.errnoCapturing(RdmaCm.rdma_resolve_route$address(), RdmaCm.rdma_resolve_route$descriptor());
    static final MethodHandle CREATE_QP = Downcalls.errnoCapturing(RdmaCm.rdma_create_qp$address(), RdmaCm.rdma_create_qp$descriptor());
    static final MethodHandle CONNECT = Downcalls.errnoCapturing(RdmaCm.rdma_connect$address(), RdmaCm.rdma_connect$descriptor());
    static final MethodHandle LISTEN = Downcalls.errnoCapturing(RdmaCm.rdma_listen$address(), RdmaCm.rdma_listen$descriptor());
    static final MethodHandle ACCEPT = Downcalls.errnoCapturing(RdmaCm.rdma_accept$address(), RdmaCm.rdma_accept$descriptor());
    static final MethodHandle DISCONNECT = Downcalls.errnoCapturing(RdmaCm.rdma_disconnect$address(), RdmaCm.rdma_disconnect$descriptor());
    static final MethodHandle GET_CM_EVENT = Downcalls.errnoCapturing(RdmaCm.rdma_get_cm_event$address(), RdmaCm.rdma_get_cm_event$descriptor());
    static final MethodHandle MIGRATE_ID = Downcalls.errnoCapturing(RdmaCm.rdma_migrate_id$address(), RdmaCm.rdma_migrate_id$descriptor());

    private CmCalls() {
    }

    /** Runs a call returning 0 / -1 + errno; throws naming {@code what} on -1. */
    static void check(int rc, MemorySegment errno, String what) {
        if (rc != 0) {
            throw new VerbsException(what, Errno.captured(errno));
        }
    }
}

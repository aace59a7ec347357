package io.rdma4j.verbs;

import io.rdma4j.verbs.ffi.Verbs;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * errno-capturing handles for the libibverbs calls that report failure as NULL or -1 plus errno,
 * built from the generated addresses and descriptors. Initialised on first use, which every
 * caller reaches only after {@link NativeLibrary#IBVERBS} loaded (see {@link RdmaDevices}).
 * Verbs that return their error code directly are called through the generated methods.
 */
final class IbvCalls {
    static {
        NativeLibrary.IBVERBS.load(); // the generated lookups below find symbols only once it is loaded
    }

    static final MethodHandle GET_DEVICE_LIST = Downcalls.errnoCapturing(Verbs.ibv_get_device_list$address(), Verbs.ibv_get_device_list$descriptor());
    static final MethodHandle OPEN_DEVICE = Downcalls.errnoCapturing(Verbs.ibv_open_device$address(), Verbs.ibv_open_device$descriptor());
    static final MethodHandle ALLOC_PD = Downcalls.errnoCapturing(Verbs.ibv_alloc_pd$address(), Verbs.ibv_alloc_pd$descriptor());
    static final MethodHandle REG_MR_IOVA2 = Downcalls.errnoCapturing(Verbs.ibv_reg_mr_iova2$address(), Verbs.ibv_reg_mr_iova2$descriptor());
    static final MethodHandle REG_DMABUF_MR = Downcalls.errnoCapturing(Verbs.ibv_reg_dmabuf_mr$address(), Verbs.ibv_reg_dmabuf_mr$descriptor());
    static final MethodHandle CREATE_COMP_CHANNEL = Downcalls.errnoCapturing(Verbs.ibv_create_comp_channel$address(), Verbs.ibv_create_comp_channel$descriptor());
    static final MethodHandle CREATE_CQ = Downcalls.errnoCapturing(Verbs.ibv_create_cq$address(), Verbs.ibv_create_cq$descriptor());
    static final MethodHandle GET_CQ_EVENT = Downcalls.errnoCapturing(Verbs.ibv_get_cq_event$address(), Verbs.ibv_get_cq_event$descriptor());
    static final MethodHandle CREATE_QP = Downcalls.errnoCapturing(Verbs.ibv_create_qp$address(), Verbs.ibv_create_qp$descriptor());
    static final MethodHandle CREATE_AH = Downcalls.errnoCapturing(Verbs.ibv_create_ah$address(), Verbs.ibv_create_ah$descriptor());

    private IbvCalls() {
    }
}

package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_mr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Registered memory: the lkey local work requests use and the rkey/address a peer targets. */
public final class MemoryRegion extends NativeResource {
    private final MemorySegment mr;
    private final MemorySegment memory;
    private final long address;
    private final long length;
    private final int lkey;
    private final int rkey;

    private MemoryRegion(ProtectionDomain pd, MemorySegment mr, MemorySegment memory, long address, String what) {
        super(what, pd);
        this.mr = mr;
        this.memory = memory;
        this.address = address;
        this.length = ibv_mr.length(mr);
        this.lkey = ibv_mr.lkey(mr);
        this.rkey = ibv_mr.rkey(mr);
    }

    static void checkRegistrable(MemorySegment memory, int access) {
        if (memory.isReadOnly() && (access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0) {
            throw new IllegalArgumentException("a read-only segment can be registered for reading only (Access.REMOTE_READ"
                    + " or no access bits): LOCAL_WRITE, REMOTE_WRITE and REMOTE_ATOMIC let the device write into it");
        }
        if (!memory.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered (the GC moves heap arrays); "
                    + "allocate it with an Arena");
        }
        if (memory.byteSize() == 0) {
            throw new IllegalArgumentException("cannot register an empty segment");
        }
        if (!memory.scope().isAlive()) {
            throw new IllegalStateException("the segment's arena is already closed");
        }
    }

    static MemoryRegion register(ProtectionDomain pd, MemorySegment memory, int access) {
        String what = "MemoryRegion of " + memory.byteSize() + " bytes at 0x" + Long.toHexString(memory.address())
                + " on " + pd.context().name();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment mr = (MemorySegment) IbvCalls.REG_MR_IOVA2.invokeExact(errno, pd.segment(), memory,
                    memory.byteSize(), memory.address(), access);
            if (mr.equals(MemorySegment.NULL)) {
                throw registrationFailed(what, Errno.captured(errno));
            }
            return Results.own(mr.reinterpret(ibv_mr.sizeof()), Verbs::ibv_dereg_mr,
                    h -> new MemoryRegion(pd, h, memory, memory.address(), what));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The failure of ibv_reg_mr for {@code what}; ENOMEM there is nearly always the locked-memory limit. */
    static VerbsException registrationFailed(String what, int errno) {
        return new VerbsException("ibv_reg_mr_iova2 for " + what + (errno == Verbs.ENOMEM()
                ? " (ENOMEM here usually means RLIMIT_MEMLOCK is too low: ulimit -l)" : ""), errno);
    }

    static MemoryRegion registerDmabuf(ProtectionDomain pd, int fd, long offset, long length, long iova, int access) {
        String what = "MemoryRegion of dma-buf fd " + fd + " [" + offset + ", +" + length + ") on " + pd.context().name();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment mr = (MemorySegment) IbvCalls.REG_DMABUF_MR.invokeExact(errno, pd.segment(), offset, length,
                    iova, fd, access);
            return Results.own(Results.checkPointer(mr, errno, "ibv_reg_dmabuf_mr for " + what, ibv_mr.sizeof()),
                    Verbs::ibv_dereg_mr, h -> new MemoryRegion(pd, h, null, iova, what));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public int lkey() {
        return lkey;
    }

    public int rkey() {
        return rkey;
    }

    /** The address peers use in RDMA read/write/atomic work requests (the iova). */
    public long address() {
        return address;
    }

    public long length() {
        return length;
    }

    /** The registered memory, or null for a dma-buf region. */
    public MemorySegment memory() {
        return memory;
    }

    @Override
    protected void release() {
        Results.checkReturn(Verbs.ibv_dereg_mr(mr), "ibv_dereg_mr(" + description() + ")");
    }
}

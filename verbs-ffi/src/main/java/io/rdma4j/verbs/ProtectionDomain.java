package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_pd;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A protection domain: the scope in which memory regions, QPs and address handles can be used together. */
public final class ProtectionDomain extends NativeResource {
    private final DeviceContext context;
    private final MemorySegment pd;
    /** The handle that the creation of objects in this PD passes: revoked on close. */
    private final ScopedHandle scoped;

    private ProtectionDomain(DeviceContext context, MemorySegment pd) {
        super("ProtectionDomain on " + context.name(), context);
        this.context = context;
        this.pd = pd;
        this.scoped = new ScopedHandle(pd);
    }

    static ProtectionDomain allocate(DeviceContext context) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment pd = (MemorySegment) IbvCalls.ALLOC_PD.invokeExact(errno, context.segment());
            return Results.own(Results.checkPointer(pd, errno, "ibv_alloc_pd(" + context.name() + ")", ibv_pd.sizeof()),
                    Verbs::ibv_dealloc_pd, h -> new ProtectionDomain(context, h));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    public DeviceContext context() {
        return context;
    }

    MemorySegment segment() {
        ensureOpen();
        return scoped.segment();
    }

    /**
     * Registers native memory of any size (ibv_reg_mr_iova2 takes a size_t length, so regions
     * past 2 GiB work) with its virtual address as the iova, so remote peers address it by
     * {@code memory.address()}. The memory must stay alive until the region is closed.
     */
    public MemoryRegion register(MemorySegment memory, int access) {
        MemoryRegion.checkRegistrable(memory, access);
        return MemoryRegion.register(this, memory, access);
    }

    /**
     * Registers {@code length} bytes at {@code offset} of a dma-buf (e.g. GPU memory exported by
     * its driver), addressed remotely as {@code iova}.
     */
    public MemoryRegion registerDmabuf(int fd, long offset, long length, long iova, int access) {
        Checks.nonNegative("fd", fd);
        Checks.inRange("offset", offset, 0, Long.MAX_VALUE);
        Checks.positive("length", length);
        return MemoryRegion.registerDmabuf(this, fd, offset, length, iova, access);
    }

    public QueuePair createQueuePair(QpType type, CompletionQueue sendCq, CompletionQueue recvCq, QpCapabilities caps) {
        return QueuePair.create(this, type, sendCq, recvCq, caps);
    }

    public AddressHandle createAddressHandle(AddressHandle.Target target) {
        return AddressHandle.create(this, target);
    }

    /**
     * A close while another thread creates an object in this PD is refused rather than freeing
     * the PD under the creation (the new object only becomes a child, which keeps it alive, once
     * the creating call returned).
     */
    @Override
    protected void revokeAccess() {
        scoped.revoke(description());
    }

    @Override
    protected void release() {
        Results.checkReturn(Verbs.ibv_dealloc_pd(pd), "ibv_dealloc_pd(" + context.name() + ")");
    }
}

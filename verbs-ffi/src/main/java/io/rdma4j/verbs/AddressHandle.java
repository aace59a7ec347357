package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_ah;
import io.rdma4j.verbs.ffi.ibv_ah_attr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** The route to a UD peer ({@code struct ibv_ah}), named in each UD send. */
public final class AddressHandle extends NativeResource {
    private final MemorySegment ah;

    /**
     * Where a UD peer is: port to send from, its LID (InfiniBand) or GID (RoCE; null on IB) and
     * the source GID index to use with it.
     */
    public record Target(int port, int lid, Gid gid, int gidIndex, int hopLimit, int trafficClass, int serviceLevel) {
        public Target {
            Checks.inRange("port", port, 1, 255);
            Checks.inRange("lid", lid, 0, 0xffff);
            Checks.inRange("gidIndex", gidIndex, -1, 255);
            Checks.inRange("hopLimit", hopLimit, 0, 255);
            Checks.inRange("trafficClass", trafficClass, 0, 255);
            Checks.inRange("serviceLevel", serviceLevel, 0, 15);
        }

        public static Target roce(int port, Gid gid, int gidIndex) {
            return new Target(port, 0, gid, gidIndex, 64, 0, 0);
        }
    }

    private AddressHandle(ProtectionDomain pd, MemorySegment ah, Target target) {
        super("AddressHandle to " + (target.gid() != null ? target.gid() : "LID " + target.lid()) + " on "
                + pd.context().name(), pd);
        this.ah = ah;
    }

    static AddressHandle create(ProtectionDomain pd, Target t) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_ah_attr.allocate(arena);
            AddressVector.fill(attr, t.port(), t.lid(), t.gid(), t.gidIndex(), t.hopLimit(), t.trafficClass(),
                    t.serviceLevel());
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment ah = (MemorySegment) IbvCalls.CREATE_AH.invokeExact(errno, pd.segment(), attr);
            return Results.own(Results.checkPointer(ah, errno, "ibv_create_ah(" + pd.context().name() + ")",
                    ibv_ah.sizeof()), Verbs::ibv_destroy_ah, h -> new AddressHandle(pd, h, t));
        } catch (Throwable e) {
            throw NativeCalls.rethrow(e);
        }
    }

    MemorySegment segment() {
        ensureOpen();
        return ah;
    }

    @Override
    protected void release() {
        Results.checkReturn(Verbs.ibv_destroy_ah(ah), "ibv_destroy_ah(" + description() + ")");
    }
}

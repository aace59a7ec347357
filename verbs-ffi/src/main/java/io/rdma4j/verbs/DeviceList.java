package io.rdma4j.verbs;

import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The array ibv_get_device_list returns. libibverbs wants devices opened while their list is
 * alive, so opening happens here and the list is freed on close.
 */
final class DeviceList implements AutoCloseable {
    private final MemorySegment list;
    private final int count;

    private DeviceList(MemorySegment list, int count) {
        this.list = list;
        this.count = count;
    }

    /** Requires libibverbs to be loaded; throws VerbsException carrying the errno on failure. */
    static DeviceList get() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment num = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) IbvCalls.GET_DEVICE_LIST.invokeExact(errno, num);
            int n = num.get(JAVA_INT, 0);
            list = Results.checkPointer(list, errno, "ibv_get_device_list", ADDRESS.byteSize() * (n + 1L));
            return new DeviceList(list, n);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    int size() {
        return count;
    }

    MemorySegment device(int i) {
        return list.getAtIndex(ADDRESS, i);
    }

    String name(int i) {
        return Verbs.ibv_get_device_name(device(i)).getString(0);
    }

    DeviceInfo info(int i) {
        // The GUID is big-endian (__be64); ibv_devices prints it in wire order.
        return new DeviceInfo(name(i), Long.reverseBytes(Verbs.ibv_get_device_guid(device(i))));
    }

    List<DeviceInfo> infos() {
        List<DeviceInfo> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(info(i));
        }
        return out;
    }

    @Override
    public void close() {
        Verbs.ibv_free_device_list(list);
    }
}

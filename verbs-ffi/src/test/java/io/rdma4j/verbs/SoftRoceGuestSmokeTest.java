package io.rdma4j.verbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import io.rdma4j.verbs.testing.SoftRoce;

/**
 * Proves the Soft-RoCE test harness itself: inside the guest, libibverbs (called through raw
 * FFM, independent of this project's verbs layer) must see and open the kernel's rxe devices.
 */
@Tag(SoftRoce.TAG)
class SoftRoceGuestSmokeTest {

    private static final Linker LINKER = Linker.nativeLinker();

    @Test
    void libibverbsListsAndOpensTheKernelDevices() throws Throwable {
        List<String> kernelDevices = SoftRoce.requireDeviceOrSkip();
        assertTrue(Files.exists(Path.of("/dev/infiniband/uverbs0")), "/dev/infiniband/uverbs0 is missing");
        if (SoftRoce.inGuest()) {
            List<String> created = SoftRoce.guestDevices();
            assertTrue(created.stream().anyMatch(d -> d.startsWith("rxe")), "no rxe device in " + created);
            assertEquals(created.stream().sorted().toList(), kernelDevices,
                    "the guest's devices are not the ones softroce-vm says it created");
        }

        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup ibv = SymbolLookup.libraryLookup("libibverbs.so.1", arena);
            MethodHandle getDeviceList = downcall(ibv, "ibv_get_device_list", FunctionDescriptor.of(ADDRESS, ADDRESS));
            MethodHandle freeDeviceList = downcall(ibv, "ibv_free_device_list", FunctionDescriptor.ofVoid(ADDRESS));
            MethodHandle getDeviceName = downcall(ibv, "ibv_get_device_name", FunctionDescriptor.of(ADDRESS, ADDRESS));
            MethodHandle getDeviceGuid = downcall(ibv, "ibv_get_device_guid", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
            MethodHandle openDevice = downcall(ibv, "ibv_open_device", FunctionDescriptor.of(ADDRESS, ADDRESS));
            MethodHandle closeDevice = downcall(ibv, "ibv_close_device", FunctionDescriptor.of(JAVA_INT, ADDRESS));

            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment list = (MemorySegment) getDeviceList.invokeExact(count);
            assertNotEquals(MemorySegment.NULL, list, "ibv_get_device_list returned NULL");
            try {
                int n = count.get(JAVA_INT, 0);
                MemorySegment devices = list.reinterpret(ADDRESS.byteSize() * n);
                List<String> names = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    MemorySegment device = devices.getAtIndex(ADDRESS, i);
                    MemorySegment name = (MemorySegment) getDeviceName.invokeExact(device);
                    String deviceName = name.reinterpret(Long.MAX_VALUE).getString(0);
                    names.add(deviceName);

                    long guid = (long) getDeviceGuid.invokeExact(device);
                    assertNotEquals(0L, guid, deviceName + " has a zero node GUID");
                    MemorySegment context = (MemorySegment) openDevice.invokeExact(device);
                    assertNotEquals(MemorySegment.NULL, context, "ibv_open_device(" + deviceName + ") failed");
                    assertEquals(0, (int) closeDevice.invokeExact(context), "ibv_close_device(" + deviceName + ")");
                }
                assertEquals(kernelDevices, names.stream().sorted().toList(),
                        "libibverbs and /sys/class/infiniband disagree");
            } finally {
                freeDeviceList.invokeExact(list);
            }
        }
    }

    private static MethodHandle downcall(SymbolLookup lookup, String symbol, FunctionDescriptor descriptor) {
        MemorySegment address = lookup.find(symbol)
                .orElseThrow(() -> new AssertionError("libibverbs.so.1 has no symbol " + symbol));
        return LINKER.downcallHandle(address, descriptor);
    }
}

package io.rdma4j.cuda;

import io.rdma4j.nativesupport.internal.LibC;
import io.rdma4j.cuda.testing.StubCuda;
import io.rdma4j.cuda.ffi.CudaDriver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The CUDA layer against the stub driver with two fake devices (own JVM). The stub checks what a
 * driver checks (init first, a current context per thread, copies inside live allocations,
 * aligned dma-buf ranges), runs queued stream work asynchronously in stream order (with an
 * optional delay per copy) and counts calls and live resources, so these tests see whether the
 * Java layer calls the driver correctly, orders and awaits its work, maps its errors and frees
 * what it allocates. They say
 * nothing about real GPU behaviour; CudaRealDriverTest and scripts/gpu-check do.
 */
@EnabledIfSystemProperty(named = "rdma4j.test.jvm", matches = "stub-driver",
        disabledReason = "needs a JVM of its own: runs in the surefire execution jvm-stub-driver")
class CudaStubDriverTest {
    private static StubCuda stub;
    private CudaContext context;

    @BeforeAll
    static void twoFakeDevices() {
        stub = StubCuda.install();
        stub.configure(0, 2, 12040);
    }

    @BeforeEach
    void retain() {
        context = Cuda.device(0).retainPrimaryContext();
    }

    @AfterEach
    void release() {
        context.close();
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + seed + (i >>> 8));
        }
        return b;
    }

    @Test
    void probeFindsTheStubAndItsDevices() {
        CudaProbe probe = Cuda.probe();
        assertEquals(CudaStatus.AVAILABLE, probe.status(), probe.explanation());
        assertEquals(2, probe.deviceCount());
        assertEquals(12040, probe.driverVersion());
        assertEquals(stub.library, probe.library().orElseThrow());
        assertEquals(2, Cuda.devices().size());
    }

    @Test
    void deviceAttributesComeFromTheDriver() {
        CudaDevice d = Cuda.device(1);
        assertEquals(1, d.ordinal());
        assertEquals("rdma4j stub libcuda device 1 (not a GPU)", d.name());
        assertEquals("0000:18:00.0", d.pciBusId());
        assertEquals(new ComputeCapability(9, 0), d.computeCapability());
        assertTrue(d.computeCapability().atLeast(8, 0));
        assertEquals(132, d.multiprocessorCount());
        assertTrue(d.unifiedAddressing());
        assertTrue(d.dmaBufSupported());
        assertTrue(d.gpuDirectRdmaSupported());
        stub.inject("cuDeviceGetAttribute", CudaDriver.CUDA_ERROR_INVALID_VALUE(), 1);
        assertFalse(d.gpuDirectRdmaSupported(), "a driver that does not know the attribute lacks the feature");
        stub.inject("cuDeviceGetAttribute", CudaDriver.CUDA_ERROR_INVALID_VALUE(), 1);
        assertThrows(CudaException.class, d::multiprocessorCount, "a plain attribute query still reports the error");
        assertEquals(1L << 30, d.totalMemory());
        assertThrows(IllegalArgumentException.class, () -> Cuda.device(-1));
        CudaException e = assertThrows(CudaException.class, () -> Cuda.device(2));
        assertEquals(101, e.result());
        assertEquals("CUDA_ERROR_INVALID_DEVICE", e.errorName());
        assertTrue(e.getMessage().contains("cuDeviceGet (ordinal 2) failed: CUDA_ERROR_INVALID_DEVICE (101): "
                + "invalid device ordinal"), e.getMessage());
    }

    @Test
    void driverErrorsCarryCodeNameAndDescription() {
        stub.inject("cuMemAlloc_v2", 2, 1);
        CudaException e = assertThrows(CudaException.class, () -> context.allocate(4096));
        assertEquals(2, e.result());
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.errorName());
        assertEquals("out of memory", e.errorString());
        assertEquals("cuMemAlloc_v2", e.function());
        assertEquals("cuMemAlloc_v2 (4096 bytes on CUDA device 0) failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
                e.getMessage());
        try (DeviceBuffer ok = context.allocate(4096)) {
            assertEquals(4096, ok.byteSize(), "the injected failure was for one call only");
        }
    }

    @Test
    void codesTheDriverDoesNotKnowStillReportTheNumber() {
        stub.inject("cuMemAlloc_v2", 12345, 1);
        CudaException e = assertThrows(CudaException.class, () -> context.allocate(4096));
        assertEquals(12345, e.result());
        assertEquals("CUresult 12345", e.errorName());
        assertTrue(e.errorString().startsWith("no description"), e.errorString());
    }

    @Test
    void headerNamesAreTheFallbackWhenTheDriverCannotDescribeAnError() {
        try (DeviceBuffer b = context.allocate(4096)) {
            stub.inject("cuMemsetD8_v2", 700, 1);
            stub.inject("cuGetErrorName", 3, 1);
            stub.inject("cuGetErrorString", 3, 1);
            CudaException e = assertThrows(CudaException.class, () -> b.fill((byte) 1));
            assertEquals(700, e.result());
            assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", e.errorName(), "from native-headers/cuda_driver.h");
            assertTrue(e.errorString().startsWith("no description"), e.errorString());
        }
    }

    @Test
    void copiesRoundTripThroughDeviceMemoryAndSlices() {
        int n = (1 << 20) + 123;
        byte[] data = pattern(n, 7);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer a = context.allocate(n);
             DeviceBuffer b = context.allocate(n)) {
            MemorySegment src = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            MemorySegment dst = arena.allocate(n);
            a.copyFromHost(src);
            b.copyFrom(a);
            b.copyToHost(dst);
            assertArrayEquals(data, dst.toArray(ValueLayout.JAVA_BYTE));

            MemorySegment part = arena.allocate(5000);
            b.slice(1000, 5000).copyToHost(part);
            assertEquals(-1, part.mismatch(src.asSlice(1000, 5000)));

            a.copyFromHost(src, 10, 20, 30); // a[20..50) = data[10..40)
            a.copyToHost(20, dst, 0, 30);
            assertEquals(-1, dst.asSlice(0, 30).mismatch(src.asSlice(10, 30)));

            b.slice(100, 50).fill((byte) 0x3C);
            b.copyToHost(dst);
            assertEquals(data[99], dst.get(ValueLayout.JAVA_BYTE, 99), "memset of a slice stays inside it");
            assertEquals(0x3C, dst.get(ValueLayout.JAVA_BYTE, 100));
            assertEquals(0x3C, dst.get(ValueLayout.JAVA_BYTE, 149));
            assertEquals(data[150], dst.get(ValueLayout.JAVA_BYTE, 150));
        }
    }

    @Test
    void asyncCopiesUseTheStreamAndRespectOffsets() {
        byte[] data = pattern(8192, 3);
        long asyncCalls = stub.calls("cuMemcpyHtoDAsync_v2") + stub.calls("cuMemcpyDtoHAsync_v2");
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer d = context.allocate(8192);
             PinnedHostBuffer pinned = context.allocatePinned(8192);
             CudaStream stream = context.createStream()) {
            MemorySegment src = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            d.fillAsync((byte) 0, stream);
            d.copyFromHostAsync(src, 4096, 1, 4000, stream);
            d.copyToHostAsync(0, pinned.segment(), 0, 8192, stream);
            stream.synchronize(Duration.ofSeconds(5));
            MemorySegment got = pinned.segment();
            assertEquals(0, got.get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(-1, got.asSlice(1, 4000).mismatch(src.asSlice(4096, 4000)));
            assertEquals(0, got.get(ValueLayout.JAVA_BYTE, 4001));
            assertEquals(asyncCalls + 2, stub.calls("cuMemcpyHtoDAsync_v2") + stub.calls("cuMemcpyDtoHAsync_v2"));
        }
    }

    @Test
    void badArgumentsAreRejectedBeforeTheDriverSeesThem() {
        long driverCopies = stub.calls("cuMemcpyHtoD_v2") + stub.calls("cuMemcpyDtoH_v2") + stub.calls("cuMemcpyDtoD_v2");
        try (Arena arena = Arena.ofConfined(); DeviceBuffer b = context.allocate(1024);
             DeviceBuffer big = context.allocate(2048)) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> context.allocate(0)).getMessage().contains("bytes"));
            assertThrows(IllegalArgumentException.class, () -> context.allocate(-5));
            assertThrows(IllegalArgumentException.class, () -> context.allocatePinned(-1));
            assertThrows(IndexOutOfBoundsException.class, () -> b.slice(-1, 10));
            assertThrows(IndexOutOfBoundsException.class, () -> b.slice(0, 1025));
            assertThrows(IndexOutOfBoundsException.class, () -> b.slice(1024, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> b.slice(Long.MAX_VALUE, 2));
            assertThrows(IndexOutOfBoundsException.class, () -> b.slice(10, 100).slice(50, 51));
            assertEquals(0, b.slice(1024, 0).byteSize());
            MemorySegment host = arena.allocate(2048);
            var oob = assertThrows(IndexOutOfBoundsException.class, () -> b.copyFromHost(host));
            assertTrue(oob.getMessage().contains("DeviceBuffer"), oob.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> b.copyToHost(1000, host, 0, 25));
            assertThrows(IndexOutOfBoundsException.class, () -> b.copyToHost(0, host, 2040, 10));
            assertThrows(IndexOutOfBoundsException.class, () -> b.copyFromHost(host, -1, 0, 10));
            assertThrows(IndexOutOfBoundsException.class, () -> b.copyFrom(big));
            var heap = assertThrows(IllegalArgumentException.class, () -> b.copyFromHost(MemorySegment.ofArray(new byte[16])));
            assertTrue(heap.getMessage().contains("heap segment"), heap.getMessage());
            assertThrows(IllegalArgumentException.class, () -> b.copyToHost(host.asSlice(0, 16).asReadOnly()));
        }
        assertEquals(driverCopies, stub.calls("cuMemcpyHtoD_v2") + stub.calls("cuMemcpyDtoH_v2")
                + stub.calls("cuMemcpyDtoD_v2"), "no rejected call reached the driver");
    }

    @Test
    void closedBuffersAreRejectedAndFreedOnce() {
        int live = stub.liveDeviceAllocations();
        long frees = stub.calls("cuMemFree_v2");
        DeviceBuffer b = context.allocate(4096);
        DeviceBuffer slice = b.slice(0, 4096);
        assertTrue(slice.isSlice() && !b.isSlice());
        slice.close();
        assertFalse(b.isClosed(), "closing a slice does not free the allocation");
        b.fill((byte) 1);
        assertEquals(live + 1, stub.liveDeviceAllocations());
        b.close();
        b.close();
        assertEquals(frees + 1, stub.calls("cuMemFree_v2"));
        assertEquals(live, stub.liveDeviceAllocations());
        assertTrue(slice.isClosed());
        var e = assertThrows(IllegalStateException.class, () -> b.fill((byte) 0));
        assertTrue(e.getMessage().contains("DeviceBuffer") && e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> slice.copyToHost(Arena.ofAuto().allocate(16)));
        assertThrows(IllegalStateException.class, () -> b.slice(0, 1));
        assertThrows(IllegalStateException.class, b::exportDmaBuf);
    }

    @Test
    void theContextKeepsItsRetainUntilEverythingMadeOnItIsClosed() {
        int buffers = stub.liveDeviceAllocations();
        int pinned = stub.liveHostAllocations();
        int streams = stub.liveStreams();
        int events = stub.liveEvents();
        CudaContext ctx = Cuda.device(1).retainPrimaryContext();
        assertEquals(1, stub.primaryContextRetains(1));
        DeviceBuffer b = ctx.allocate(100);
        PinnedHostBuffer p = ctx.allocatePinned(100);
        CudaStream s = ctx.createStream();
        CudaEvent e = ctx.createEvent();
        assertEquals(buffers + 1, stub.liveDeviceAllocations());
        assertEquals(pinned + 1, stub.liveHostAllocations());
        ctx.close();
        ctx.close();
        assertEquals(1, stub.primaryContextRetains(1), "the buffers, stream and event still use the context");
        assertThrows(IllegalStateException.class, () -> ctx.allocate(1), "nothing new on a closed context");
        b.fill((byte) 7); // still usable
        assertTrue(s.isIdle());
        b.close();
        p.close();
        s.close();
        assertEquals(1, stub.primaryContextRetains(1), "the event still uses it");
        e.close();
        assertEquals(0, stub.primaryContextRetains(1), "the last one out releases the retain");
        assertEquals(buffers, stub.liveDeviceAllocations());
        assertEquals(pinned, stub.liveHostAllocations());
        assertEquals(streams, stub.liveStreams());
        assertEquals(events, stub.liveEvents());
        assertThrows(IllegalStateException.class, s::isIdle);
    }

    @Test
    void everyThreadGetsTheContextMadeCurrent() throws InterruptedException {
        try (DeviceBuffer b = context.allocate(64); Arena arena = Arena.ofShared()) {
            MemorySegment host = arena.allocate(64);
            AtomicInteger rawResult = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    // The stub, like the driver, needs a current context on this thread...
                    rawResult.set(CudaDriver.cuMemsetD8_v2(b.address(), (byte) 9, 64));
                    // ...which the CUDA layer sets itself.
                    b.fill((byte) 9);
                    b.copyToHost(host);
                } catch (Throwable x) {
                    failure.set(x);
                }
            });
            t.start();
            t.join(10_000);
            assertNull(failure.get());
            assertEquals(201, rawResult.get(), "CUDA_ERROR_INVALID_CONTEXT without a current context");
            assertEquals(9, host.get(ValueLayout.JAVA_BYTE, 63));
        }
    }

    @Test
    void pinnedMemoryIsAPlainSegmentUntilFreed() {
        int live = stub.liveHostAllocations();
        PinnedHostBuffer p = context.allocatePinned(8192);
        MemorySegment s = p.segment();
        assertEquals(8192, s.byteSize());
        assertTrue(s.isNative());
        assertEquals(0, s.address() % 4096, "page-locked memory is page aligned");
        s.set(ValueLayout.JAVA_LONG, 8184, 0x1122334455667788L);
        assertEquals(0x1122334455667788L, s.get(ValueLayout.JAVA_LONG, 8184));
        assertEquals(CudaMemoryType.HOST, p.memoryType());
        p.close();
        p.close();
        assertEquals(live, stub.liveHostAllocations());
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0), "freed memory is not readable");
        assertThrows(IllegalStateException.class, p::segment);
    }

    /**
     * A native call holds the arena of the segments it was given for as long as it runs; here libc's
     * qsort, whose comparator (an upcall) blocks until the test lets it go.
     */
    @Test
    void aPinnedBufferThatANativeCallStillReadsIsNotFreedUnderIt() throws Exception {
        int live = stub.liveHostAllocations();
        PinnedHostBuffer p = context.allocatePinned(4096);
        p.segment().set(ValueLayout.JAVA_LONG, 0, 2);
        p.segment().set(ValueLayout.JAVA_LONG, 8, 1);
        CountDownLatch inCall = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicReference<Throwable> sortFailed = new AtomicReference<>();
        Thread sorter = Thread.ofPlatform().start(() -> {
            try {
                BlockingSort.sortTwoLongs(p.segment(), inCall, letGo);
            } catch (Throwable t) {
                sortFailed.set(t);
            }
        });
        try {
            assertTrue(inCall.await(10, java.util.concurrent.TimeUnit.SECONDS), "qsort called its comparator");
            var refused = assertThrows(IllegalStateException.class, p::close);
            assertTrue(refused.getMessage().contains("PinnedHostBuffer") && refused.getMessage().contains("in use"),
                    refused.getMessage());
            assertFalse(p.isClosed(), "a refused close leaves the buffer open");
            assertEquals(live + 1, stub.liveHostAllocations(), "the memory under the running call is not freed");
        } finally {
            letGo.countDown();
            sorter.join(10_000);
        }
        assertNull(sortFailed.get());
        assertEquals(1, p.segment().get(ValueLayout.JAVA_LONG, 0), "the call finished on live memory");
        p.close();
        assertTrue(p.isClosed());
        assertEquals(live, stub.liveHostAllocations(), "closed again after the call, the memory is freed");
    }

    /** qsort of two longs whose first comparison waits for a latch: a native call that runs as long as a test wants. */
    private static final class BlockingSort {
        private static CountDownLatch entered;
        private static CountDownLatch proceed;

        private static int compare(MemorySegment a, MemorySegment b) {
            entered.countDown();
            try {
                proceed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Long.compare(a.reinterpret(8).get(ValueLayout.JAVA_LONG, 0), b.reinterpret(8).get(ValueLayout.JAVA_LONG, 0));
        }

        static synchronized void sortTwoLongs(MemorySegment longs, CountDownLatch inCall, CountDownLatch letGo) throws Throwable {
            entered = inCall;
            proceed = letGo;
            Linker linker = Linker.nativeLinker();
            MethodHandle qsort = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                    FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment comparator = linker.upcallStub(
                        MethodHandles.lookup().findStatic(BlockingSort.class, "compare", MethodType.methodType(
                                int.class, MemorySegment.class, MemorySegment.class)),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS), arena);
                qsort.invokeExact(longs, 2L, 8L, comparator);
            }
        }
    }

    @Test
    void hostRegistrationIsUndoneOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(16384, 4096);
            long unregisters = stub.calls("cuMemHostUnregister");
            HostRegistration r = context.registerHost(memory);
            CudaException twice = assertThrows(CudaException.class, () -> context.registerHost(memory));
            assertEquals("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", twice.errorName());
            r.close();
            r.close();
            assertEquals(unregisters + 1, stub.calls("cuMemHostUnregister"));
            assertThrows(IllegalArgumentException.class, () -> context.registerHost(MemorySegment.ofArray(new byte[8])));
        }
    }

    @Test
    void hostRegistrationIsUndoneFromAnotherThreadAndAfterItsMemoryWasFreed() throws InterruptedException {
        int live = stub.liveHostAllocations();
        try (Arena confined = Arena.ofConfined()) {
            HostRegistration r = context.registerHost(confined.allocate(8192, 4096));
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    r.close();
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            closer.start();
            closer.join();
            assertNull(failure.get(), "a registration of thread-confined memory closed by another thread");
            assertEquals(live, stub.liveHostAllocations());
        }
        Arena early = Arena.ofConfined();
        HostRegistration r = context.registerHost(early.allocate(8192, 4096));
        early.close();
        r.close();
        assertEquals(live, stub.liveHostAllocations(), "a registration that outlived its arena");
    }

    @Test
    void pointerAttributesTellDeviceFromHostMemory() {
        try (CudaContext second = Cuda.device(1).retainPrimaryContext();
             DeviceBuffer b = second.allocate(4096);
             Arena arena = Arena.ofConfined()) {
            assertEquals(CudaMemoryType.DEVICE, b.memoryType());
            assertEquals(1, b.deviceOrdinal());
            assertEquals(1, b.slice(100, 10).deviceOrdinal());
            assertTrue(CudaPointer.memoryType(arena.allocate(64).address()).isEmpty(), "pageable memory is unknown");
        }
    }

    @Test
    void eventsTimeTheIntervalBetweenTheirRecords() throws InterruptedException {
        try (CudaStream s = context.createStream();
             CudaEvent start = context.createEvent();
             CudaEvent end = context.createEvent();
             CudaEvent untimed = context.createEvent(false);
             CudaEvent neverRecorded = context.createEvent()) {
            start.record(s);
            Thread.sleep(30);
            end.record(s);
            end.synchronize(Duration.ofSeconds(5));
            assertTrue(end.isComplete());
            float ms = end.elapsedMillisSince(start);
            assertTrue(ms >= 25 && ms < 10_000, "elapsed " + ms + " ms");
            untimed.record(s);
            assertThrows(IllegalStateException.class, () -> untimed.elapsedMillisSince(start));
            CudaException e = assertThrows(CudaException.class, () -> neverRecorded.elapsedMillisSince(start));
            assertEquals("CUDA_ERROR_INVALID_HANDLE", e.errorName());
            s.waitFor(end); // an event already complete: the stream passes it at once
            s.synchronize(Duration.ofSeconds(5));
            assertTrue(s.isIdle());
        }
    }

    /** A delay per queued copy long against what the test does between queueing and looking. */
    private static final int SLOW_COPY_MICROS = 100_000;

    @Test
    void queuedCopiesAreDoneOnlyWhenTheStreamOrAnEventAfterThemSaysSo() {
        byte[] data = pattern(4096, 5);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer d = context.allocate(4096);
             PinnedHostBuffer out = context.allocatePinned(4096);
             CudaStream s = context.createStream();
             CudaEvent copied = context.createEvent(false)) {
            MemorySegment src = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            out.segment().fill((byte) 0);
            stub.timing(SLOW_COPY_MICROS, false);
            d.copyFromHostAsync(src, 0, 0, 4096, s);
            d.copyToHostAsync(0, out.segment(), 0, 4096, s);
            copied.record(s);
            assertFalse(s.isIdle(), "two delayed copies are still queued");
            assertFalse(copied.isComplete());
            assertEquals(0, out.segment().get(ValueLayout.JAVA_BYTE, 1), "nothing copied back yet");
            copied.synchronize(Duration.ofSeconds(10));
            assertTrue(s.isIdle());
            assertEquals(-1, out.segment().mismatch(src));
        } finally {
            stub.timing(0, false);
        }
    }

    /**
     * The ordering DeviceAllReduce relies on, with each side of it removed: a copy on one stream
     * reads what a copy on another stream wrote only if it waits for an event recorded after
     * that write; without the wait (or with the stub told to skip waits) it reads stale memory.
     */
    @Test
    void aCopyOrderedBehindAnotherStreamsEventSeesItsWriteAndWithoutTheWaitDoesNot() {
        byte[] data = pattern(4096, 9);
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer d = context.allocate(4096);
             PinnedHostBuffer out = context.allocatePinned(4096);
             CudaStream producer = context.createStream();
             CudaStream consumer = context.createStream();
             CudaEvent written = context.createEvent(false)) {
            MemorySegment src = arena.allocateFrom(ValueLayout.JAVA_BYTE, data);
            stub.timing(SLOW_COPY_MICROS, false);
            assertEquals("written", produceThenConsume(d, src, out, producer, consumer, written, true),
                    "the consumer waited for the producer's event");
            assertEquals("stale", produceThenConsume(d, src, out, producer, consumer, written, false),
                    "without the wait the consumer's copy ran before the producer's write");
            stub.timing(SLOW_COPY_MICROS, true);
            assertEquals("stale", produceThenConsume(d, src, out, producer, consumer, written, true),
                    "with waits skipped by the stub the wait is as good as missing");
        } finally {
            stub.timing(0, false);
        }
    }

    /**
     * Zeroes {@code d}, then queues on {@code producer} a memset and the copy of {@code src} into
     * {@code d} (two delays), records {@code written}, and on {@code consumer} (one delay)
     * optionally waits for it and copies {@code d} to {@code out}. Once both streams are done,
     * says what {@code out} got: "written" ({@code src}), "stale" (the zeroes before) or "torn".
     */
    private static String produceThenConsume(DeviceBuffer d, MemorySegment src, PinnedHostBuffer out, CudaStream producer,
                                           CudaStream consumer, CudaEvent written, boolean wait) {
        d.fill((byte) 0);
        out.segment().fill((byte) 0x77);
        d.fillAsync((byte) 0, producer);
        d.copyFromHostAsync(src, 0, 0, src.byteSize(), producer);
        written.record(producer);
        if (wait) {
            consumer.waitFor(written);
        }
        d.copyToHostAsync(0, out.segment(), 0, src.byteSize(), consumer);
        consumer.synchronize(Duration.ofSeconds(10));
        producer.synchronize(Duration.ofSeconds(10));
        MemorySegment got = out.segment().asSlice(0, src.byteSize());
        if (got.mismatch(src) == -1) {
            return "written";
        }
        return got.mismatch(Arena.ofAuto().allocate(src.byteSize())) == -1 ? "stale" : "torn";
    }

    @Test
    void waitsAreBoundedAndNameWhatTheyWaitedFor() {
        try (CudaStream s = context.createStream(); CudaEvent ev = context.createEvent(false)) {
            stub.inject("cuStreamQuery", 600, -1);
            assertFalse(s.isIdle());
            long t0 = System.nanoTime();
            CudaTimeoutException e = assertThrows(CudaTimeoutException.class, () -> s.synchronize(Duration.ofMillis(50)));
            assertTrue(System.nanoTime() - t0 >= 50_000_000L);
            assertTrue(e.getMessage().contains("CudaStream") && e.getMessage().contains("50 ms")
                    && e.getMessage().contains("cuStreamQuery"), e.getMessage());
            stub.inject("cuStreamQuery", 0, 0);
            s.synchronize(Duration.ofSeconds(1));

            ev.record(s);
            stub.inject("cuEventQuery", 700, 1);
            CudaException failed = assertThrows(CudaException.class, () -> ev.synchronize(Duration.ofSeconds(1)));
            assertEquals(700, failed.result(), "errors other than NOT_READY end the wait at once");
            assertThrows(IllegalArgumentException.class, () -> s.synchronize(-1));
        }
    }

    @Test
    void dmaBufExportCoversWholePagesAndTheFdIsClosedOnce() throws Exception {
        try (DeviceBuffer b = context.allocate(10_000)) {
            long page = LibC.pageSize();
            DmaBuf whole = b.exportDmaBuf();
            Path fdPath = Path.of("/proc/self/fd/" + whole.fd());
            assertTrue(Files.exists(fdPath), "a real fd was returned");
            long start = b.address() & -page;
            assertEquals(b.address() - start, whole.offset());
            assertEquals(10_000, whole.length());
            assertEquals(b.address(), whole.iova());
            assertEquals(0, whole.exportedSize() % page);
            assertTrue(whole.offset() + whole.length() <= whole.exportedSize());
            whole.close();
            whole.close();
            assertFalse(Files.exists(fdPath), "close() closed the fd");
            assertThrows(IllegalStateException.class, whole::fd);

            DeviceBuffer slice = b.slice(5000, 100);
            try (DmaBuf part = slice.exportDmaBuf()) {
                assertEquals(slice.address() - start, part.offset());
                assertEquals(100, part.length());
            }
            stub.inject("cuMemGetHandleForAddressRange", 801, 1);
            CudaException unsupported = assertThrows(CudaException.class, b::exportDmaBuf);
            assertEquals("CUDA_ERROR_NOT_SUPPORTED", unsupported.errorName());
        }
    }

    /**
     * A buffer's asynchronous copy takes a stream of its driver context only: one of another
     * device's context is refused; one of another retain of the same primary context (one
     * CUcontext) serves it (each retain used to count as another context, and the copy was refused).
     */
    @Test
    void aStreamServesTheBuffersOfItsDriverContextOnly() {
        try (CudaContext device1 = Cuda.device(1).retainPrimaryContext();
             CudaContext sameContext = Cuda.device(0).retainPrimaryContext();
             CudaStream foreign = device1.createStream();
             CudaStream stream = sameContext.createStream();
             DeviceBuffer b = context.allocate(64);
             Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(64);
            var e = assertThrows(IllegalArgumentException.class, () -> b.copyToHostAsync(0, host, 0, 64, foreign));
            assertTrue(e.getMessage().contains("belongs to"), e.getMessage());
            assertFalse(context.sameContextAs(device1));
            assertTrue(context.sameContextAs(sameContext));
            b.fill((byte) 7);
            b.copyToHostAsync(0, host, 0, 64, stream);
            stream.synchronize(Duration.ofSeconds(10));
            assertEquals(7, host.get(ValueLayout.JAVA_BYTE, 63));
        }
    }

    /**
     * An interrupted thread's bounded wait parks between queries as any wait does (a park with
     * the interrupt set returned at once, so the wait spun on the query to its deadline), and
     * the interrupt is still set when it ends.
     */
    @Test
    void anInterruptedWaitDoesNotSpinOnTheQuery() {
        try (CudaStream stream = context.createStream(); DeviceBuffer b = context.allocate(64)) {
            stub.timing(900_000, false);
            try {
                b.fillAsync((byte) 1, stream);
                long before = stub.calls("cuStreamQuery");
                Thread.currentThread().interrupt();
                assertThrows(CudaTimeoutException.class, () -> stream.synchronize(Duration.ofMillis(300)));
                assertTrue(Thread.interrupted(), "the interrupt is the caller's again");
                long queries = stub.calls("cuStreamQuery") - before;
                // 300 ms of 50 us parks is some 6,000 queries; spinning made hundreds of thousands
                assertTrue(queries < 30_000, queries + " queries in 300 ms");
                stream.synchronize(Duration.ofSeconds(10));
            } finally {
                stub.timing(0, false);
            }
        }
    }

    /**
     * A buffer closed on one thread while another fills it in a loop: each fill either ran before
     * the free or fails as closed, never reaching the driver with the freed address (which the
     * stub answers with CUDA_ERROR_INVALID_VALUE, as a real driver may reuse the address).
     */
    @Test
    void aCloseOnAnotherThreadNeverLetsACallReachFreedMemory() throws Exception {
        for (int i = 0; i < 300; i++) {
            DeviceBuffer b = context.allocate(1 << 16);
            AtomicReference<Throwable> ended = new AtomicReference<>();
            java.util.concurrent.CountDownLatch filling = new java.util.concurrent.CountDownLatch(1);
            Thread filler = Thread.ofPlatform().start(() -> {
                try {
                    b.fill((byte) 1);
                    filling.countDown();
                    while (true) {
                        b.fill((byte) 1);
                    }
                } catch (Throwable t) {
                    ended.set(t);
                    filling.countDown();
                }
            });
            filling.await();
            b.close();
            filler.join(10_000);
            Throwable t = ended.get();
            assertFalse(t instanceof CudaException, "iteration " + i + ": " + t);
            assertTrue(t instanceof IllegalStateException, "iteration " + i + ": " + t);
        }
    }
}

package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.ResourceClosedException;
import io.rdma4j.verbs.ffi.ibv_context;
import io.rdma4j.verbs.ffi.ibv_context_ops;
import io.rdma4j.verbs.ffi.ibv_qp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

/**
 * Closing a verbs object while another thread is inside a native call with it, without a device:
 * the provider's post_recv is libc's nanosleep, whose first argument (the QP) points at a timespec,
 * so a post stays inside a real downcall for a known time. A close in that time must not destroy
 * the QP under the call (on a device: a use after free in the provider, a crash of the JVM).
 */
class ClosingDuringANativeCallTest {
    private static final long SLEEP_NANOS = 1_000_000L;
    private static final long LONG_SLEEP_SECONDS = 3;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void freeFakes() {
        arena.close();
    }

    /** A context whose four data-path operations are nanosleep(first argument, second argument). */
    private DataPathOps sleepingOps() {
        MemorySegment nanosleep = Linker.nativeLinker().defaultLookup().find("nanosleep").orElseThrow();
        MemorySegment context = arena.allocate(ibv_context.layout());
        MemorySegment ops = ibv_context.ops(context);
        ibv_context_ops.post_send(ops, nanosleep);
        ibv_context_ops.post_recv(ops, nanosleep);
        ibv_context_ops.poll_cq(ops, nanosleep);
        ibv_context_ops.req_notify_cq(ops, nanosleep);
        return new DataPathOps(context, "fake");
    }

    /** A zeroed ibv_qp that starts with a timespec of {@link #SLEEP_NANOS}: what nanosleep reads. */
    private MemorySegment sleepingQp() {
        MemorySegment qp = arena.allocate(ibv_qp.layout());
        qp.set(JAVA_LONG, 0, 0);
        qp.set(JAVA_LONG, 8, SLEEP_NANOS);
        ibv_qp.qp_num(qp, 77);
        return qp;
    }

    @Test
    void aQueuePairClosedDuringAPostStaysOpenUntilThePostReturned() throws Exception {
        AtomicLong destroyedAt = new AtomicLong();
        AtomicInteger destroys = new AtomicInteger();
        MemorySegment sleep = sleepingQp();
        QueuePair qp = new QueuePair("RC QueuePair 77 (test)", new NativeResource[0], sleep, QpType.RC,
                new QpCapabilities(4, 4, 1, 1, 0), sleepingOps(), (attr, mask) -> 0, () -> {
                    destroyedAt.set(System.nanoTime());
                    destroys.incrementAndGet();
                    return 0;
                });
        qp.init(RcParams.builder().port(1).build());
        RecvWorkRequests wrs = new RecvWorkRequests(1, 1);
        wrs.add(1);
        qp.postRecv(wrs); // the downcall linked and run once (SLEEP_NANOS), so the timed one starts at once
        sleep.set(JAVA_LONG, 0, LONG_SLEEP_SECONDS);
        sleep.set(JAVA_LONG, 8, 0);
        CountDownLatch posting = new CountDownLatch(1);
        AtomicLong postReturnedAt = new AtomicLong();
        AtomicReference<Throwable> postFailure = new AtomicReference<>();
        Thread poster = Thread.ofPlatform().start(() -> {
            posting.countDown();
            try {
                qp.postRecv(wrs); // returns nanosleep's 0
            } catch (Throwable t) {
                postFailure.set(t);
            }
            postReturnedAt.set(System.nanoTime());
        });
        posting.await();
        Thread.sleep(500); // well inside the post's sleep of seconds, even on a slow machine

        IllegalStateException refused = assertThrows(IllegalStateException.class, qp::close);
        assertTrue(refused.getMessage().contains("RC QueuePair 77 (test) is in use by a native call on another thread"),
                refused.getMessage());
        assertFalse(qp.isClosed());
        assertEquals(0, destroys.get(), "the QP was destroyed while a post was inside the provider");

        poster.join(TimeUnit.SECONDS.toMillis(10));
        assertNull(postFailure.get());
        qp.close();
        assertEquals(1, destroys.get());
        assertTrue(destroyedAt.get() > postReturnedAt.get());
        wrs.close();
    }

    @Test
    void aPostAfterCloseFailsInJavaNamingTheQueuePair() {
        AtomicInteger destroys = new AtomicInteger();
        QueuePair qp = new QueuePair("RC QueuePair 77 (test)", new NativeResource[0], sleepingQp(), QpType.RC,
                new QpCapabilities(4, 4, 1, 1, 0), sleepingOps(), (attr, mask) -> 0, () -> {
                    destroys.incrementAndGet();
                    return 0;
                });
        qp.init(RcParams.builder().port(1).build());
        qp.close();
        try (RecvWorkRequests wrs = new RecvWorkRequests(1, 1)) {
            wrs.add(1);
            ResourceClosedException e = assertThrows(ResourceClosedException.class, () -> qp.postRecv(wrs));
            assertEquals("RC QueuePair 77 (test) is closed", e.getMessage());
        }
        assertEquals(1, destroys.get());
    }

    /**
     * The handle itself: a call that got it before the revoke (past its owner's open check) fails
     * in Java, naming the owner, instead of reaching the freed object.
     */
    @Test
    void aCallWithARevokedHandleFailsBeforeReachingNativeCode() throws Throwable {
        MemorySegment timespec = arena.allocate(16);
        timespec.set(JAVA_LONG, 8, 1_000_000L);
        ScopedHandle handle = new ScopedHandle(timespec);
        MethodHandle nanosleep = Linker.nativeLinker().downcallHandle(
                Linker.nativeLinker().defaultLookup().find("nanosleep").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        MemorySegment got = handle.segment();
        assertEquals(0, (int) nanosleep.invokeExact(got, MemorySegment.NULL));
        handle.revoke("CompletionQueue (test)");
        Throwable refused = assertThrows(IllegalStateException.class,
                () -> { int rc = (int) nanosleep.invokeExact(got, MemorySegment.NULL); });
        RuntimeException named = handle.rethrow(refused, "CompletionQueue (test)");
        assertInstanceOf(ResourceClosedException.class, named);
        assertEquals("CompletionQueue (test) is closed", named.getMessage());
        IllegalArgumentException other = new IllegalArgumentException("x");
        assertSame(other, assertThrows(IllegalArgumentException.class, () -> { throw handle.rethrow(other, "y"); }));
    }

    /** An object that counts the frees of its (absent) handle. */
    private static final class Counted extends NativeResource {
        int releases;

        Counted(String description) {
            super(description);
        }

        @Override
        protected void release() {
            releases++;
        }
    }

    /**
     * What a creation reads through a struct (a QP's completion queues) is leased for the call: a
     * close meanwhile frees it only once the lease ended, and a lease on a closed object fails
     * before the call, naming it.
     */
    @Test
    void aLeaseKeepsWhatACallReadsThroughAStructUntilTheCallReturned() {
        Counted cq = new Counted("CompletionQueue (test)");
        CallLease lease = new CallLease("ibv_create_qp (test)", cq, null);
        cq.close();
        assertTrue(cq.isClosed());
        assertEquals(0, cq.releases, "freed while the call that reads it ran");
        lease.close();
        assertEquals(1, cq.releases);
        ResourceClosedException e = assertThrows(ResourceClosedException.class,
                () -> new CallLease("ibv_create_qp (test)", cq));
        assertEquals("CompletionQueue (test) is closed", e.getMessage());
    }
}

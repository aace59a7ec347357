package io.rdma4j.verbs;

import io.rdma4j.verbs.testing.SoftRoce;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.*;

/** rdma_cm between two processes on the Soft-RoCE guest's rxe pair. */
@Tag(SoftRoce.TAG)
class CmSoftRoceTest {

    private static List<String> ips() {
        List<String> devices = SoftRoce.requireDeviceOrSkip();
        Assumptions.assumeTrue(SoftRoce.inGuest(), "needs the addresses scripts/softroce-vm gives its rxe devices");
        String server = devices.size() > 1 ? devices.get(1) : devices.get(0);
        return List.of(SoftRoce.ipv4Address(devices.get(0)), SoftRoce.ipv4Address(server));
    }

    /** The folders/jars the classes come from (the JUnit console launcher's own class path is just its jar). */
    private static String classPathOf(Class<?>... classes) throws Exception {
        StringBuilder cp = new StringBuilder();
        for (Class<?> c : classes) {
            String entry = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            if (cp.indexOf(entry) < 0) {
                cp.append(cp.isEmpty() ? "" : java.io.File.pathSeparator).append(entry);
            }
        }
        return cp.toString();
    }

    @Test
    void connectSendReceiveEchoAndDisconnectBetweenTwoProcesses() throws Exception {
        String serverIp = ips().get(1);
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED"));
        cmd.addAll(SoftRoce.childJvmOptions());
        cmd.addAll(List.of("-cp", classPathOf(CmEchoServer.class, CmId.class, io.rdma4j.nativesupport.NativeResource.class), CmEchoServer.class.getName(), serverIp));
        Process server = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8))) {
            String line = out.readLine();
            assertNotNull(line, "server exited before listening");
            assertTrue(line.startsWith("PORT "), "server said: " + line);
            int port = Integer.parseInt(line.substring(5).trim());

            try (CmId id = CmId.create().resolve(new InetSocketAddress(serverIp, port), 10_000);
                 Arena arena = Arena.ofShared();
                 WorkCompletions wcs = new WorkCompletions(4);
                 RecvWorkRequests r = new RecvWorkRequests(1, 1);
                 SendWorkRequests s = new SendWorkRequests(1, 1)) {
                DeviceContext ctx = id.context();
                ProtectionDomain pd = ctx.allocateProtectionDomain();
                CompletionQueue cq = ctx.createCompletionQueue(8);
                QueuePair qp = id.createQueuePair(pd, cq, cq, new QpCapabilities(4, 4, 1, 1, 0));
                MemorySegment buf = arena.allocate(2L * CmEchoServer.SIZE, 4096);
                MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                for (int i = 0; i < CmEchoServer.SIZE; i++) {
                    buf.set(JAVA_BYTE, i, (byte) (i * 7 + 3));
                }
                r.addSge(r.add(1), mr, CmEchoServer.SIZE, CmEchoServer.SIZE);
                qp.postRecv(r);
                id.connect(CmConnectionParams.defaults(), 30_000);
                assertEquals(QpState.READY_TO_SEND, qp.queryState());
                s.addSge(s.add(2, SendOpcode.SEND, SendFlags.SIGNALED), mr, 0, CmEchoServer.SIZE);
                qp.postSend(s);
                int got = 0;
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (got < 2) {
                    int n = cq.poll(wcs);
                    for (int i = 0; i < n; i++) {
                        wcs.checkSuccess(i, "echo exchange");
                    }
                    got += n;
                    assertTrue(System.nanoTime() < deadline, "send + echo completions: " + got + " of 2");
                }
                assertEquals(-1, MemorySegment.mismatch(buf, 0, CmEchoServer.SIZE, buf, CmEchoServer.SIZE,
                        2L * CmEchoServer.SIZE), "echo equals what was sent");
                id.disconnect(30_000);
                qp.close();
                mr.close();
                cq.close();
                pd.close();
            }
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "server did not exit after the disconnect");
            String rest = String.join("\n", out.lines().toList());
            assertEquals(0, server.exitValue(), "server output:\n" + rest);
            assertTrue(rest.contains("DONE"), rest);
        } finally {
            server.destroyForcibly();
        }
    }

    @Test
    void connectingToAPortWithoutListenerFailsWithinItsTimeout() {
        String serverIp = ips().get(1);
        long timeoutMs = 5_000;
        try (CmId id = CmId.create().resolve(new InetSocketAddress(serverIp, 4791 + 7), 10_000)) {
            DeviceContext ctx = id.context();
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionQueue cq = ctx.createCompletionQueue(4);
            id.createQueuePair(pd, cq, cq, new QpCapabilities(1, 1, 1, 1, 0));
            long start = System.nanoTime();
            VerbsException e = assertThrows(VerbsException.class,
                    () -> id.connect(CmConnectionParams.defaults(), timeoutMs));
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(elapsedMs < timeoutMs + 2_000, "gave up after " + elapsedMs + " ms");
            assertTrue(e.getMessage().contains("connection to /" + serverIp), e.getMessage());
        }
    }

    /**
     * An id whose lent device context is in a native call on another thread refuses to close and
     * stays open, and closing it again once that call returned destroys both (marked closed at
     * the refusal, it kept the context as an open child and never destroyed the id). The call is
     * libc's poll(context, 0, ms): no descriptor read, only the context's segment held for its
     * length, as a provider call on the context holds it.
     */
    @Test
    void anIdWhoseLentContextIsInACallStaysOpenAndClosesAgainAfterIt() throws Throwable {
        String serverIp = ips().get(1);
        Linker linker = Linker.nativeLinker();
        MethodHandle poll = linker.downcallHandle(linker.defaultLookup().find("poll").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        // the first resolution of a boot took 25-30 s in the guest (why was not measured)
        CmId id = CmId.create().resolve(new InetSocketAddress(serverIp, 4791 + 7), 60_000);
        DeviceContext ctx = id.context();
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try {
            int none = (int) poll.invokeExact(ctx.segment(), 0L, 0); // linked once, so the timed call starts at once
            assertEquals(0, none);
            CountDownLatch calling = new CountDownLatch(1);
            Future<Integer> call = caller.submit(() -> {
                calling.countDown();
                try {
                    return (int) poll.invokeExact(ctx.segment(), 0L, 3_000);
                } catch (Throwable t) {
                    throw new IllegalStateException(t);
                }
            });
            calling.await();
            Thread.sleep(500); // inside poll by now
            IllegalStateException refused = assertThrows(IllegalStateException.class, id::close);
            assertTrue(refused.getMessage().contains("in use by a native call"), refused.getMessage());
            assertFalse(id.isClosed(), "the id stays open while its context is in use");
            assertFalse(ctx.isClosed());
            assertEquals(0, call.get(10, TimeUnit.SECONDS), "poll of no descriptors times out with 0");
            id.close();
            assertTrue(ctx.isReleased());
            assertTrue(id.isReleased(), "the second close destroyed the id");
        } finally {
            caller.shutdownNow();
            id.close();
        }
    }

    /**
     * Closing a listener from another thread ends that thread's wait for a connection request at
     * once (the close used to destroy the channel under the waiter, which polled on to its
     * timeout and then read the freed channel), releases the listener and frees its port.
     */
    @Test
    void closingAListenerEndsAWaitForAConnectionRequestAndFreesItsPort() throws Exception {
        String ip = ips().get(1);
        CmId listener = CmId.create().listen(new InetSocketAddress(ip, 0), 4);
        int port = listener.localPort();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<CmId> waiting = pool.submit(() -> listener.awaitConnectRequest(60_000));
            Thread.sleep(300);
            long start = System.nanoTime();
            listener.close();
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertInstanceOf(io.rdma4j.nativesupport.ResourceClosedException.class, e.getCause(), String.valueOf(e.getCause()));
            assertTrue(ms < 5_000, "the wait ended " + ms + " ms after the close");
            assertTrue(listener.isReleased());
            try (CmId again = CmId.create().listen(new InetSocketAddress(ip, port), 4)) {
                assertEquals(port, again.localPort());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}

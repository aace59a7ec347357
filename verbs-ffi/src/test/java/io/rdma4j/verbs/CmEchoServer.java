package io.rdma4j.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

/**
 * The server process of {@link CmSoftRoceTest}: accepts one rdma_cm connection on the given
 * address, receives one message, sends it back, and waits for the client to disconnect.
 * Prints "PORT n" once listening. Exit status 0 on success.
 */
public final class CmEchoServer {
    static final int SIZE = 4096;
    static final long TIMEOUT_MS = 60_000;

    private CmEchoServer() {
    }

    public static void main(String[] args) {
        try (CmId listener = CmId.create().listen(new InetSocketAddress(args[0], 0), 4);
             Arena arena = Arena.ofShared();
             WorkCompletions wcs = new WorkCompletions(4);
             RecvWorkRequests r = new RecvWorkRequests(1, 1);
             SendWorkRequests s = new SendWorkRequests(1, 1)) {
            System.out.println("PORT " + listener.localPort());
            System.out.flush();
            try (CmId conn = listener.awaitConnectRequest(TIMEOUT_MS)) {
                DeviceContext ctx = conn.context();
                try (ProtectionDomain pd = ctx.allocateProtectionDomain();
                     CompletionQueue cq = ctx.createCompletionQueue(8)) {
                    QueuePair qp = conn.createQueuePair(pd, cq, cq, new QpCapabilities(4, 4, 1, 1, 0));
                    MemorySegment buf = arena.allocate(SIZE, 4096);
                    MemoryRegion mr = pd.register(buf, Access.LOCAL_WRITE);
                    r.addSge(r.add(1), mr, 0, SIZE);
                    qp.postRecv(r);
                    conn.accept(CmConnectionParams.defaults(), TIMEOUT_MS);
                    awaitOne(cq, wcs, "the client's message");
                    s.addSge(s.add(2, SendOpcode.SEND, SendFlags.SIGNALED), mr, 0, wcs.byteLen(0));
                    qp.postSend(s);
                    awaitOne(cq, wcs, "the echo's send completion");
                    conn.awaitDisconnect(TIMEOUT_MS);
                    qp.close();
                    mr.close();
                }
            }
            System.out.println("DONE");
        }
    }

    static void awaitOne(CompletionQueue cq, WorkCompletions wcs, String what) {
        long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
        while (cq.poll(wcs) == 0) {
            if (System.nanoTime() > deadline) {
                throw new VerbsTimeoutException(what, TIMEOUT_MS);
            }
        }
        wcs.checkSuccess(0, what);
    }
}

package io.rdma4j.transport.tcp;

import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.TransportTimeoutException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterTry;
import net.jqwik.api.lifecycle.BeforeTry;

import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Property: a peer past the TCP provider's handshake sends a few random frames (any type, tag,
 * fields and payload). Whatever they are, no byte of the registered region changes, the process
 * goes on, and a frame that is rejected fails the connection with an error naming the peer
 * (never a timeout, never an exception of another kind).
 */
class TcpFrameFuzzTest {
    private static final long WAIT = TimeUnit.MILLISECONDS.toNanos(300);
    private HostilePeer p;

    @BeforeTry
    void start() throws Exception {
        p = new HostilePeer();
        TcpEndpoint e = p.endpoint();
        p.connectAsRankZero(e.secretHigh(), e.secretLow());
    }

    @AfterTry
    void stop() throws Exception {
        p.close();
    }

    /** 1-4 frames, each as {type, tag, a, b, c, d, payload bytes}. */
    @Provide
    Arbitrary<List<long[]>> frames() {
        Arbitrary<Long> type = Arbitraries.oneOf(Arbitraries.longs().between(Frame.HELLO, Frame.READ_ERR),
                Arbitraries.longs().between(-2, 1000));
        Arbitrary<Long> field = Arbitraries.oneOf(Arbitraries.longs().between(-2, 5000), Arbitraries.longs());
        Arbitrary<Long> payload = Arbitraries.longs().between(0, 256);
        Arbitrary<long[]> frame = net.jqwik.api.Combinators.combine(List.of(type, field, field, field, field, field,
                payload)).as(values -> values.stream().mapToLong(Long::longValue).toArray());
        return frame.list().ofMinSize(1).ofMaxSize(4);
    }

    @Property(tries = 60)
    void randomFramesNeverWriteOutsideARegionAndFailOnlyNamingThePeer(@ForAll("frames") List<long[]> frames)
            throws Exception {
        TcpTransport victim = p.victim;
        RegisteredBuffer region = p.region;
        var c = victim.connection(0);
        RegisteredBuffer other = victim.allocate(64);
        long pending = c.irecv(other, 0, 64, 12345);
        try {
            for (long[] f : frames) {
                p.send((int) f[0], (int) f[1], f[2], f[3], f[4], f[5], (int) f[6]);
            }
        } catch (java.io.IOException cutOff) {
            // the victim closed the connection on an earlier frame of this try
        }
        try {
            victim.await(pending, WAIT);
            // a random frame completed the receive: only DATA for its id could, which random ids miss
            fail("the receive completed from random frames");
        } catch (TransportTimeoutException stillPending) {
            // every frame was harmless (e.g. a clear-to-send for a tag nobody sends)
        } catch (TransportException rejected) {
            assertEquals(0, rejected.peer(), rejected.getMessage());
            assertTrue(rejected.getMessage().contains("peer 0"), rejected.getMessage());
        }
        for (long i = 0; i < region.segment().byteSize(); i++) {
            assertEquals((byte) 0x5A, region.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of the region");
        }
    }
}

package io.rdma4j.bench.jmh;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Bytes processed, reported by JMH next to the op rate as "bytes" in ops/s, i.e. bytes per
 * second (divide by 1e9 for GB/s): bandwidth benchmarks add their payload per call.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.OPERATIONS)
public class ByteCounter {
    public long bytes;

    @Setup(Level.Iteration)
    public void reset() {
        bytes = 0;
    }
}

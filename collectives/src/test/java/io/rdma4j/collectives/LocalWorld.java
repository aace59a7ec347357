package io.rdma4j.collectives;

import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;

import java.time.Duration;
import java.util.function.BiFunction;

/** A world of ranks as threads of this JVM over one provider, each with its world communicator. */
final class LocalWorld {
    /** One rank's part. */
    interface Rank {
        void run(int rank, Communicator comm) throws Exception;
    }

    private LocalWorld() {
    }

    /** {@link #run} over TCP. */
    static void tcp(int ranks, Duration timeout, Rank body) throws Exception {
        run(TransportConfig.Provider.TCP, ranks, timeout, body);
    }

    /** Runs {@code body} on each of {@code ranks} ranks, with the communicators' timeout {@code timeout}. */
    static void run(TransportConfig.Provider provider, int ranks, Duration timeout, Rank body) throws Exception {
        run(provider, ranks, timeout, (rank, t) -> t, body);
    }

    /** {@link #run} with each rank's transport replaced by {@code transport.apply(rank, itsTransport)}. */
    static void run(TransportConfig.Provider provider, int ranks, Duration timeout,
                    BiFunction<Integer, Transport, Transport> transport, Rank body) throws Exception {
        try (LocalGroup g = LocalGroup.start(ranks, LocalGroup.config(provider))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(transport.apply(rank, t)).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(timeout)).build()) {
                    body.run(rank, c);
                }
            });
        }
    }
}

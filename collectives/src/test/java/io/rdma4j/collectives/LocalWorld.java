package io.rdma4j.collectives;

import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.testing.LocalGroup;

import java.time.Duration;

/** A world of ranks as threads of this JVM over TCP, each with its world communicator. */
final class TcpWorld {
    /** One rank's part. */
    interface Rank {
        void run(int rank, Communicator comm) throws Exception;
    }

    private TcpWorld() {
    }

    /** Runs {@code body} on each of {@code ranks} ranks, with the communicators' timeout {@code timeout}. */
    static void run(int ranks, Duration timeout, Rank body) throws Exception {
        try (LocalGroup g = LocalGroup.start(ranks, LocalGroup.config(TransportConfig.Provider.TCP))) {
            g.run(Duration.ofMinutes(1), (rank, t, store) -> {
                try (Communicator c = Communicator.builder().transport(t).store(store)
                        .options(CollectiveOptions.defaults().withTimeout(timeout)).build()) {
                    body.run(rank, c);
                }
            });
        }
    }
}

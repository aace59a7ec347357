package io.rdma4j.bench.launch;

import io.rdma4j.transport.bootstrap.TcpStore;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A rank for {@link LocalJobTest}: checks the env:// contract by meeting the other ranks in the
 * launcher's store, prints what it saw, then behaves as told by {@code args[0]}: "ok" exits 0,
 * "fail:R" makes rank R exit 3 and every other rank hang (so the launcher must stop them).
 */
public final class ScriptedRank {
    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv("RANK"));
        int size = Integer.parseInt(System.getenv("WORLD_SIZE"));
        try (TcpStore store = TcpStore.fromEnvironment()) {
            store.set("hello/" + rank, Integer.toString(rank).getBytes(StandardCharsets.UTF_8));
            for (int r = 0; r < size; r++) {
                store.get("hello/" + r, Duration.ofSeconds(30));
            }
        }
        System.out.println("rank=" + rank + " size=" + size + " local=" + System.getenv("LOCAL_RANK") + "/"
                + System.getenv("LOCAL_WORLD_SIZE") + " master=" + System.getenv("MASTER_ADDR") + " met all");
        System.out.flush();
        if (args[0].startsWith("fail:")) {
            if (rank == Integer.parseInt(args[0].substring(5))) {
                System.exit(ExitStatus.FAILED);
            }
            Thread.sleep(120_000);
        }
        System.exit(0);
    }
}

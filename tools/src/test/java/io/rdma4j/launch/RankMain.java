package io.rdma4j.launch;

import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.bootstrap.TcpStore;

import java.time.Duration;

/**
 * A rank for the launcher tests. Arguments: {@code codes=a,b,c} (rank r exits with the r-th code;
 * a non-zero one after {@code failAfterMs}), {@code sleepMs=N} (ranks exiting 0 first sleep N ms,
 * then print "finished"), {@code stubborn=R} (rank R ignores SIGTERM: its shutdown hook never
 * returns, so only SIGKILL ends it), {@code failAfterStubborn} (the failing rank fails only once
 * the stubborn one has its hook), {@code store} (meet the other ranks in the launcher's store).
 */
public final class RankMain {
    private RankMain() {
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(System.getenv("RANK"));
        int size = Integer.parseInt(System.getenv("WORLD_SIZE"));
        int code = 0;
        long sleepMs = 0;
        long failAfterMs = 200;
        boolean store = false;
        boolean failAfterStubborn = false;
        for (String a : args) {
            if (a.startsWith("codes=")) {
                code = Integer.parseInt(a.substring(6).split(",")[rank]);
            } else if (a.startsWith("sleepMs=")) {
                sleepMs = Long.parseLong(a.substring(8));
            } else if (a.startsWith("failAfterMs=")) {
                failAfterMs = Long.parseLong(a.substring(12));
            } else if (a.startsWith("stubborn=") && Integer.parseInt(a.substring(9)) == rank) {
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        Thread.sleep(600_000);
                    } catch (InterruptedException ignored) {
                        // never interrupted
                    }
                }));
                // only now may the failing rank fail: a SIGTERM before the hook would just end this JVM
                try (Store s = TcpStore.fromEnvironment()) {
                    s.set("stubborn-ready", new byte[] {1});
                }
            } else if (a.equals("failAfterStubborn")) {
                failAfterStubborn = true;
            } else if (a.equals("store")) {
                store = true;
            }
        }
        System.out.println("env RANK=" + rank + " WORLD_SIZE=" + size + " LOCAL_RANK=" + System.getenv("LOCAL_RANK")
                + " LOCAL_WORLD_SIZE=" + System.getenv("LOCAL_WORLD_SIZE") + " NODE_RANK=" + System.getenv("NODE_RANK"));
        System.err.println("a line on stderr from rank " + rank);
        if (store) {
            try (Store s = TcpStore.fromEnvironment()) {
                long arrived = s.add("arrived", 1);
                if (arrived == size) {
                    s.set("all-arrived", new byte[] {1});
                }
                s.get("all-arrived", Duration.ofSeconds(30));
                System.out.println("met all " + size + " ranks in the store");
            }
        }
        if (code != 0) {
            if (failAfterStubborn) {
                try (Store s = TcpStore.fromEnvironment()) {
                    s.get("stubborn-ready", Duration.ofSeconds(60));
                }
            }
            Thread.sleep(failAfterMs);
            System.out.println("exiting with " + code);
            System.exit(code);
        }
        if (sleepMs > 0) {
            Thread.sleep(sleepMs);
        }
        System.out.println("finished");
    }
}

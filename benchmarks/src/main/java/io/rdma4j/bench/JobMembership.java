package io.rdma4j.bench;

import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.bootstrap.Store;

import java.io.PrintStream;
import java.util.Map;

/**
 * This process as one rank of the job its environment describes: the job's store and the world
 * communicator, or, when it could not join, the exit status to end with. What keeps a rank from
 * joining is the user's set-up (no store at MASTER_ADDR, no RDMA device, a bad setting), so it is
 * reported in one line, not with a stack trace; a failure after that is the tool's or the
 * library's, and the tools print it whole.
 */
record JobMembership(Store store, Communicator comm, int failedStatus) {

    /** Whether the rank joined (else {@link #failedStatus} says how to exit). */
    boolean joined() {
        return comm != null;
    }

    /** Joins the job, or prints why it could not (one line, naming the rank). */
    static JobMembership join(String tool, Map<String, String> env, PrintStream err) {
        String rank = env.getOrDefault("RANK", "?");
        Store store;
        try {
            store = Communicator.bootstrapStore(env);
        } catch (IllegalArgumentException bad) { // a malformed setting: MASTER_PORT, RDMA4J_TIMEOUT_MS, ...
            err.println(tool + ": " + bad.getMessage());
            return new JobMembership(null, null, ExitStatus.USAGE);
        } catch (RuntimeException e) {
            err.println(tool + ": rank " + rank + " could not reach the job's store: " + describe(e));
            return new JobMembership(null, null, ExitStatus.FAILED);
        }
        try {
            return new JobMembership(store, Communicator.fromEnvironment(env, store), ExitStatus.OK);
        } catch (IllegalArgumentException bad) {
            store.close();
            err.println(tool + ": " + bad.getMessage());
            return new JobMembership(null, null, ExitStatus.USAGE);
        } catch (RuntimeException e) {
            store.close();
            err.println(tool + ": rank " + rank + " could not join the job: " + describe(e));
            return new JobMembership(null, null, ExitStatus.FAILED);
        } catch (Error e) {
            store.close();
            throw e;
        }
    }

    /** The message and its causes' on one line. */
    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append(" (caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage()).append(')');
        }
        return b.toString();
    }
}

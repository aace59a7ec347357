package io.rdma4j.bench;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.transport.bootstrap.Store;

import java.io.PrintStream;
import java.util.Map;

/**
 * This process as one rank of the job its environment describes: the job's store and the world
 * communicator. What keeps a rank from joining is the user's set-up (no store at MASTER_ADDR, no
 * RDMA device, a bad setting), so it is reported in one line, not with a stack trace; a failure
 * after that is the tool's or the library's, and the tools print it whole.
 */
record JobMembership(Store store, Communicator comm) {

    /** Joins the job, or prints why it could not (one line, naming the rank) and returns null. */
    static JobMembership join(String tool, Map<String, String> env, PrintStream err) {
        String rank = env.getOrDefault("RANK", "?");
        Store store;
        try {
            store = Communicator.bootstrapStore(env);
        } catch (RuntimeException e) {
            err.println(tool + ": rank " + rank + " could not reach the job's store: " + describe(e));
            return null;
        }
        try {
            return new JobMembership(store, Communicator.fromEnvironment(env, store));
        } catch (RuntimeException e) {
            err.println(tool + ": rank " + rank + " could not join the job: " + describe(e));
            store.close();
            return null;
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

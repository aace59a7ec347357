package io.rdma4j.transport.internal;

/** Closing what is being given up, where a failure to close has nobody left to tell. */
public final class Closing {
    private Closing() {
    }

    public static void quietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // given up either way
        }
    }
}

package io.rdma4j.bench.verbsperf;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * The TCP connection over which server and client exchange their {@link PeerInfo}, keep in
 * step between message sizes and pass results (perftest's "Data ex. method : Ethernet").
 * Every wait is bounded by the timeout and its error names the peer and what was awaited.
 */
final class OobChannel implements AutoCloseable {
    private static final long CONNECT_RETRY_MILLIS = 100;

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final String peer;
    private final int timeoutSeconds;

    private OobChannel(Socket socket, int timeoutSeconds) throws IOException {
        this.socket = socket;
        this.timeoutSeconds = timeoutSeconds;
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(Math.toIntExact(timeoutSeconds * 1000L));
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        this.peer = socket.getRemoteSocketAddress().toString();
    }

    /** Server side: waits for one client on {@code port}. */
    static OobChannel accept(int port, int timeoutSeconds) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(port));
            server.setSoTimeout(Math.toIntExact(timeoutSeconds * 1000L));
            try {
                return new OobChannel(server.accept(), timeoutSeconds);
            } catch (SocketTimeoutException e) {
                throw new IOException("no verbs-perf client connected to TCP port " + port + " within "
                        + timeoutSeconds + " s", e);
            }
        }
    }

    /**
     * Client side: connects to the server, retrying while nothing listens yet (the server may
     * still be starting), until the timeout. The first refusal is told on {@code notices}, so
     * that a client whose server is missing does not wait out the timeout without a word.
     */
    static OobChannel connect(String host, int port, int timeoutSeconds, PrintStream notices) throws IOException {
        long deadline = System.nanoTime() + timeoutSeconds * 1_000_000_000L;
        boolean told = false;
        while (true) {
            Socket s = new Socket();
            try {
                long left = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
                s.connect(new InetSocketAddress(host, port), (int) Math.min(left, Integer.MAX_VALUE));
                return new OobChannel(s, timeoutSeconds);
            } catch (ConnectException | NoRouteToHostException | SocketTimeoutException e) {
                s.close();
                if (System.nanoTime() >= deadline) {
                    throw new IOException("no verbs-perf server listening on " + host + ":" + port + " within "
                            + timeoutSeconds + " s (" + e.getMessage() + ")", e);
                }
                if (!told) {
                    notices.println("verbs-perf: no server on " + host + ":" + port + " yet (" + e.getMessage()
                            + "); retrying for up to " + timeoutSeconds + " s (--oob-timeout)");
                    notices.flush();
                    told = true;
                }
                sleep(CONNECT_RETRY_MILLIS);
            } catch (IOException e) {
                s.close();
                throw new IOException("cannot connect to the verbs-perf server " + host + ":" + port + ": "
                        + e.getMessage(), e);
            }
        }
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the verbs-perf server", e);
        }
    }

    String peer() {
        return peer;
    }

    /** Sends this side's information and returns the peer's. */
    PeerInfo exchange(PeerInfo mine) throws IOException {
        mine.write(out);
        out.flush();
        PeerInfo theirs = awaiting("its QP information", () -> PeerInfo.read(in, peer));
        if (!theirs.fingerprint().equals(mine.fingerprint())) {
            throw new IOException("the peer " + peer + " runs '" + theirs.fingerprint() + "' but this side '"
                    + mine.fingerprint() + "': give both sides the same test options");
        }
        return theirs;
    }

    /** Returns once the peer has reached the same point (the barrier named {@code what}). */
    void barrier(String what) throws IOException {
        out.writeUTF(what);
        out.flush();
        String theirs = awaiting("the '" + what + "' step", in::readUTF);
        if (!theirs.equals(what)) {
            throw new IOException("out of step with " + peer + ": this side is at '" + what + "', the peer at '"
                    + theirs + "'");
        }
    }

    void sendValues(double... values) throws IOException {
        out.writeInt(values.length);
        for (double v : values) {
            out.writeDouble(v);
        }
        out.flush();
    }

    double[] receiveValues(String what) throws IOException {
        return awaiting(what, () -> {
            int n = in.readInt();
            if (n < 0 || n > 64) {
                throw new IOException("corrupt result record from " + peer + " (" + n + " values)");
            }
            double[] v = new double[n];
            for (int i = 0; i < n; i++) {
                v[i] = in.readDouble();
            }
            return v;
        });
    }

    private interface Read<T> {
        T read() throws IOException;
    }

    private <T> T awaiting(String what, Read<T> read) throws IOException {
        try {
            return read.read();
        } catch (SocketTimeoutException e) {
            throw new IOException("timed out after " + timeoutSeconds + " s waiting for " + what + " from " + peer, e);
        } catch (java.io.EOFException e) {
            throw new IOException(peer + " closed the connection while this side waited for " + what, e);
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}

package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What every {@link Store} must do; {@link TcpStoreTest} and {@link FileStoreTest} run it. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
abstract class StoreContractTest {

    /** A fresh client of one fresh store; calling it again gives another client of the same store. */
    protected abstract Store newClient();

    protected abstract void closeStore();

    private final List<Store> clients = new ArrayList<>();

    Store client() {
        Store s = newClient();
        clients.add(s);
        return s;
    }

    @BeforeEach
    void noop() {
    }

    @AfterEach
    void closeClients() {
        clients.forEach(Store::close);
        closeStore();
    }

    @Test
    void setThenGetReturnsTheValueToAnotherClient() {
        Store a = client();
        Store b = client();
        byte[] value = {1, 2, 3, 0, -1};
        a.set("rank/0/endpoint", value);
        assertArrayEquals(value, b.get("rank/0/endpoint", Duration.ofSeconds(1)));
        a.set("rank/0/endpoint", new byte[0]);
        assertArrayEquals(new byte[0], b.get("rank/0/endpoint", Duration.ofSeconds(1)), "set overwrites; empty values are values");
    }

    @Test
    void getWaitsForALaterSet() throws Exception {
        Store a = client();
        Store b = client();
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            Future<byte[]> got = ex.submit(() -> b.get("late key", Duration.ofSeconds(10)));
            Thread.sleep(200);
            assertFalse(got.isDone(), "get must wait for the key");
            a.set("late key", "v".getBytes(StandardCharsets.UTF_8));
            assertEquals("v", new String(got.get(10, TimeUnit.SECONDS), StandardCharsets.UTF_8));
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void aGetThatMayWaitForGoodReturnsAValueThatIsSet() {
        Store a = client();
        a.set("forever/k", new byte[] {7});
        // ChronoUnit.FOREVER: too long to count in nanoseconds
        assertArrayEquals(new byte[] {7}, a.get("forever/k", java.time.temporal.ChronoUnit.FOREVER.getDuration()));
        assertArrayEquals(new byte[] {7}, a.get("forever/k", Duration.ofSeconds(-1)));
    }

    @Test
    void aGetThatTimesOutNamesItsKey() {
        Store a = client();
        long start = System.nanoTime();
        TransportTimeoutException e = assertThrows(TransportTimeoutException.class,
                () -> a.get("never/set/key", Duration.ofMillis(300)));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(e.getMessage().contains("never/set/key"), e.getMessage());
        assertTrue(ms >= 250 && ms < 5000, "waited " + ms + " ms");
    }

    @Test
    void addIsAtomicAcrossClientsAndReadableAsText() throws Exception {
        int clientsCount = 4;
        int adds = 50;
        ExecutorService ex = Executors.newFixedThreadPool(clientsCount);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < clientsCount; i++) {
                Store s = client();
                fs.add(ex.submit(() -> {
                    for (int j = 0; j < adds; j++) {
                        s.add("counter", 1);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get(20, TimeUnit.SECONDS);
            }
        } finally {
            ex.shutdownNow();
        }
        Store s = client();
        assertEquals(clientsCount * adds + 10, s.add("counter", 10));
        assertEquals(Long.toString(clientsCount * adds + 10), new String(s.get("counter", Duration.ZERO), StandardCharsets.UTF_8));
        assertEquals(-5, s.add("fresh counter", -5), "an absent counter starts at 0");
    }

    @Test
    void deleteRemovesAndReportsWhetherTheKeyExisted() {
        Store s = client();
        s.set("k", new byte[] {1});
        assertTrue(s.delete("k"));
        assertFalse(s.delete("k"));
        assertThrows(TransportTimeoutException.class, () -> s.get("k", Duration.ofMillis(50)));
    }

    @Test
    void scopedViewsDoNotSeeEachOthersKeys() {
        Store s = client();
        Store a = s.scoped("job-a");
        Store b = s.scoped("job-b");
        a.set("x", new byte[] {1});
        b.set("x", new byte[] {2});
        assertArrayEquals(new byte[] {1}, a.get("x", Duration.ZERO));
        assertArrayEquals(new byte[] {2}, s.get("job-b/x", Duration.ZERO));
        a.close();
        assertArrayEquals(new byte[] {2}, b.get("x", Duration.ZERO), "closing a view leaves the store open");
    }

    @Test
    void keysWithAnyCharactersAndLargeValuesRoundTrip() {
        Store s = client();
        String key = "a/b c:d%e\u00e9\u4e2d";
        byte[] big = new byte[3 << 20];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 7);
        }
        s.set(key, big);
        assertArrayEquals(big, client().get(key, Duration.ofSeconds(5)));
        assertThrows(IllegalArgumentException.class, () -> s.set("", new byte[0]));
    }
}
